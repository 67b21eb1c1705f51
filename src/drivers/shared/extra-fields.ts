// The one rule every driver follows for a child's unknown fields: all of them under the event's `extra`, none lost.
import type { JsonValue } from '../../wire/index.js';
import type { RunEventExtra } from '../../protocol/index.js';

/**
 * Adds one unknown field to `extra` as an own data property: a child may send `__proto__`, which a
 * plain assignment would turn into the object's prototype instead of a field.
 */
export function putExtra(extra: RunEventExtra, name: string, value: JsonValue): void {
  if (name === '__proto__') Object.defineProperty(extra, name, { value, enumerable: true, writable: true, configurable: true });
  else extra[name] = value;
}
