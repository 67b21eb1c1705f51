// Decides when a tail reads: fs.watch notifications (one read per loop turn), a shared safety poll, a shared tick for busy files.
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { GridTicker } from './grid-ticker.js';
import { WakeGovernor } from './wake-governor.js';

/** Whether a read that finds no new data checks that the path still names the file. */
export type PathCheck = 'always' | 'throttled' | 'done';

/**
 * What a {@link TailWaker} wakes: the reading side of a tail. Plain function properties (no getters):
 * every waker's tail then has the same shape, and the tick's loads stay monomorphic across hundreds of tails.
 */
export interface WokenTail {
  /** Reads everything available now, unless paused (`pathCheck`: see {@link PathCheck}); true when it found new bytes. */
  read(pathCheck: PathCheck): boolean;
  /** While true, reading pauses (the file is the buffer). */
  paused(): boolean;
  /** Whether the path still names the open file; the tail reports and stops when not. */
  samePath(): boolean;
  /** Whether the bytes before the offset are still the ones read (a paused tail's check); reports and stops when not. */
  sameWitness(): boolean;
}

/** What `'auto'` follows: the process's wake-ups, and how loaded they say it is (a {@link WakeGovernor}). */
export interface WakeCounter {
  wake(now: number): void;
  /** 0: read every notification; 1: congested (AUTO_TICK_MS); 2: crowded (CROWDED_TICK_MS). */
  level(now: number): number;
}

export interface TailWakerOptions {
  /** Base safety poll period (ms). */
  pollMs: number;
  /** See `LineTailOptions.latencyBudgetMs`. */
  latencyBudgetMs: number | 'auto';
  /** The wake-up count `'auto'` follows (default: the process's). */
  governor?: WakeCounter | undefined;
}

/** An idle tail's safety poll slows down to this many times its base period. */
const MAX_POLL_BACKOFF = 8;
/** A hot tail watches again after this many ticks in a row found nothing new. */
const HOT_QUIET_TICKS = 3;
/** Period of the one timer that runs every tail's safety poll. */
const POLL_TICK_MS = 100;
/**
 * `'auto'`: the process's wake-ups per second (reads that notifications and ticks cause, all tails
 * together) from which busy tails are read on a shared tick, and below which they watch again. One
 * wake-up costs the parent about 50-100 µs of CPU (kernel, libuv, the read): 500 of them are 3-5 % of a
 * core. One run streaming 400 events/s stays below; ten runs at 100/s are above.
 */
const AUTO_ENTER_PER_SECOND = 500;
const AUTO_LEAVE_PER_SECOND = 150;
/**
 * `'auto'`: the tick busy tails are read on while the process is congested (each line at most this late).
 * Under the poller's 30 ms, so a busy run still hears sooner than from Fen's parent (p50 about 12 ms
 * against 15), at 1.2 times the poller's reads rather than the 1.5 of a 20 ms tick: ten busy runs measured
 * 8 % less parent CPU on 25 than on 20 ms, four rounds interleaved.
 */
const AUTO_TICK_MS = 25;
/**
 * `'auto'`: wake-ups per second from which the process is crowded, and below which it no longer is:
 * then busy tails are read on a tick of CROWDED_TICK_MS, Fen's own parent's cadence. Each hot tail costs
 * one read per tick, so 50 busy runs on the 25 ms tick are 2000 reads a second (a 30 ms poller makes
 * 1667); on the 30 ms tick they are as many as the poller's. Forty busy runs on 25 ms (1600 a second)
 * enter it; on 30 ms they are 1333 a second, above the leaving rate, so they do not flap. Ten busy runs
 * (400 a second) stay on 25 ms.
 */
const CROWDED_ENTER_PER_SECOND = 1600;
const CROWDED_LEAVE_PER_SECOND = 1000;
const CROWDED_TICK_MS = 30;
/** `'auto'`: the tick of each level of the process's wake-ups (0: read every notification). */
const AUTO_TICKS_MS = [0, AUTO_TICK_MS, CROWDED_TICK_MS];

/** Every open tail's safety poll: one timer (hundreds of idle runs must not mean hundreds of timers). */
const pollTicker = new GridTicker(POLL_TICK_MS);

