// Counts the process's event-file wake-ups and says how far reading on every write should coalesce busy files.

/** One level of load: reached once wake-ups come `enterPerSecond`, left when they fall below `leavePerSecond`. */
export interface WakeLevel {
  enterPerSecond: number;
  leavePerSecond: number;
}

/**
 * The process-wide rate of reads that file-system notifications (and coalesced ticks) cause, as a level
 * with hysteresis: level 0 is calm; level i + 1 is reached once wake-ups reach `levels[i].enterPerSecond`
 * and left only when they fall below `levels[i].leavePerSecond`. Like a network card that switches from
 * one interrupt per packet to polling under load: one run streaming fast keeps its per-write reads, many
 * busy runs together are read on a shared tick, and more of them on a slower one. One count serves
 * every level. Time comes from the callers (`now`, epoch ms), so tests drive it by hand.
 */
export class WakeGovernor {
  readonly windowMs: number;
  readonly #levels: readonly WakeLevel[];
  /** Wake-ups within one window that reach each level at once (without waiting for the window to end). */
  readonly #enterCounts: readonly number[];
  #windowStart = Number.NEGATIVE_INFINITY;
  #count = 0;
  #level = 0;

  constructor({ levels, windowMs }: { levels: readonly WakeLevel[]; windowMs: number }) {
    levels.forEach((level, i) => {
      // Each rule says what must hold and a level is refused when one does not: a NaN rate fails every comparison, so it is refused too.
      const leftAtOrBelowEntry = level.leavePerSecond <= level.enterPerSecond;
      const below = levels[i - 1];
      const risesAbove = below === undefined || (below.enterPerSecond < level.enterPerSecond && below.leavePerSecond <= level.leavePerSecond);
      if (!leftAtOrBelowEntry || !risesAbove) throw new RangeError('wake levels must rise, each left at or below the rate that enters it');
    });
    this.#levels = levels;
    this.windowMs = windowMs;
    this.#enterCounts = levels.map((level) => Math.ceil((level.enterPerSecond * windowMs) / 1000));
  }

  /** One read a notification or a coalesced tick caused, at `now`. */
  wake(now: number): void {
    this.#roll(now);
    // Entering does not wait for the window to end: a burst of many busy runs is coalesced within one window.
    const count = ++this.#count;
    while (this.#level < this.#levels.length && count >= this.#enterCounts[this.#level]!) this.#level++;
  }

  /** How loaded the process is at `now`: 0 (read every write) up to the number of levels. */
  level(now: number): number {
    this.#roll(now);
    return this.#level;
  }

  /**
   * Closes the window once it is over, judging its rate over the time that really passed (an idle gap
   * counts): levels whose leaving rate it is below are left. (Climbing needs no judging: a window fast
   * enough for a level reached its count while it lasted.) A clock set back starts a new window
   * unjudged: the state would otherwise freeze until the clock caught up again.
   */
  #roll(now: number): void {
    const elapsed = now - this.#windowStart;
    if (elapsed >= 0 && elapsed < this.windowMs) return;
    if (elapsed >= 0 && Number.isFinite(elapsed)) {
      const rate = (this.#count * 1000) / elapsed;
      while (this.#level > 0 && rate < this.#levels[this.#level - 1]!.leavePerSecond) this.#level--;
    }
    this.#windowStart = now;
    this.#count = 0;
  }
}
