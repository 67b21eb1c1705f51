// One timer shared by many members, firing at multiples of a period while any member wants ticks.

/** Where a ticker takes its time and timers from (injectable: tests drive it by hand). */
export interface TickerClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The wall clock and unref'd Node timers: a ticker never keeps the process alive. */
export const systemClock: TickerClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** A member of a {@link GridTicker}: `tick` returns false when it wants no further ticks. */
export interface Ticked {
  tick(now: number): boolean;
}

/**
 * Ticks every member on one timer at the multiples of `periodMs` (on the clock's own grid, so members
 * added at different times still share each firing): hundreds of runs cost one timer firing per
 * period, not one each. The timer is armed only while there are members.
 */
export class GridTicker {
  readonly periodMs: number;
  readonly #clock: TickerClock;
  readonly #members = new Set<Ticked>();
  #timer: unknown;

  constructor(periodMs: number, clock: TickerClock = systemClock) {
    this.periodMs = periodMs;
    this.#clock = clock;
  }

  /** Members currently ticked. */
  get size(): number {
    return this.#members.size;
  }

  /** True while the timer is armed. */
  get armed(): boolean {
    return this.#timer !== undefined;
  }

  has(member: Ticked): boolean {
    return this.#members.has(member);
  }

  /** Ticks `member` from the next grid point on (at most one period from now). */
  add(member: Ticked): void {
    this.#members.add(member);
    this.#arm();
  }

  /** Stops ticking `member`; the timer stops with the last one. Safe inside a tick. */
  delete(member: Ticked): void {
    this.#members.delete(member);
    if (this.#members.size === 0 && this.#timer !== undefined) {
      this.#clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  #arm(): void {
    if (this.#timer !== undefined || this.#members.size === 0) return;
    const now = this.#clock.now();
    const next = (Math.floor(now / this.periodMs) + 1) * this.periodMs;
    this.#timer = this.#clock.setTimeout(() => this.#fire(), next - now);
  }

  #fire(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    for (const member of this.#members) if (!member.tick(now)) this.#members.delete(member);
    this.#arm();
  }
}