/**
 * The safety polls by the tick they are due at. An idle tail polls every 4 s, so visiting every tail on
 * every 100 ms tick to find the due ones was 40 visits per poll (at 700 idle runs, a quarter of the
 * parent's idle CPU); a tick now visits only the tails due by then.
 */
class PollSchedule {
  readonly #due = new Map<number, Set<TailWaker>>();
  readonly #slotOf = new Map<TailWaker, number>();
  readonly #member = { tick: (now: number) => this.#tick(now) };

  /** `waker` polls at the first tick at or after `at` (epoch ms). */
  at(waker: TailWaker, at: number): void {
    const slot = Math.ceil(at / POLL_TICK_MS);
    const current = this.#slotOf.get(waker);
    if (current === slot) return;
    if (current !== undefined) this.#leave(waker, current);
    let wakers = this.#due.get(slot);
    if (wakers === undefined) this.#due.set(slot, (wakers = new Set()));
    wakers.add(waker);
    this.#slotOf.set(waker, slot);
    if (this.#slotOf.size === 1) pollTicker.add(this.#member);
  }

  /** `waker` polls no more. */
  remove(waker: TailWaker): void {
    const current = this.#slotOf.get(waker);
    if (current === undefined) return;
    this.#leave(waker, current);
    this.#slotOf.delete(waker);
    if (this.#slotOf.size === 0) pollTicker.delete(this.#member);
  }

  #leave(waker: TailWaker, slot: number): void {
    const wakers = this.#due.get(slot);
    wakers?.delete(waker);
    if (wakers?.size === 0) this.#due.delete(slot);
  }

  #tick(now: number): boolean {
    const current = Math.floor(now / POLL_TICK_MS);
    // Taken out first: a poll schedules its tail's next one, never into a slot this tick still visits.
    const due: Array<[number, Set<TailWaker>]> = [];
    for (const entry of this.#due) if (entry[0] <= current) due.push(entry);
    for (const [slot] of due) this.#due.delete(slot);
    for (const [slot, wakers] of due) {
      for (const waker of wakers) {
        // Moved or stopped by an earlier poll of this tick (a handler may close other tails).
        if (this.#slotOf.get(waker) !== slot) continue;
        this.#slotOf.delete(waker);
        waker.pollIfDue(now);
      }
    }
    return this.#slotOf.size > 0;
  }
}

const pollSchedule = new PollSchedule();
/** The shared ticks of tails reading on a latency budget, one per budget. */
const budgetTickers = new Map<number, GridTicker>();
/** The wake-ups of every tail in this process (what `'auto'` follows): congested, then crowded. */
const processGovernor = new WakeGovernor({
  levels: [
    { enterPerSecond: AUTO_ENTER_PER_SECOND, leavePerSecond: AUTO_LEAVE_PER_SECOND },
    { enterPerSecond: CROWDED_ENTER_PER_SECOND, leavePerSecond: CROWDED_LEAVE_PER_SECOND },
  ],
  windowMs: 250,
});

/**
 * The tick of an explicit budget runs a tenth sooner than the budget (at least 1 ms): a line waits at
 * most one period for its read, and the timer itself fires a little late under load, so a tick of the
 * budget itself let the slowest lines overshoot the bound the caller asked for (p99 30.1 ms for 30 ms).
 */
function budgetTickMs(budgetMs: number): number {
  return Math.max(1, budgetMs - Math.max(1, Math.round(budgetMs / 10)));
}

/** The shared tick of this period (ms). */
function budgetTicker(periodMs: number): GridTicker {
  let ticker = budgetTickers.get(periodMs);
  if (ticker === undefined) {
    ticker = new GridTicker(periodMs);
    budgetTickers.set(periodMs, ticker);
  }
  return ticker;
}

/** @internal Timers the tails hold now (tests check that closed tails leave none). */
export function armedTailTimers(): number {
  return (pollTicker.armed ? 1 : 0) + armedTickPeriods().length;
}

/** @internal The periods of the shared ticks busy tails are read on now, shortest first. */
export function armedTickPeriods(): number[] {
  const periods: number[] = [];
  for (const [period, ticker] of budgetTickers) if (ticker.armed) periods.push(period);
  return periods.sort((a, b) => a - b);
}

/**
 * The wake-ups of one tail. While started it watches the file (each notification reads, once per
 * loop turn however often the file was notified) and is on the shared safety poll, which catches any
 * notification fs.watch missed and backs off while the file is idle. Past the latency budget's rate
 * it stops watching and reads on a shared tick instead, until the writer slows down.
 */
export class TailWaker {
  readonly #path: string;
  readonly #tail: WokenTail;
  readonly #pollMs: number;
  readonly #latencyBudgetMs: number | 'auto';
  readonly #governor: WakeCounter;
  #watcher: FSWatcher | undefined;
  /** Current safety poll period (backs off while idle) and when the next poll is due. */
  #pollEvery: number;
  #nextPollAt = 0;
  /** Reading on a shared tick (not watching) while notifications come faster than the budget. */
  #hot = false;
  /** The tick period while hot (a tenth under the budget, or under `'auto'` AUTO_TICK_MS or CROWDED_TICK_MS). */
  #hotPeriod = 0;
  #lastWakeAt = Number.NEGATIVE_INFINITY;
  /** Ticks in a row that found nothing new while hot, and when the last one that read was (or the tail went hot). */
  #quietTicks = 0;
  #lastReadTickAt = 0;
  /** Reads in a row, while hot, that came more than two periods after the one before. */
  #slowReads = 0;
  readonly #hotMember = { tick: (now: number) => this.#hotTick(now) };
  /** After {@link stop}: the tail closed, or its writer is gone (it reads on only as it is drained). */
  #stopped = false;

  constructor(path: string, tail: WokenTail, options: TailWakerOptions) {
    this.#path = path;
    this.#tail = tail;
    this.#pollMs = options.pollMs;
    this.#pollEvery = options.pollMs;
    this.#latencyBudgetMs = options.latencyBudgetMs;
    this.#governor = options.governor ?? processGovernor;
  }

  /** Starts watching and polling. */
  start(): void {
    this.#watch();
    this.#schedulePoll(Date.now() + this.#pollEvery);
  }

  /** No more wake-ups: the watcher closes, the tail leaves the shared timers. Idempotent. */
  stop(): void {
    this.#stopped = true;
    pollSchedule.remove(this);
    if (this.#hot) {
      this.#hot = false;
      this.#leaveTick();
    }
    this.#unwatch();
  }

  /** A read found new data: the safety poll drops back to its base period. */
  dataFlowed(): void {
    if (this.#pollEvery === this.#pollMs) return;
    this.#pollEvery = this.#pollMs;
    this.#schedulePoll(Math.min(this.#nextPollAt, Date.now() + this.#pollMs));
  }

  #schedulePoll(at: number): void {
    this.#nextPollAt = at;
    if (!this.#stopped) pollSchedule.at(this, at);
  }

  /** @internal The shared poll timer's tick: reads when this tail's safety poll is due, backing off while idle. */
  pollIfDue(now: number): void {
    const tail = this.#tail;
    if (this.#stopped) return;
    if (now < this.#nextPollAt) {
      // Not due yet (a tick that came early, or a caller's own time): keep the poll where it was.
      this.#schedulePoll(this.#nextPollAt);
      return;
    }
    // Also while paused: a swapped file is found within one poll period, not when the consumer catches up.
    if (!tail.samePath()) return;
    let found = false;
    if (tail.paused()) {
      if (!tail.sameWitness()) return;
    } else if (!this.#hot) {
      // While hot the budget's tick reads; the poll only checks the path.
      found = tail.read('done');
    }
    if (!found) this.#pollEvery = Math.min(this.#pollEvery * 2, this.#pollMs * MAX_POLL_BACKOFF);
    this.#schedulePoll(now + this.#pollEvery);
  }

  #watch(): void {
    try {
      this.#watcher = watch(this.#path, { persistent: false }, () => this.#queueNotify());
      this.#watcher.on('error', () => {
        // The safety poll keeps reading; a broken watcher only costs latency.
        this.#unwatch();
      });
    } catch {
      this.#watcher = undefined;
    }
  }

  #unwatch(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  /**
   * Tails notified in this turn of the event loop. Their reads run once the loop has dispatched every
   * file-system event it read (same turn, no timer): a file notified twice in one batch, common under
   * load since all watchers share one inotify queue, is read once.
   */
  static readonly #notified = new Set<TailWaker>();

  static #readNotified(): void {
    const now = Date.now();
    for (const waker of TailWaker.#notified) {
      TailWaker.#notified.delete(waker);
      waker.#onNotify(now);
    }
  }

