// Converts decoded wire events (kebab-case keys) into the camelCase RunEvent objects users see.
import type { WireEvent } from '../wire/index.js';
import type { RunEvent } from './types.js';

const keyCache = new Map<string, string>();

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
 * nested values (usage, arguments, results) are kept as they are. When two keys map to the same
 * camelCase name (`a-b` and `aB`), the one written in kebab case wins, as it is the protocol's. An
 * extra key that would turn into an envelope key (`type?`) keeps its original spelling.
 */
export function toRunEvent(event: WireEvent): RunEvent {
  const source = event as Record<string, unknown>;
  const converted: Record<string, unknown> = {};
  // for...in over a JSON.parse result sees exactly its own keys, and is faster than Object.keys here.
  for (const key in source) {
    let name = keyCache.get(key) ?? camelKey(key);
    if (name !== key && ENVELOPE.has(name)) name = key;
    if (name === '__proto__') {
      // A child may send this key: keep it as data, never as the object's prototype.
      Object.defineProperty(converted, name, { value: source[key], enumerable: true, writable: true, configurable: true });
    } else if (name !== key || !Object.hasOwn(converted, name)) {
      converted[name] = source[key];
    }
  }
  return converted as RunEvent;
}
