// Converts decoded wire events (kebab-case keys) into the camelCase RunEvent objects users see, unknown fields under `extra`.
import { toUsage } from '../../wire/index.js';
import type { JsonObject, JsonValue, WireEvent } from '../../wire/index.js';
import { EVENT_SCHEMAS } from '../../wire/schema.js';
import type { RunEvent, RunEventExtra } from '../../run/types/index.js';
import { putExtra } from '../extra-fields.js';

const keyCache = new Map<string, string>();

/** Marks, in a remembered key order, a key that is not one of its type's fields. */
const EXTRA = '';

/**
 * One event type's fields: each wire key to its RunEvent name, known from the schema table. It also
 * remembers the keys of the type's last event, in order, with their names (or {@link EXTRA}): events
 * of one type nearly always repeat the same keys in the same order, so most keys are matched by
 * identity with the remembered one (JSON.parse interns keys) instead of a hash lookup; a mismatch
 * falls back to `names` and updates the remembered order.
 */
interface TypeFields {
  readonly names: ReadonlyMap<string, string>;
  readonly order: { keys: string[]; names: string[] };
}

/** The envelope, the same name on every type. */
const ENVELOPE = ['v', 'seq', 'type', 'run'];

function typeFields(keys: readonly string[]): TypeFields {
  const names = new Map<string, string>();
  for (const key of [...ENVELOPE, ...keys]) names.set(key, camelKey(key));
  return { names, order: { keys: [], names: [] } };
}

const FIELDS = new Map<unknown, TypeFields>(
  [...EVENT_SCHEMAS].map(([type, spec]) => [type, typeFields(spec.fields.map((field) => field.key))]),
);

/** `stop-reason` -> `stopReason`, `is-error?` -> `isError`, `final?` -> `final`; other keys stay. */
export function camelKey(key: string): string {
  let converted = keyCache.get(key);
  if (converted === undefined) {
    converted = key.replace(/\?+$/, '').replace(/-+([^-])/g, (_, letter: string) => letter.toUpperCase());
    if (converted === '') converted = key;
    // Bounded: unknown keys come from an untrusted child, so stop caching past a sane number.
    if (keyCache.size < 1024) keyCache.set(key, converted);
  }
  return converted;
}

/**
 * The camelCase copy of one (validated) event. Its type's fields get their camelCase names; `usage`
 * (validated as an object on the types that carry it) becomes subvisor's {@link Usage}; other nested
 * values (arguments, results) are kept as they are. Every other key goes under `extra`, camelCased
 * too, allocated only when there is one: see {@link RunEventExtra} for the rule that keeps two unknown
 * keys from landing on one name.
 */
export function toRunEvent(event: WireEvent): RunEvent {
  const source = event as Record<string, JsonValue>;
  const fields = FIELDS.get(source['type']) ?? ENVELOPE_ONLY;
  const { keys, names } = fields.order;
  const converted: Record<string, unknown> = {};
  let extra: RunEventExtra | undefined;
  let index = 0;
  // for...in over a JSON.parse result sees exactly its own keys, and is faster than Object.keys here.
  for (const key in source) {
    let name: string;
    if (keys[index] === key) {
      name = names[index]!;
    } else {
      name = fields.names.get(key) ?? EXTRA;
      keys[index] = key;
      names[index] = name;
    }
    index++;
    const value = source[key]!;
    if (name === EXTRA) {
      extra = addExtra(extra ?? {}, source, key, value);
    } else if (name === 'usage') {
      converted['usage'] = toUsage(value as JsonObject);
    } else {
      converted[name] = value;
    }
  }
  if (extra !== undefined) converted['extra'] = extra;
  return converted as unknown as RunEvent;
}

/** For a type outside the schema table (never reached: decode rejects unknown types): only the envelope is known. */
const ENVELOPE_ONLY = typeFields([]);

/**
 * Adds one unknown key under its camelCase name, or under its own spelling when that name is taken
 * (a key of the line spelled that way, or an earlier converted key): nothing is dropped.
 */
function addExtra(extra: RunEventExtra, source: Record<string, JsonValue>, key: string, value: JsonValue): RunEventExtra {
  let name = camelKey(key);
  if (name !== key && (Object.hasOwn(source, name) || Object.hasOwn(extra, name))) name = key;
  putExtra(extra, name, value);
  return extra;
}
