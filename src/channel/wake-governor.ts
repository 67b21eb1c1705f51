// Counts the process's event-file wake-ups and says when reading on every write costs enough to coalesce busy files.

/**
 * The process-wide rate of reads that file-system notifications (and coalesced ticks) cause, with
 * hysteresis: `congested` turns on once wake-ups reach `enterPerSecond` and off only when they fall
 * below `leavePerSecond`. Like a network card that switches from one interrupt per packet to polling
 * under load: one run streaming fast keeps its per-write reads, many busy runs together are read on a
 * shared tick instead. Time comes from the callers (`now`, epoch ms), so tests drive it by hand.
 */
export class WakeGovernor {
  readonly enterPerSecond: number;
  readonly leavePerSecond: number;
  readonly windowMs: number;
  readonly #enterCount: number;
  #windowStart = Number.NEGATIVE_INFINITY;
  #count = 0;
  #congested = false;

  constructor({ enterPerSecond, leavePerSecond, windowMs }: { enterPerSecond: number; leavePerSecond: number; windowMs: number }) {
    this.enterPerSecond = enterPerSecond;
    this.leavePerSecond = leavePerSecond;
    this.windowMs = windowMs;
    this.#enterCount = Math.ceil((enterPerSecond * windowMs) / 1000);
  }

  /** One read a notification or a coalesced tick caused, at `now`. */
  wake(now: number): void {
    this.#roll(now);
    // Entering does not wait for the window to end: a burst of many busy runs is coalesced within one window.
    if (++this.#count >= this.#enterCount) this.#congested = true;
  }

  /** Whether wake-ups come fast enough (at `now`) that busy files should be read on a shared tick. */
  congested(now: number): boolean {
    this.#roll(now);
    return this.#congested;
  }

  /**
   * Closes the window once it is over, judging its rate over the time that really passed (an idle gap
   * counts). A clock set back starts a new window unjudged: the state would otherwise freeze until the
   * clock caught up again.
   */
  #roll(now: number): void {
    const elapsed = now - this.#windowStart;
    if (elapsed >= 0 && elapsed < this.windowMs) return;
    if (elapsed >= 0 && Number.isFinite(elapsed)) {
      const rate = (this.#count * 1000) / elapsed;
      if (rate >= this.enterPerSecond) this.#congested = true;
      else if (rate < this.leavePerSecond) this.#congested = false;
    }
    this.#windowStart = now;
    this.#count = 0;
  }
}
