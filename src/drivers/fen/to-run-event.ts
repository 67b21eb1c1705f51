// Converts decoded wire events (kebab-case keys) into the camelCase RunEvent objects users see.
import { toUsage } from '../../wire/index.js';
import type { JsonObject, WireEvent } from '../../wire/index.js';
import type { RunEvent } from '../../run/types/index.js';

const keyCache = new Map<string, string>();
/** Top-level key -> the name it gets in a RunEvent (camelCase, unless that would be an envelope key). */
const fieldNames = new Map<string, string>();

/**
 * The keys of the last event of each type, in order, and their RunEvent names. Events of one type
 * nearly always repeat the same keys in the same order, so most keys are matched by identity with the
 * remembered one (JSON.parse interns keys) instead of a hash lookup; a mismatch falls back to
 * `fieldNames` and updates the remembered order.
 */
interface KeyOrder {
  keys: string[];
  names: string[];
}
const keyOrders = new Map<unknown, KeyOrder>();
/** Bounded, although only validated event types reach toRunEvent. */
const MAX_KEY_ORDERS = 256;

/** Envelope keys: a converted extra key (`type?`, `run-`) must never overwrite them. */
const ENVELOPE = new Set(['v', 'seq', 'type', 'run']);

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
 * The camelCase copy of one event. Every top-level key is converted, unknown extra fields included;
 * `usage` (validated as an object) becomes subvisor's {@link Usage}; other nested values (arguments,
 * results) are kept as they are. When two keys map to the same
 * camelCase name (`a-b` and `aB`), the one written in kebab case wins, as it is the protocol's. An
 * extra key that would turn into an envelope key (`type?`) keeps its original spelling.
 */
export function toRunEvent(event: WireEvent): RunEvent {
  const source = event as Record<string, unknown>;
  const converted: Record<string, unknown> = {};
  // Only after a renamed key can a key that keeps its spelling collide with an earlier one.
  let renamed = false;
  let order = keyOrders.get(source['type']);
  if (order === undefined) {
    order = { keys: [], names: [] };
    if (keyOrders.size < MAX_KEY_ORDERS) keyOrders.set(source['type'], order);
  }
  const { keys, names } = order;
  let index = 0;
  // for...in over a JSON.parse result sees exactly its own keys, and is faster than Object.keys here.
  for (const key in source) {
    let name: string;
    // llm-end, turn-complete and result carry usage (checked to be an object); on another type it is an unknown extra field.
    const value = source[key];
    if (key === 'usage' && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      converted['usage'] = toUsage(value as JsonObject);
      index++;
      continue;
    }
    if (keys[index] === key) {
      name = names[index]!;
    } else {
      name = fieldNames.get(key) ?? fieldName(key);
      keys[index] = key;
      names[index] = name;
    }
    index++;
    if (name === '__proto__') {
      // A child may send this key: keep it as data, never as the object's prototype.
      Object.defineProperty(converted, name, { value: source[key], enumerable: true, writable: true, configurable: true });
    } else if (name !== key) {
      renamed = true;
      converted[name] = source[key];
    } else if (!renamed || !Object.hasOwn(converted, name)) {
      converted[name] = source[key];
    }
  }
  return converted as RunEvent;
}

/** The RunEvent name of a top-level key: its camelCase form, or the key itself when that is an envelope key. */
function fieldName(key: string): string {
  let name = camelKey(key);
  if (name !== key && ENVELOPE.has(name)) name = key;
  // Bounded like keyCache: keys come from an untrusted child.
  if (fieldNames.size < 1024) fieldNames.set(key, name);
  return name;
}
