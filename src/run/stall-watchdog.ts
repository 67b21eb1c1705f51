// The stall watchdog: notices a child that has written nothing for stallTimeoutMs while a turn is open.

/** The clock the watchdog runs on; tests pass a fake one. */
export interface WatchdogClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The wall clock read once per synchronous job: see {@link batchNow}. */
let batchTime: number | undefined;
const forgetBatchTime = (): void => {
  batchTime = undefined;
};
/**
 * What schedules the forgetting: a reaction on a settled promise runs in the same microtask checkpoint
 * as `queueMicrotask`, without the AsyncResource Node creates for each of those (5 % of a busy tick's
 * CPU in a profile of ten runs read on a 30 ms budget).
 */
const settled = Promise.resolve();

/**
 * `Date.now()`, read once per synchronous job and reused until the next microtask: a read of the event
 * file or a stdout chunk hands over hundreds of lines at once, which all arrived together, and a clock
 * call per line was a few percent of a backlog's drain. Stall timeouts are seconds; a job is not.
 */
function batchNow(): number {
  if (batchTime === undefined) {
    batchTime = Date.now();
    void settled.then(forgetBatchTime);
  }
  return batchTime;
}

const realClock: WatchdogClock = {
  now: batchNow,
  setTimeout: (callback, ms) => {
    const timer = setTimeout(callback, ms);
    timer.unref();
    return timer;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * Armed while a turn is open. Every line the child writes moves `lastEventAt`; the timer is not reset
 * per line (a flood would pay a timer each): when it fires it checks how long the child has really
 * been silent and either reports the stall or re-arms for the rest. Without a timeout it only keeps
 * `lastEventAt`.
 */
export class StallWatchdog {
  #timeoutMs: number | undefined;
  readonly #onStall: (silentMs: number) => void;
  readonly #clock: WatchdogClock;
  #lastEventAt: number | undefined;
  /** When the silence is measured from: the last line, or the turn's start when it came later. */
  #since = 0;
  #timer: unknown;
  #turnOpen = false;
  #stopped = false;

  constructor(timeoutMs: number | undefined, onStall: (silentMs: number) => void, clock: WatchdogClock = realClock) {
    this.#timeoutMs = timeoutMs;
    this.#onStall = onStall;
    this.#clock = clock;
  }

  /** A new bound, from the next turn on (a task handed to a run that waited for one brings its own). */
  set timeoutMs(ms: number | undefined) {
    this.#timeoutMs = ms;
  }

  /** Epoch milliseconds of the child's last line (event or rejected line); undefined before the first. */
  get lastEventAt(): number | undefined {
    return this.#lastEventAt;
  }

  /** The child wrote a line. */
  seen(): void {
    const now = this.#clock.now();
    this.#lastEventAt = now;
    this.#since = now;
  }

  turnStarted(): void {
    if (this.#turnOpen || this.#stopped) return;
    this.#turnOpen = true;
    this.#since = this.#clock.now();
    this.#arm(this.#timeoutMs);
  }

  turnCompleted(): void {
    this.#turnOpen = false;
    this.#disarm();
  }

  /** The run is ending: no more checks (lastEventAt stays readable). */
  stop(): void {
    this.#stopped = true;
    this.#turnOpen = false;
    this.#disarm();
  }

  #arm(ms: number | undefined): void {
    if (ms === undefined || this.#timer !== undefined) return;
    this.#timer = this.#clock.setTimeout(() => this.#check(), ms);
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #check(): void {
    this.#timer = undefined;
    if (!this.#turnOpen || this.#stopped || this.#timeoutMs === undefined) return;
    const silent = this.#clock.now() - this.#since;
    if (silent < this.#timeoutMs) {
      this.#arm(this.#timeoutMs - silent);
      return;
    }
    this.stop();
    this.#onStall(silent);
  }
}
