// The pool's rate-limit gates, one per key: shut by a run's `limited` news until its retry-after or reset has passed, then opened gradually (one start, then twice as many each step).
import type { RateLimitFields } from '../api/types.js';
import type { PoolClock, PoolTimer } from './clock.js';

/** The gate's times (see {@link SupervisorOptions.rateLimit}). */
export interface RateLimitGateOptions {
  /** How long `limited` news that names no time shuts the gate. */
  holdMs: number;
  /** The longest one report shuts it (a later report may shut it again). */
  maxHoldMs: number;
  /** How long each step of the reopening lasts: one start in the first, two in the next, then four... */
  rampMs: number;
}

/** Defaults of {@link RateLimitGateOptions}. */
export const RATE_LIMIT_DEFAULTS: RateLimitGateOptions = { holdMs: 10_000, maxHoldMs: 15 * 60_000, rampMs: 2_000 };

/** One gate's state, as `sup.rateLimited` and the `rate-limit` event show it. */
export interface RateLimitGateState {
  /** The key its runs share (`rateLimitKey(options)`; `default` without one). */
  key: string;
  /** `shut`: none of its runs starts. `ramping`: they start a few at a time. `open`: as the pool's slots allow. */
  state: 'shut' | 'ramping' | 'open';
  /** Shut: when the reopening starts (epoch ms). */
  until?: number;
  /** Ramping: how many more may start in this step; the next step (`rampMs` later) lets twice as many. */
  allowance?: number;
  /** Runs waiting at the gate: queued runs whose turn came, and warm hand-offs. */
  waiting: number;
  /** The news that shut it (the latest that moved `until`): which run, what it said, when (epoch ms). */
  cause?: { runId: string; report: RateLimitFields; at: number };
}

/** A run waiting at a gate: its priority (higher goes first, then the earlier), and how it goes on. */
export interface GateWaiter {
  readonly priority: number;
  /** Called once, when the gate lets it through (it then asks {@link RateLimitGates.admit} again). */
  resume(): void;
}

interface Gate {
  key: string;
  phase: 'shut' | 'ramping';
  until: number;
  /** The ramp's step: it lets 2^step starts. */
  step: number;
  allowance: number;
  /** Runs waiting, in the order they go on. */
  waiters: GateWaiter[];
  cause: { runId: string; report: RateLimitFields; at: number };
  timer: PoolTimer | undefined;
}

/**
 * Every gate not open, by key (an open gate is forgotten), with the runs waiting at it. A gate's timer
 * exists only while it is shut or ramping, keeps the process alive only while runs wait at it, and goes
 * with {@link close}.
 */
export class RateLimitGates {
  readonly #options: RateLimitGateOptions;
  readonly #clock: PoolClock;
  /** A gate shut, moved its time, stepped its ramp, opened, or a run began or stopped waiting at it. */
  readonly #changed: (state: RateLimitGateState) => void;
  /** How many runs may be live at once: a ramp whose step lets that many is over. */
  readonly #slots: () => number;
  readonly #gates = new Map<string, Gate>();

  constructor(options: RateLimitGateOptions, clock: PoolClock, slots: () => number, changed: (state: RateLimitGateState) => void) {
    this.#options = options;
    this.#clock = clock;
    this.#slots = slots;
    this.#changed = changed;
  }

