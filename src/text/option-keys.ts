// Refusing an options object's unknown keys with the name meant: every public function that takes options does it.
import { closestName } from './closest-name.js';

/**
 * A misspelt option would otherwise be ignored in silence (a pool without the limit its author wrote). Throws a
 * TypeError naming the first unknown key of `options` (as `where.key`) and the known one closest to it. `known` is written at the
 * call as `Object.keys({...} satisfies Record<keyof Options, true>)`, so the compiler keeps it and the type in step.
 * Not an object: nothing to check here (each caller refuses that with its own message).
 */
export function refuseUnknownKeys(options: unknown, known: readonly string[], owner: string, where = 'options'): void {
  if (typeof options !== 'object' || options === null) return;
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    throw new TypeError(`${where}.${key} is not an option of ${owner}; did you mean ${closestName(key, known)}?`);
  }
}
