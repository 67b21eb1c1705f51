// The one rule every driver follows for a child's unknown fields: all of them under the event's `extra`, none lost.
import type { JsonValue } from '../wire/index.js';
import type { RunEventExtra } from '../run/types/index.js';

/**
 * Adds one unknown field to `extra` as an own data property: a child may send `__proto__`, which a
 * plain assignment would turn into the object's prototype instead of a field.
 */
export function putExtra(extra: RunEventExtra, name: string, value: JsonValue): void {
  if (name === '__proto__') Object.defineProperty(extra, name, { value, enumerable: true, writable: true, configurable: true });
  else extra[name] = value;
}

/**
 * The fields of `source` that `isKnown` does not claim, under the names `rename` gives them (none:
 * as sent). A renamed key whose new name is also a key of `source` as sent keeps its own spelling,
 * so two keys never land on one name. Undefined when every field was known.
 */
export function collectExtra(
  source: { readonly [key: string]: JsonValue },
  isKnown: (key: string) => boolean,
  rename?: (key: string) => string,
): RunEventExtra | undefined {
  let extra: RunEventExtra | undefined;
  for (const key of Object.keys(source)) {
    if (isKnown(key)) continue;
    let name = rename === undefined ? key : rename(key);
    if (name !== key && Object.hasOwn(source, name)) name = key;
    putExtra((extra ??= {}), name, source[key]!);
  }
  return extra;
}
