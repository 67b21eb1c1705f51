// Parses the duration values of --timeout, --grace, --ready-timeout and the other duration options into milliseconds.
import { UsageError } from './usage-error.js';

/** The longest delay a Node timer can hold (about 24.8 days); longer ones would fire at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export type DurationResult = { ok: true; ms: number } | { ok: false; reason: string };

/**
 * `1500ms`, `90s`, `10m`, `1h`, `2.5s`; a plain number is seconds, as with timeout(1).
 * Zero is allowed only when `allowZero` (a zero grace means "signal at once").
 */
export function parseDuration(text: string, allowZero: boolean): DurationResult {
  if (/^-\d/.test(text.trim())) {
    return { ok: false, reason: `"${text}" is invalid: a duration cannot be negative; write it like 1500ms, 90s, 10m or 1h` };
  }
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (match === null) {
    return { ok: false, reason: `"${text}" is not a duration; write it like 1500ms, 90s, 10m or 1h (a plain number is seconds)` };
  }
  const ms = Math.round(Number(match[1]) * (UNIT_MS[match[2] ?? 's'] ?? 1000));
  if (ms === 0 && !allowZero) return { ok: false, reason: `"${text}" is zero; give a positive duration` };
  if (ms > MAX_DURATION_MS) return { ok: false, reason: `"${text}" is longer than the longest timer (24 days)` };
  return { ok: true, ms };
}

/**
 * `--timeout` and a task line's `timeout`: a duration, or `0` for no deadline at all (as with timeout(1)), which
 * is `timeoutMs: Infinity`. Without one, a run gets spawnRun's default (45 minutes).
 */
export function parseTimeout(text: string): DurationResult {
  const parsed = parseDuration(text, true);
  return parsed.ok && parsed.ms === 0 ? { ok: true, ms: Infinity } : parsed;
}

/**
 * The milliseconds of the duration option `--name` (undefined when not given): `allowZero` as for
 * {@link parseDuration}, or `'none'` for {@link parseTimeout}'s 0 (no deadline). A bad value is a usage error.
 */
export function durationOption(name: string, value: string | undefined, zero: boolean | 'none'): number | undefined {
  if (value === undefined) return undefined;
  const parsed = zero === 'none' ? parseTimeout(value) : parseDuration(value, zero);
  if (!parsed.ok) throw new UsageError(`--${name}: ${parsed.reason}.`);
  return parsed.ms;
}
