// Reads a token count out of a usage object, whichever key style the child used.
import type { JsonObject } from '../wire/index.js';

const TOTAL_KEYS = ['totalTokens', 'total-tokens', 'total_tokens', 'total'];
const PART_KEYS = [
  ['input', 'inputTokens', 'input-tokens', 'input_tokens'],
  ['output', 'outputTokens', 'output-tokens', 'output_tokens'],
];

function numberAt(usage: JsonObject, keys: readonly string[]): number | undefined {
  for (const key of keys) {
    const value = usage[key];
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value;
  }
  return undefined;
}

/** The total tokens of a usage object (its total, or input + output), or undefined when it says neither. */
export function tokensOf(usage: JsonObject | undefined): number | undefined {
  if (usage === undefined) return undefined;
  const total = numberAt(usage, TOTAL_KEYS);
  if (total !== undefined) return total;
  const parts = PART_KEYS.map((keys) => numberAt(usage, keys));
  if (parts.every((part) => part === undefined)) return undefined;
  return parts.reduce<number>((sum, part) => sum + (part ?? 0), 0);
}
