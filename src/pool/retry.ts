// Retry policy of the pool: validation, whether an outcome is retried, and the wait before the retry.
import { rethrowLater } from '../run/guarded-emitter.js';
import { MAX_TIMER_MS } from '../run/run-timers.js';
import type { Outcome } from '../api/types.js';
import type { RetryPolicy } from './types.js';

/** Error codes of runs stopped on purpose by the caller, the parent or the caller's budget: never retried. */
const STOPPED_ON_PURPOSE = new Set(['aborted', 'parent-shutdown', 'budget-exceeded']);

/** Throws a TypeError/RangeError on an invalid policy; `undefined` means no retries. */
export function checkRetryPolicy(policy: RetryPolicy | false | undefined, where: string): RetryPolicy | undefined {
  if (policy === undefined || policy === false) return undefined;
  if (typeof policy !== 'object' || policy === null) throw new TypeError(`${where} must be an object or false`);
  const { attempts, backoff, when } = policy;
  if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1) {
    throw new RangeError(`${where}.attempts must be an integer >= 1`);
  }
  if (backoff !== undefined && typeof backoff !== 'function' && !validDelay(backoff)) {
    throw new RangeError(`${where}.backoff must be a number of milliseconds >= 0 or a function`);
  }
  if (when !== undefined && typeof when !== 'function') throw new TypeError(`${where}.when must be a function`);
  return policy;
}

/** The default `when`: a run that failed, timed out or stalled is worth another attempt. */
function worthRetrying(outcome: Outcome): boolean {
  return outcome.status === 'failed' || outcome.status === 'timed-out' || outcome.errorCode === 'stalled';
}

/**
 * Whether attempt `attempt` (1-based), which ended with `outcome`, is followed by another one. A
 * throwing `when` means no retry (and its error is rethrown on a later tick): the pool's bookkeeping
 * must not break in the middle.
 */
export function shouldRetry(policy: RetryPolicy | undefined, attempt: number, outcome: Outcome): boolean {
  if (policy === undefined || attempt >= policy.attempts) return false;
  if (outcome.errorCode !== undefined && STOPPED_ON_PURPOSE.has(outcome.errorCode)) return false;
  try {
    return (policy.when ?? worthRetrying)(outcome) === true;
  } catch (error) {
    rethrowLater(error);
    return false;
  }
}

/** Milliseconds to wait before queueing attempt `next`; a bad value (or a throw) from a backoff function counts as 0. */
export function backoffMs(policy: RetryPolicy, next: number, outcome: Outcome): number {
  const { backoff } = policy;
  if (backoff === undefined) return 0;
  let value: unknown = backoff;
  if (typeof backoff === 'function') {
    try {
      value = backoff(next, outcome);
    } catch (error) {
      rethrowLater(error);
      value = 0;
    }
  }
  return validDelay(value) ? Math.min(value, MAX_TIMER_MS) : 0;
}

function validDelay(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}
