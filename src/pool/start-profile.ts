// A run's start profile: the options that shape its child apart from its task's own (warm children are kept per profile), and the key that tells two profiles apart.
import { profileOptions } from '../api/hand-off.js';
import type { RunOptions } from '../api/types.js';

/** The options that shape a child (see `TASK_OPTION_KEYS` for the others), and their key. */
export interface StartProfile {
  /** Equal for two option sets that start the same child: values compared as JSON, functions and other objects by identity. */
  readonly key: string;
  readonly options: RunOptions;
}

/** The start profile of a run's options. */
export function startProfileOf(options: RunOptions): StartProfile {
  const profile = profileOptions(options);
  // An option left undefined, or an empty env, starts the same child as one not given.
  const shaping = Object.fromEntries(Object.entries(profile).filter(([key, value]) => value !== undefined && !(key === 'env' && isEmpty(value))));
  return { key: canonical(shaping), options: profile };
}

function isEmpty(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.keys(value).length === 0;
}

/** Functions and objects that are not plain data (a callback, a budget), numbered by identity. */
const identities = new WeakMap<object, number>();
let nextIdentity = 1;

/** Plain values as JSON with sorted keys (`undefined` kept: an env variable set to it is removed); anything else by identity. */
function canonical(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const prototype: unknown = typeof value === 'object' ? Object.getPrototypeOf(value) : undefined;
  if (prototype !== Object.prototype && prototype !== null) {
    let identity = identities.get(value);
    if (identity === undefined) identities.set(value, (identity = nextIdentity++));
    return `#${identity}`;
  }
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonical(record[key])}`)
    .join(',')}}`;
}