  #queueNotify(): void {
    const notified = TailWaker.#notified;
    if (notified.size === 0) setImmediate(TailWaker.#readNotified);
    notified.add(this);
  }

  /** fs.watch said the file changed: read now, or, past the budget's rate, on its shared tick. */
  #onNotify(now: number): void {
    this.#governor.wake(now);
    const period = this.#coalescePeriod(now);
    if (period === 0) {
      this.#tail.read('throttled');
      return;
    }
    // Paused: nothing to read until the consumer catches up (its resume drains).
    if (this.#hot || this.#stopped || this.#tail.paused()) return;
    if (now - this.#lastWakeAt >= period) {
      // The first notification after a quiet spell: read at once.
      this.#lastWakeAt = now;
      this.#tail.read('throttled');
      return;
    }
    // Notifications come faster than the budget: stop watching (each one costs a callback) and read on the tick.
    this.#hot = true;
    this.#hotPeriod = period;
    this.#lastReadTickAt = now;
    this.#slowReads = 0;
    this.#unwatch();
    budgetTicker(period).add(this.#hotMember);
  }

  /**
   * The tick a busy file is read on now: a tenth under the budget, or under `'auto'` AUTO_TICK_MS while
   * the process is congested and CROWDED_TICK_MS while it is crowded (0: read every notification).
   */
  #coalescePeriod(now: number): number {
    const budget = this.#latencyBudgetMs;
    if (budget !== 'auto') return budget === 0 ? 0 : budgetTickMs(budget);
    return AUTO_TICKS_MS[this.#governor.level(now)] ?? CROWDED_TICK_MS;
  }

  /** A hot tail whose period changed (`'auto'` as the process crowds or thins out) moves to that tick. */
  #moveTo(period: number): void {
    this.#leaveTick();
    this.#hotPeriod = period;
    budgetTicker(period).add(this.#hotMember);
  }

  /** Takes this tail off the tick of `#hotPeriod`; the tick goes with its last member. */
  #leaveTick(): void {
    const ticker = budgetTickers.get(this.#hotPeriod);
    if (ticker === undefined) return;
    ticker.delete(this.#hotMember);
    if (ticker.size === 0) budgetTickers.delete(this.#hotPeriod);
  }

  /**
   * The shared tick while hot: read on while lines keep coming. Watch again once ticks found none for
   * HOT_QUIET_TICKS in a row (the writer stopped), or when two reads in a row each came more than two
   * periods after the one before (the writer is slower than the tick: its next line is read at once
   * again, not up to a period late; one late read alone may be the load's doing), or under `'auto'` once
   * the process is no longer congested. A writer just under the period stays on the tick: it would
   * otherwise make and drop a watcher, and pay a notification, per line.
   */
  #hotTick(now: number): boolean {
    if (!this.#hot) return false;
    const tail = this.#tail;
    const found = tail.read('throttled');
    // Stopped inside the read (the tail closed, or its writer is gone): stop() took this tail off the tick.
    if (this.#stopped) return false;
    if (found) {
      // A tick that read saved at least one notification: it counts as the wake-up it still is.
      this.#governor.wake(now);
      this.#quietTicks = 0;
      this.#slowReads = now - this.#lastReadTickAt > 2 * this.#hotPeriod ? this.#slowReads + 1 : 0;
      this.#lastReadTickAt = now;
      const period = this.#coalescePeriod(now);
      if (this.#slowReads < 2 && period !== 0) {
        if (period === this.#hotPeriod) return true;
        this.#moveTo(period);
        return false;
      }
    } else if (++this.#quietTicks < HOT_QUIET_TICKS) {
      return true;
    }
    this.#quietTicks = 0;
    this.#hot = false;
    this.#lastWakeAt = now;
    this.#watch();
    // A line written between that read and the new watch must not wait for the next one.
    tail.read('always');
    return false;
  }
}
