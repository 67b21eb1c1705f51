// Token usage in one camelCase shape for every protocol: reading a child's usage object, whatever its key style, and summing.
import type { JsonObject, JsonValue } from './types.js';

/**
 * Token usage: a turn's (`turn-complete`, `llm-end`) or the run's (`result`, `outcome.usage`). Children
 * spell usage their own way (Fen `input`/`cache-read`/`cost.total`, HEP `input`/`cost`, fuseraft
 * `inputTokens`/`cachedInputTokens`, others `input_tokens`/`prompt_tokens`): each known spelling lands in
 * one field here. A field is present only when the child reported it.
 */
export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  /** Input tokens read from the provider's prompt cache. */
  cacheReadTokens?: number;
  /** Input tokens written to the provider's prompt cache. */
  cacheWriteTokens?: number;
  /** The child's own total, when it gave one (not computed: see {@link totalTokens}). */
  totalTokens?: number;
  /** Cost in US dollars (Fen's `cost.total`, HEP's `cost`). */
  costUsd?: number;
  /** Everything else the child put in its usage object, under its own keys (numbers summed like the rest). */
  other?: JsonObject;
}

type NumericField = Exclude<keyof Usage, 'other'>;

/** Known spellings, compared lowercased with `-` and `_` removed. */
const FIELD_OF = new Map<string, NumericField>([
  ['input', 'inputTokens'],
  ['inputtokens', 'inputTokens'],
  ['prompttokens', 'inputTokens'],
  ['output', 'outputTokens'],
  ['outputtokens', 'outputTokens'],
  ['completiontokens', 'outputTokens'],
  ['cacheread', 'cacheReadTokens'],
  ['cachereadtokens', 'cacheReadTokens'],
  ['cachedinputtokens', 'cacheReadTokens'],
  ['cachereadinputtokens', 'cacheReadTokens'],
  ['cachewrite', 'cacheWriteTokens'],
  ['cachewritetokens', 'cacheWriteTokens'],
  ['cachecreationinputtokens', 'cacheWriteTokens'],
  ['total', 'totalTokens'],
  ['totaltokens', 'totalTokens'],
  ['cost', 'costUsd'],
  ['costusd', 'costUsd'],
]);

const NUMERIC_FIELDS: readonly NumericField[] = ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'totalTokens', 'costUsd'];

/**
 * The {@link Usage} of a child's usage object. A known key with a finite number fills its field (a
 * second spelling of the same field adds to it); `cost: {total, ...}` gives `costUsd` from `total` and
 * keeps its other keys under `other.cost`; `null` (a count the provider did not report) is left out;
 * anything else is kept under `other`.
 */
export function toUsage(raw: JsonObject): Usage {
  const usage: Usage = {};
  for (const key of Object.keys(raw)) {
    const value = raw[key] as JsonValue;
    if (value === null) continue;
    const field = FIELD_OF.get(key.toLowerCase().replace(/[-_]/g, ''));
    if (field !== undefined && typeof value === 'number' && Number.isFinite(value)) {
      usage[field] = addField(field, usage[field], value);
    } else if (field === 'costUsd' && isObject(value) && typeof value['total'] === 'number' && Number.isFinite(value['total'])) {
      usage.costUsd = addCost(usage.costUsd ?? 0, value['total']);
      const { total: _total, ...rest } = value;
      if (Object.keys(rest).length > 0) setOther(usage, key, rest);
    } else {
      setOther(usage, key, value);
    }
  }
  return usage;
}

/** Adds `usage` into `total` (every field; `other`'s numbers recursively, its other values kept from the first). */
export function addUsage(total: Usage, usage: Usage): Usage {
  for (const field of NUMERIC_FIELDS) {
    const value = usage[field];
    if (value !== undefined) total[field] = addField(field, total[field], value);
  }
  if (usage.other !== undefined) addNumbers((total.other ??= {}), usage.other);
  return total;
}

/**
 * A sum of dollar amounts without binary floating point's noise in its last digits (0.1 + 0.2 is 0.3, not
 * 0.30000000000000004): rounded to 15 significant digits, more than any price or total has.
 */
export function addCost(a: number, b: number): number {
  return Number((a + b).toPrecision(15));
}

function addField(field: NumericField, total: number | undefined, value: number): number {
  return field === 'costUsd' ? addCost(total ?? 0, value) : (total ?? 0) + value;
}

/** Input + output tokens (or the child's own total when it gave only that); undefined when the usage says neither. */
export function totalTokens(usage: Usage | undefined): number | undefined {
  if (usage === undefined) return undefined;
  if (usage.inputTokens === undefined && usage.outputTokens === undefined) return usage.totalTokens;
  return (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
}

function setOther(usage: Usage, key: string, value: JsonValue): void {
  // A child may send this key: keep it as data, never as the object's prototype.
  Object.defineProperty((usage.other ??= {}), key, { value, enumerable: true, writable: true, configurable: true });
}

function addNumbers(total: JsonObject, add: JsonObject): void {
  for (const key of Object.keys(add)) {
    const value = add[key] as JsonValue;
    const current = Object.hasOwn(total, key) ? total[key] : undefined;
    if (typeof value === 'number' && Number.isFinite(value)) {
      setKey(total, key, (typeof current === 'number' ? current : 0) + value);
    } else if (isObject(value)) {
      const nested: JsonObject = isObject(current) ? current : {};
      addNumbers(nested, value);
      setKey(total, key, nested);
    } else if (current === undefined) {
      setKey(total, key, value);
    }
  }
}

function setKey(target: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
