// The time the pool's own timers read (the rate-limit gate, warm children's idle close and back-off): the system clock, or a test's.
import { MAX_TIMER_MS } from '../run/run-timers.js';

/** A timer of a {@link PoolClock}. */
export interface PoolTimer {
  /** Stops it (a no-op once it fired). */
  cancel(): void;
  /** `true`: it keeps the process alive until it fires (something waits on it); `false` (the start): it does not. */
  hold(keepAlive: boolean): void;
}

/** What the pool's timers run on; `createSupervisor({ clock })` takes a test's own. */
export interface PoolClock {
  /** Epoch milliseconds. */
  now(): number;
  /** Calls `callback` once, `ms` from now; the timer does not keep the process alive until told to ({@link PoolTimer.hold}). */
  setTimer(callback: () => void, ms: number): PoolTimer;
}

/** The system clock: `Date.now()` and unref'd `setTimeout`s (a wait past setTimeout's limit fires at the limit). */
export const SYSTEM_CLOCK: PoolClock = {
  now: () => Date.now(),
  setTimer(callback, ms) {
    const timer = setTimeout(callback, Math.min(Math.max(0, ms), MAX_TIMER_MS)).unref();
    return {
      cancel: () => clearTimeout(timer),
      hold: (keepAlive) => void (keepAlive ? timer.ref() : timer.unref()),
    };
  },
};

/** `clock` as the pool takes it: the system clock when undefined, else checked. */
export function checkClock(clock: unknown): PoolClock {
  if (clock === undefined) return SYSTEM_CLOCK;
  const candidate = clock as Partial<PoolClock> | null;
  if (typeof candidate !== 'object' || candidate === null || typeof candidate.now !== 'function' || typeof candidate.setTimer !== 'function') {
    throw new TypeError('options.clock must be { now(), setTimer(callback, ms) }');
  }
  return candidate as PoolClock;
}