  /** Every gate that is not open. */
  states(): Record<string, RateLimitGateState> {
    const states: Record<string, RateLimitGateState> = {};
    for (const gate of this.#gates.values()) states[gate.key] = stateOf(gate);
    return states;
  }

  /**
   * News from a run of `key`: `limited` shuts its gate until the later of `retryAfterMs` and `resetsAt` (else
   * `holdMs`), at most `maxHoldMs` from now; a shut gate's time only ever moves later, a ramping one shuts
   * again. `warning` and `allowed` change nothing: the gate opens by time alone (one run's success says
   * nothing of the limit another run's refusal hit).
   */
  report(key: string, runId: string, report: RateLimitFields): void {
    if (report.status !== 'limited') return;
    const now = this.#clock.now();
    const until = now + this.#holdOf(report, now);
    const cause = { runId, report, at: now };
    const gate = this.#gates.get(key);
    if (gate === undefined) {
      const shut: Gate = { key, phase: 'shut', until, step: 0, allowance: 0, waiters: [], cause, timer: undefined };
      this.#gates.set(key, shut);
      this.#wakeAt(shut, until);
    } else if (gate.phase === 'ramping' || until > gate.until) {
      gate.phase = 'shut';
      gate.until = until;
      gate.allowance = 0;
      gate.cause = cause;
      this.#wakeAt(gate, until);
    } else {
      return;
    }
    this.#changed(stateOf(this.#gates.get(key)!));
  }

  /** Whether a run of `key` may start now: always at an open gate; at a ramping one while its step allows (taking one). */
  admit(key: string): boolean {
    const gate = this.#gates.get(key);
    if (gate === undefined) return true;
    if (gate.phase === 'shut' || gate.allowance === 0) return false;
    gate.allowance--;
    return true;
  }

  /**
   * A run of `key` that {@link admit} refused waits at its gate (higher priority first, then in order) until
   * the gate lets it through; the function returned takes it out (it ended while waiting). While any run
   * waits, the gate's timer keeps the process alive.
   */
  wait(key: string, waiter: GateWaiter): () => void {
    const gate = this.#gates.get(key);
    if (gate === undefined) {
      waiter.resume();
      return () => undefined;
    }
    const at = gate.waiters.findIndex((other) => other.priority < waiter.priority);
    gate.waiters.splice(at === -1 ? gate.waiters.length : at, 0, waiter);
    holdWhileWaited(gate);
    this.#changed(stateOf(gate));
    return () => {
      const index = gate.waiters.indexOf(waiter);
      if (index === -1) return;
      gate.waiters.splice(index, 1);
      holdWhileWaited(gate);
      if (this.#gates.get(gate.key) === gate) this.#changed(stateOf(gate));
    };
  }

  /** Every timer goes, and the runs waiting are forgotten (the pool is shut down and ends them: nothing starts again). */
  close(): void {
    for (const gate of this.#gates.values()) gate.timer?.cancel();
    this.#gates.clear();
  }

  /** The hold of one `limited` report: the later of its times, else `holdMs`; never past `maxHoldMs` (a child's figures are untrusted). */
  #holdOf(report: RateLimitFields, now: number): number {
    const waits: number[] = [];
    if (isTime(report.retryAfterMs)) waits.push(report.retryAfterMs);
    if (isTime(report.resetsAt)) waits.push(report.resetsAt - now);
    const hold = waits.length === 0 ? this.#options.holdMs : Math.max(0, ...waits);
    return Math.min(hold, this.#options.maxHoldMs);
  }

  #wakeAt(gate: Gate, at: number): void {
    gate.timer?.cancel();
    gate.timer = this.#clock.setTimer(() => this.#step(gate), Math.max(0, at - this.#clock.now()));
    holdWhileWaited(gate);
  }

  /** The gate's time came: the first step of the ramp, or the next (twice as many starts), or open. */
  #step(gate: Gate): void {
    gate.timer = undefined;
    if (this.#gates.get(gate.key) !== gate) return;
    gate.step = gate.phase === 'shut' ? 0 : gate.step + 1;
    gate.phase = 'ramping';
    gate.allowance = 2 ** gate.step;
    const open = gate.allowance >= this.#slots();
    if (open) {
      this.#gates.delete(gate.key);
      this.#changed({ key: gate.key, state: 'open', waiting: gate.waiters.length, cause: gate.cause });
    } else {
      this.#wakeAt(gate, this.#clock.now() + this.#options.rampMs);
      this.#changed(stateOf(gate));
    }
    // As many go on as may start (each asks admit() again when its turn for a slot comes); all of them once open.
    const going = gate.waiters.splice(0, open ? gate.waiters.length : gate.allowance);
    holdWhileWaited(gate);
    for (const waiter of going) waiter.resume();
  }
}

/** A gate's timer keeps the process alive while runs wait for it, and only then. */
function holdWhileWaited(gate: Gate): void {
  gate.timer?.hold(gate.waiters.length > 0);
}

function stateOf(gate: Gate): RateLimitGateState {
  const state: RateLimitGateState = { key: gate.key, state: gate.phase, waiting: gate.waiters.length, cause: gate.cause };
  if (gate.phase === 'shut') state.until = gate.until;
  else state.allowance = gate.allowance;
  return state;
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** `options.rateLimit` checked: its times with their defaults, or undefined for `false` (no gate). */
export function checkRateLimitOptions(value: unknown): RateLimitGateOptions | undefined {
  if (value === false) return undefined;
  if (value === undefined) return RATE_LIMIT_DEFAULTS;
  if (typeof value !== 'object' || value === null) throw new TypeError('options.rateLimit must be false or { holdMs, maxHoldMs, rampMs }');
  const checked = { ...RATE_LIMIT_DEFAULTS };
  for (const [name, ms] of Object.entries(value)) {
    if (!(name in RATE_LIMIT_DEFAULTS)) throw new TypeError(`options.rateLimit.${name} is not an option of the gate (holdMs, maxHoldMs, rampMs)`);
    if (ms === undefined) continue;
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw new RangeError(`options.rateLimit.${name} must be a finite number of milliseconds >= 0`);
    checked[name as keyof RateLimitGateOptions] = ms;
  }
  return checked;
}
