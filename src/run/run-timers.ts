// A run's one-shot timers by name (ready, deadline, finalize): unref'd, cleared together, far deadlines re-armed.

/** The run's one-shot timers. */
export type RunTimerName = 'ready' | 'deadline' | 'finalize';

/** Largest delay setTimeout honours; a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Each name holds at most one timer. A timer stays set once it fired, until {@link clear} (so
 * {@link isSet} tells "started once" apart from "never started"). Every timer is unref'd: a run's
 * timers never keep the parent alive, the run's process and descriptors do.
 */
export class RunTimers {
  readonly #timers = new Map<RunTimerName, NodeJS.Timeout>();

  /** Calls `fire` once after `ms`, replacing a timer of the same name. */
  after(name: RunTimerName, ms: number, fire: () => void): void {
    this.clear(name);
    this.#timers.set(name, setTimeout(fire, ms).unref());
  }

  /** Calls `fire` once the clock reaches `at` (epoch ms): a wait past setTimeout's limit re-arms until it is near. */
  at(name: RunTimerName, at: number, fire: () => void): void {
    const wait = Math.min(Math.max(0, at - Date.now()), MAX_TIMER_MS);
    this.after(name, wait, () => (Date.now() < at ? this.at(name, at, fire) : fire()));
  }

  /** True from `after` or `at` until `clear`, also once the timer fired. */
  isSet(name: RunTimerName): boolean {
    return this.#timers.has(name);
  }

  clear(name: RunTimerName): void {
    const timer = this.#timers.get(name);
    if (timer !== undefined) clearTimeout(timer);
    this.#timers.delete(name);
  }

  clearAll(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
