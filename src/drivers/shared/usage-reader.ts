// The one usage reader of every driver: where a protocol puts a frame's token counts and cost, read into one Usage.
import { addUsage, toUsage } from '../../wire/index.js';
import type { JsonObject, JsonValue, Usage } from '../../wire/index.js';
import { countField, isObject } from './json-kinds.js';

/** A member of a frame, or a path to a nested one (`['tokenUsage', 'last']`). */
export type FieldPath = string | readonly string[];

/** Where a protocol's frames carry usage (any mix). */
export interface UsageSpec {
  /** A usage object (HEP's and mew's `usage`), read by `toUsage` whatever its key style. */
  object?: FieldPath;
  /** Count members of the frame itself (fuseraft's `inputTokens`, `outputTokens`...): a finite number >= 0 each; null and absent ones are left out. */
  counts?: readonly string[];
  /** A cost in US dollars (mew's `cost`): a finite number, added as `costUsd`. */
  cost?: FieldPath;
}

/** The usage `frame` carries as `spec` says, or undefined when it carries none. */
export function readUsage(frame: JsonObject, spec: UsageSpec): Usage | undefined {
  let usage: Usage | undefined;
  const object = spec.object === undefined ? undefined : valueAt(frame, spec.object);
  if (isObject(object)) usage = toUsage(object);
  if (spec.counts !== undefined) {
    const counts: JsonObject = {};
    let found = false;
    for (const key of spec.counts) {
      const value = countField(frame, key);
      if (value === undefined) continue;
      counts[key] = value;
      found = true;
    }
    if (found) usage = addUsage(usage ?? {}, toUsage(counts));
  }
  const cost = spec.cost === undefined ? undefined : valueAt(frame, spec.cost);
  if (typeof cost === 'number' && Number.isFinite(cost)) usage = addUsage(usage ?? {}, { costUsd: cost });
  return usage;
}

function valueAt(frame: JsonObject, path: FieldPath): JsonValue | undefined {
  if (typeof path === 'string') return frame[path];
  let value: JsonValue | undefined = frame;
  for (const name of path) value = isObject(value) ? value[name] : undefined;
  return value;
}
