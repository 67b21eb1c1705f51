// createSupervisor: a p-queue of runs that bounds live process trees, with counts, events, retries, a pool-wide budget, the usage ledger, the rate-limit gates, warm children and shutdown.
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import PQueue from 'p-queue';
import { GuardedEmitter } from '../run/guarded-emitter.js';
import { MAX_TIMER_MS } from '../run/run-timers.js';
import { registerLiveRun, unregisterLiveRun } from '../process/shutdown.js';
import type { ShutdownParticipant } from '../process/shutdown.js';
import { attachableRuns, attachRun } from '../api/attach-run.js';
import { checkRunOptions, RUN_DEFAULTS, spawnRun } from '../api/spawn-run.js';
import { handOff } from '../api/hand-off.js';
import type { Outcome, Run, RunOptions, SharedBudget, StreamIterator } from '../api/types.js';
import { checkConcurrency, checkPoolBudget, mergeOptions, SPAWN_OPTION_KEYS, SUPERVISOR_OPTION_KEYS } from './pool-options.js';
import { OPTION_KEYS as RUN_OPTION_KEYS } from '../api/option-checks.js';
import { refuseUnknownKeys } from '../text/option-keys.js';
import { notStartedOn } from '../run/run-budget.js';
import { openAccount } from '../run/shared-budget.js';
import type { SharedBudgetAccount } from '../run/shared-budget.js';
import { UsageBook } from './ledger.js';
import type { UsageLedger } from './ledger.js';
import { SupervisorClosedError } from './errors.js';
import { PoolEventTaps } from './event-taps.js';
import { PooledRun } from './pooled-run.js';
import { activeContext } from '../observe/carriers.js';
import { poolBoardSource } from './board-source.js';
import type { Dashboard, DashboardOptions } from '../dashboard/types.js';
import type { Context } from '@opentelemetry/api';
import { backoffMs, checkRetryPolicy, shouldRetry } from './retry.js';
import { checkClock } from './clock.js';
import type { PoolClock } from './clock.js';
import { checkRateLimitOptions, RateLimitGates } from './rate-limit-gate.js';
import type { RateLimitGateState } from './rate-limit-gate.js';
import { startProfileOf } from './start-profile.js';
import type { StartProfile } from './start-profile.js';
import { checkWarmOptions, WarmPool } from './warm-pool.js';
import type { WarmChild, WarmHost } from './warm-pool.js';
import type {
  PoolEvent,
  PoolEventsOptions,
  PoolRun,
  PoolSpawnOptions,
  RetryPolicy,
  ShutdownMode,
  ShutdownOptions,
  Supervisor,
  SupervisorCounts,
  SupervisorEvents,
  SupervisorOptions,
} from './types.js';

const MODE_STRENGTH: Record<ShutdownMode, number> = { finalize: 0, cancel: 1, kill: 2 };
const SHUTDOWN_OPTION_KEYS = Object.keys({ mode: true, graceMs: true } satisfies Record<keyof ShutdownOptions, true>);
const EVENTS_OPTION_KEYS = Object.keys({ untilIdle: true } satisfies Record<keyof PoolEventsOptions, true>);
/** The rate-limit gate of a pool without `rateLimitKey`, and of re-attached runs. */
const DEFAULT_GATE = 'default';
/** Warm children start behind every run waiting for a slot (a run's priority is finite). */
const WARM_PRIORITY = -Infinity;

/** Creates a pool that runs at most `concurrency` supervised runs (live process trees) at once. */
export function createSupervisor(options: SupervisorOptions): Supervisor {
  return new PoolSupervisor(options);
}

/** What the pool keeps per live run besides the handle. */
interface Entry {
  policy: RetryPolicy | undefined;
  /** Whether the caller chose the run id (then retries get `<id>-attempt-<n>`). */
  explicitId: boolean;
  /** The rate-limit gate it waits at and reports to. */
  gate: string;
  /** A pending backoff before the run is queued. */
  backoffTimer?: NodeJS.Timeout;
  /** The warm child its task goes to, until it is handed over. */
  warm?: WarmChild;
  /** While it waits at its rate-limit gate: takes it out. */
  leaveGate?: () => void;
  /**
   * Counted as running (its slot taken), whether or not its child started: a run whose start failed (a journal
   * it could not open) ends without one, and must leave `running`, not `queued`.
   */
  running?: boolean;
}

class PoolSupervisor extends GuardedEmitter<SupervisorEvents> implements Supervisor {
  readonly #queue: PQueue;
  readonly #defaults: Partial<RunOptions>;
  /** How a run starts (spawnRun, or the caller's own). */
  readonly #startRun: ((options: RunOptions) => Run) | undefined;
  readonly #retry: RetryPolicy | undefined;
  readonly #signals: boolean;
  readonly #taps: PoolEventTaps;
  /** Every run not yet settled: queued, waiting out a backoff, or running. */
  readonly #live = new Map<PooledRun, Entry>();
  readonly #counts: Omit<SupervisorCounts, 'warm'> = { queued: 0, running: 0, done: 0, failed: 0, timedOut: 0, cancelled: 0, retried: 0 };
  /** `budget.total`: every run draws on it. */
  readonly #total: SharedBudgetAccount | undefined;
  readonly #book = new UsageBook();
  #closed = false;
  #mode: ShutdownMode | undefined;
  #killTimer: NodeJS.Timeout | undefined;
  #idleWaiters: Array<() => void> = [];
  readonly #controllers = new WeakMap<PooledRun, AbortController>();
  #registered = false;
  readonly #clock: PoolClock;
  /** The caller's `rateLimitKey`. */
  readonly #gateKey: ((options: RunOptions) => string) | undefined;
  /** The rate-limit gates (none with `rateLimit: false`). */
  readonly #gates: RateLimitGates | undefined;
  readonly #warm: WarmPool | undefined;
  /** Warm children and the run each is bound to until its task is handed over. */
  readonly #bound = new Map<WarmChild, PooledRun>();
  /**
   * The pool's place in the run core's shutdown registry (the same SIGINT/SIGTERM handlers as every
   * run): on a parent signal nothing more starts and every queued run ends; the registry itself stops
   * the running runs, which are registered with the same signal setting.
   */
  readonly #participant: ShutdownParticipant = {
    shutdown: () => {
      this.#close('parent-shutdown', 'the parent process is shutting down; the run never started');
      this.#warm?.stop('cancel');
      return this.#allGone();
    },
    killNow: () => this.#queue.clear(),
  };

  constructor(options: SupervisorOptions) {
    super();
    if (typeof options !== 'object' || options === null) throw new TypeError('createSupervisor needs an options object');
    refuseUnknownKeys(options, SUPERVISOR_OPTION_KEYS, 'createSupervisor');
    checkConcurrency(options.concurrency);
    const defaults = options.defaults ?? {};
    if (typeof defaults !== 'object' || defaults === null) throw new TypeError('options.defaults must be an object');
    // Checked here too, not only at spawn(): a pool with a start of its own never meets spawnRun's check.
    refuseUnknownKeys(defaults, RUN_OPTION_KEYS, 'spawnRun', 'options.defaults');
    this.#defaults = { ...defaults, ...(options.durable === undefined ? {} : { durable: options.durable }) };
    const { total, perRun } = checkPoolBudget(options.budget, defaults.budget);
    if (perRun !== undefined) this.#defaults.budget = perRun;
    this.#total = total === undefined ? undefined : openAccount(total, 'options.budget.total');
    if (options.start !== undefined && typeof options.start !== 'function') throw new TypeError('options.start must be a function');
    this.#startRun = options.start;
    this.#retry = checkRetryPolicy(options.retry, 'options.retry');
    this.#signals = options.handleParentSignals ?? true;
    const highWaterMark = options.highWaterMark ?? RUN_DEFAULTS.highWaterMark;
    if (!Number.isInteger(highWaterMark) || highWaterMark < 1) throw new RangeError('options.highWaterMark must be an integer >= 1');
    const highWaterBytes = options.highWaterBytes ?? RUN_DEFAULTS.highWaterBytes;
    if (!Number.isInteger(highWaterBytes) || highWaterBytes < 1) throw new RangeError('options.highWaterBytes must be an integer >= 1');
    this.#taps = new PoolEventTaps({ events: highWaterMark, bytes: highWaterBytes }, () => ({ idle: this.#live.size === 0, closed: this.#closed }));
    this.#queue = new PQueue({ concurrency: options.concurrency });
    this.#clock = checkClock(options.clock);
    if (options.rateLimitKey !== undefined && typeof options.rateLimitKey !== 'function') throw new TypeError('options.rateLimitKey must be a function of the run options');
    this.#gateKey = options.rateLimitKey;
    const gateOptions = checkRateLimitOptions(options.rateLimit);
    this.#gates = gateOptions === undefined ? undefined : new RateLimitGates(gateOptions, this.#clock, () => this.#queue.concurrency, (state) => this.emit('rate-limit', state));
    const warm = checkWarmOptions(options.warm);
    this.#warm = warm === undefined ? undefined : new WarmPool(warm, this.#clock, this.#warmHost());
    // The pool's own profile is warm from the start; every other one once a run of it is spawned.
    if (this.#warm !== undefined && this.#defaults.command !== undefined && this.#defaults.durable === undefined) {
      const profile = startProfileOf(mergeOptions(this.#defaults, {}, this.#signals));
      this.#warm.fill(profile, this.#gateOf(profile.options));
    }
    // Spent: nothing queued starts (a running run is stopped by its own share of the budget).
    this.#total?.watch(() => {
      for (const run of [...this.#live.keys()]) if (!run.started) this.#endSpent(run);
    });
  }

  get concurrency(): number {
    return this.#queue.concurrency;
  }

  set concurrency(value: number) {
    checkConcurrency(value);
    this.#queue.concurrency = value;
  }

  get running(): number {
    return this.#counts.running;
  }

  get queued(): number {
    return this.#counts.queued;
  }

  get counts(): SupervisorCounts {
    return { ...this.#counts, warm: this.#warm?.live ?? 0 };
  }

  get rateLimited(): Record<string, RateLimitGateState> {
    return this.#gates?.states() ?? {};
  }

  get closed(): boolean {
    return this.#closed;
  }

  get budget(): SharedBudget | undefined {
    return this.#total;
  }

  usage(): UsageLedger {
    return this.#book.snapshot();
  }

  spawn<T = unknown>(options: PoolSpawnOptions<T> = {}): PoolRun<T> {
    if (this.#closed) throw new SupervisorClosedError('the supervisor is shut down: spawn() accepts no more runs');
    if (typeof options !== 'object' || options === null) throw new TypeError('spawn needs an options object');
    refuseUnknownKeys(options, SPAWN_OPTION_KEYS, 'sup.spawn');
    const { priority = 0, retry, ...runOptions } = options;
    if (typeof priority !== 'number' || !Number.isFinite(priority)) throw new RangeError('options.priority must be a finite number');
    const policy = retry === undefined ? this.#retry : checkRetryPolicy(retry, 'options.retry');
    const merged = mergeOptions(this.#defaults, runOptions as Partial<RunOptions>, this.#signals);
    if (this.#total !== undefined) {
      if (merged.budget?.shared !== undefined) throw new TypeError("options.budget.shared: a run of a pool with budget.total draws on the pool's total");
      merged.budget = { ...merged.budget, shared: this.#total };
    }
    const explicitId = merged.runId !== undefined;
    const gate = this.#gateOf(merged);
    const resolved = { ...merged, runId: merged.runId ?? randomUUID() };
    // Throws on invalid options, like spawnRun, before anything is queued (a caller's own start checks its own).
    if (this.#startRun === undefined) checkRunOptions(resolved);
    const profile = this.#warmProfileOf(merged, explicitId);
    // A warm child of its profile takes the task: the run is that child's (its id too).
    const warm = profile === undefined ? undefined : this.#warm!.take(profile.key);
    const run = this.#create(warm === undefined ? resolved : { ...resolved, runId: warm.run.id }, priority, 1, undefined, activeContext());
    this.#admit(run, { policy, explicitId, gate, ...(warm === undefined ? {} : { warm }) }, 0);
    if (profile !== undefined) this.#warm!.fill(profile, gate);
    return run as PoolRun<T>;
  }

  reattach(options: { stateDir?: string } = {}): PoolRun[] {
    if (this.#closed) throw new SupervisorClosedError('the supervisor is shut down: reattach() accepts no more runs');
    const stateDir = options.stateDir ?? this.#defaults.stateDir ?? tmpdir();
    return attachableRuns(stateDir).map((runId) => {
      const start = () => attachRun({ runId, stateDir, handleParentSignals: this.#signals });
      const run = this.#create({ runId, command: `(re-attached durable run ${runId})` }, 0, 1, undefined, activeContext(), start);
      this.#admit(run, { policy: undefined, explicitId: true, gate: DEFAULT_GATE }, 0);
      return run;
    });
  }

  onIdle(): Promise<void> {
    if (this.#live.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  events(options: PoolEventsOptions = {}): StreamIterator<PoolEvent> {
    if (typeof options !== 'object' || options === null) throw new TypeError('events needs an options object (or none)');
    refuseUnknownKeys(options, EVENTS_OPTION_KEYS, 'sup.events()');
    const queue = this.#taps.open(options.untilIdle === true);
    for (const run of this.#live.keys()) run.startPump();
    return queue;
  }

  shutdown(options: ShutdownOptions = {}): Promise<SupervisorCounts> {
    if (typeof options !== 'object' || options === null) throw new TypeError("shutdown takes an options object ({ mode, graceMs }), as in shutdown({ mode: 'kill' })");
    refuseUnknownKeys(options, SHUTDOWN_OPTION_KEYS, 'sup.shutdown()');
    const mode = options.mode ?? 'finalize';
    if (!(mode in MODE_STRENGTH)) throw new TypeError(`options.mode must be 'finalize', 'cancel' or 'kill', not ${String(mode)}`);
    const { graceMs } = options;
    if (graceMs !== undefined && (typeof graceMs !== 'number' || !Number.isFinite(graceMs) || graceMs < 0)) {
      throw new RangeError('options.graceMs must be a finite number of milliseconds >= 0');
    }
    this.#close('aborted', 'the supervisor shut down before the run started');
    if (this.#mode === undefined || MODE_STRENGTH[mode] > MODE_STRENGTH[this.#mode]) {
      this.#mode = mode;
      for (const run of this.#live.keys()) if (run.started) stopRunning(run, mode);
      this.#warm?.stop(mode);
    }
    if (graceMs !== undefined && this.#live.size + (this.#warm?.live ?? 0) > 0) {
      const timer = setTimeout(() => {
        for (const run of this.#live.keys()) void run.kill('the supervisor shutdown grace ran out');
        this.#warm?.stop('kill');
      }, Math.min(graceMs, MAX_TIMER_MS));
      // The earliest grace wins; the timer goes when every tree is gone.
      if (this.#killTimer === undefined) this.#killTimer = timer;
      else clearTimeout(timer);
    }
    return this.#allGone().then(() => {
      if (this.#killTimer !== undefined) clearTimeout(this.#killTimer);
      this.#killTimer = undefined;
      return this.counts;
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.shutdown({ mode: 'cancel' });
  }

  async serveDashboard(options: DashboardOptions = {}): Promise<Dashboard> {
    // Loaded when first served: a pool that never shows a page never loads the server.
    const { serveDashboard } = await import('../dashboard/server.js');
    return serveDashboard(poolBoardSource(this, () => this.#live.keys()), options);
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Internals                                                                                      */
  /* ---------------------------------------------------------------------------------------------- */

  /** A new handle; its AbortController takes it out of the p-queue when it is cancelled while queued. */
  #create(
    options: RunOptions & { runId: string },
    priority: number,
    attempt: number,
    retryOf: PooledRun | undefined,
    traceContext: Context,
    start: (options: RunOptions) => Run = this.#startRun ?? spawnRun,
  ): PooledRun {
    const controller = new AbortController();
    // spawnRun's default protocol; a caller's own start names its own in the outcome (a re-attached run is Fen's).
    const protocol = options.protocol ?? (this.#startRun === undefined ? 'fen' : undefined);
    const run = new PooledRun({ options, protocol, priority, attempt, retryOf, taps: this.#taps, dequeue: () => controller.abort(), start, traceContext });
    this.#controllers.set(run, controller);
    return run;
  }

  #admit(run: PooledRun, entry: Entry, delayMs: number): void {
    this.#live.set(run, entry);
    this.#counts.queued++;
    this.#updateRegistration();
    void run.outcome.then((outcome) => this.#settled(run, entry, outcome));
    // Its news, from whichever child does its work (a warm child's before the hand-off comes through the warm pool).
    if (this.#gates !== undefined) run.on('rate-limit', (report) => this.#gates!.report(entry.gate, run.id, report));
    this.emit('queued', run);
    if (entry.warm !== undefined) this.#bound.set(entry.warm, run);
    if (this.#total?.exceeded !== undefined) {
      this.#endSpent(run);
    } else if (entry.warm !== undefined) {
      // On a later tick, as a queued run's start: the caller holds the handle (and its listeners) by then.
      queueMicrotask(() => this.#handOff(run));
    } else if (delayMs > 0) {
      entry.backoffTimer = setTimeout(() => {
        entry.backoffTimer = undefined;
        this.#enqueue(run);
      }, delayMs);
    } else {
      this.#enqueue(run);
    }
  }

  #enqueue(run: PooledRun): void {
    if (run.ended) return;
    const signal = this.#controllers.get(run)?.signal;
    this.#queue
      .add(() => this.#start(run), { priority: run.priority, id: run.id, signal })
      // Rejects only when the run was taken out of the queue (cancelled while queued): nothing to do.
      .catch(() => undefined);
    // Runs before warmth: a run waiting for a slot a warm child holds while it waits for a task gets it.
    if (this.#runsWaitingForSlots > 0) this.#warm?.evictIdle();
  }

  /** Runs (not warm children) in the queue waiting for a slot. */
  get #runsWaitingForSlots(): number {
    return this.#queue.size - this.#queue.sizeBy({ priority: WARM_PRIORITY });
  }

  #start(run: PooledRun): Promise<void> {
    if (run.ended) return Promise.resolve();
    if (this.#total?.exceeded !== undefined) {
      this.#endSpent(run);
      return Promise.resolve();
    }
    // Its gate is shut: it gives the slot back and waits there, to be queued again when the gate lets it.
    if (!this.#passGate(run, () => this.#enqueue(run))) return Promise.resolve();
    this.#counts.queued--;
    this.#counts.running++;
    const entry = this.#live.get(run);
    if (entry !== undefined) entry.running = true;
    const settled = run.start();
    this.emit('start', run);
    return settled;
  }

  #settled(run: PooledRun, entry: Entry, outcome: Outcome): void {
    if (entry.backoffTimer !== undefined) clearTimeout(entry.backoffTimer);
    entry.leaveGate?.();
    if (entry.warm !== undefined) {
      // It ended before its task was handed over: the child waits for another.
      this.#bound.delete(entry.warm);
      this.#warm?.unbind(entry.warm);
    }
    if (entry.running === true) this.#counts.running--;
    else this.#counts.queued--;
    this.#book.add(outcome);
    const spent = this.#total?.exceeded !== undefined;
    const retry = !this.#closed && !spent && !run.endedByCaller && shouldRetry(entry.policy, run.attempt, outcome);
    if (retry) {
      const base = run.runOptions;
      const attempt = run.attempt + 1;
      const rootId = (run.retryOf === undefined ? run : rootOf(run)).id;
      const runId = entry.explicitId ? `${rootId}-attempt-${attempt}` : randomUUID();
      // A retry's span is a sibling of the attempt before it, under the caller's context.
      const delayMs = backoffMs(entry.policy!, attempt, outcome);
      // A retry that goes at once may take a warm child (one waiting out a backoff would hold it idle).
      const profile = delayMs > 0 ? undefined : this.#warmProfileOf(base, entry.explicitId);
      const warm = profile === undefined ? undefined : this.#warm!.take(profile.key);
      const next = this.#create({ ...base, runId: warm?.run.id ?? runId }, run.priority, attempt, run, run.traceContext);
      run.retriedBy(next);
      this.#counts.retried++;
      this.emit('retry', next, run, outcome);
      this.#admit(next, { policy: entry.policy, explicitId: entry.explicitId, gate: entry.gate, ...(warm === undefined ? {} : { warm }) }, delayMs);
      if (profile !== undefined) this.#warm!.fill(profile, entry.gate);
    } else {
      this.#count(outcome);
      run.settleFinal(outcome);
    }
    this.#live.delete(run);
    this.emit('outcome', outcome, run);
    if (this.#live.size === 0) this.#becameIdle();
  }

  #count(outcome: Outcome): void {
    switch (outcome.status) {
      case 'done':
        this.#counts.done++;
        break;
      case 'failed':
        this.#counts.failed++;
        break;
      case 'timed-out':
        this.#counts.timedOut++;
        break;
      case 'cancelled':
        this.#counts.cancelled++;
        break;
    }
  }

  #becameIdle(): void {
    this.#updateRegistration();
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
    this.#taps.idle();
    this.emit('idle');
  }

  /** The pool's total is spent: a run that has not started ends without starting. */
  #endSpent(run: PooledRun): void {
    const entry = this.#live.get(run);
    if (entry?.backoffTimer !== undefined) clearTimeout(entry.backoffTimer);
    if (entry !== undefined) entry.backoffTimer = undefined;
    const { error, exceeded } = notStartedOn(this.#total!);
    const { shared: _shared, ...limits } = run.runOptions.budget ?? {};
    run.endQueued('budget-exceeded', error, { limits, sharedLimits: { ...this.#total!.limits }, used: {}, exceeded });
  }

  /** Stops accepting and ends every run that has not started (queued, waiting out a backoff or at its gate, bound to a warm child). */
  #close(code: 'aborted' | 'parent-shutdown', error: string): void {
    this.#closed = true;
    this.#taps.idle(); // already idle: the events() iterators end now
    this.#queue.clear();
    this.#gates?.close();
    for (const [run, entry] of [...this.#live]) {
      if (run.started) continue;
      if (entry.backoffTimer !== undefined) clearTimeout(entry.backoffTimer);
      entry.backoffTimer = undefined;
      run.endQueued(code, error);
    }
  }

  /** Resolves once no run is live and no warm child is left: every tree is gone. */
  #allGone(): Promise<void> {
    return Promise.all([this.onIdle(), this.#warm?.whenGone()]).then(() => undefined);
  }

  /** The pool is in the parent-signal registry while any run or warm child is live. */
  #updateRegistration(): void {
    const live = this.#live.size > 0 || (this.#warm?.live ?? 0) > 0;
    if (live && !this.#registered) registerLiveRun(this.#participant, this.#signals);
    else if (!live && this.#registered) unregisterLiveRun(this.#participant);
    this.#registered = live;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Rate-limit gates and warm children                                                              */
  /* ---------------------------------------------------------------------------------------------- */

  /** The gate of a run's options: the caller's `rateLimitKey`, else the pool's one gate. */
  #gateOf(options: RunOptions): string {
    if (this.#gateKey === undefined) return DEFAULT_GATE;
    const key = this.#gateKey(options);
    if (typeof key !== 'string' || key === '') throw new TypeError('options.rateLimitKey must return a non-empty string');
    return key;
  }

  /**
   * Whether `run` may start now; else it waits at its gate and `resume` is called when the gate lets it
   * through (it asks again then).
   */
  #passGate(run: PooledRun, resume: () => void): boolean {
    const entry = this.#live.get(run);
    if (this.#gates === undefined || entry === undefined || this.#gates.admit(entry.gate)) return true;
    entry.leaveGate = this.#gates.wait(entry.gate, {
      priority: run.priority,
      resume: () => {
        entry.leaveGate = undefined;
        resume();
      },
    });
    return false;
  }

  /** The start profile of a run that may take a warm child (the caller chose no id, not durable); undefined otherwise. */
  #warmProfileOf(options: RunOptions, explicitId: boolean): StartProfile | undefined {
    if (this.#warm === undefined || explicitId || options.durable !== undefined) return undefined;
    return startProfileOf(options);
  }

  /**
   * A run bound to a warm child: its task is handed over once the child is ready and the gate lets it; it then
   * holds the child's slot. The child's `ready` calls this again; a refused hand-off ended the run.
   */
  #handOff(run: PooledRun): void {
    const entry = this.#live.get(run);
    const child = entry?.warm;
    if (entry === undefined || child === undefined || run.ended || child.run.state !== 'ready') return;
    if (this.#total?.exceeded !== undefined) return this.#endSpent(run);
    if (!this.#passGate(run, () => this.#handOff(run))) return;
    entry.warm = undefined;
    this.#bound.delete(child);
    if (!run.startWarm(child.run, (warm) => handOff(warm, run.runOptions, run.traceContext))) {
      this.#warm?.unbind(child);
      return;
    }
    this.#warm?.handedOff(child);
    this.#counts.queued--;
    this.#counts.running++;
    entry.running = true;
    this.emit('start', run);
  }

  /** What the warm children need of the pool: its queue, its start, and what becomes of the runs bound to them. */
  #warmHost(): WarmHost {
    const pool = this;
    return {
      get closed() {
        return pool.#closed;
      },
      enqueue: (job) => void this.#queue.add(job, { priority: WARM_PRIORITY }).catch(() => undefined),
      start: (options) => (this.#startRun ?? spawnRun)(options),
      ready: (child) => {
        const run = this.#bound.get(child);
        if (run !== undefined) this.#handOff(run);
      },
      lost: (child) => {
        const run = this.#bound.get(child);
        this.#bound.delete(child);
        const entry = run === undefined ? undefined : this.#live.get(run);
        if (run === undefined || entry === undefined) return;
        // The child died before the hand-off: the run starts as any other, under the child's id (its own now).
        entry.warm = undefined;
        entry.leaveGate?.();
        entry.leaveGate = undefined;
        this.#enqueue(run);
      },
      rateLimit: (child, report) => this.#gates?.report(child.gate, child.run.id, report),
      changed: () => this.#updateRegistration(),
      slotWanted: () => this.#runsWaitingForSlots > 0,
    };
  }
}

/** The task of a retry chain: its first attempt. */
function rootOf(run: PooledRun): PooledRun {
  let root = run;
  while (root.retryOf !== undefined) root = root.retryOf;
  return root;
}

/** Stops a running run as a shutdown `mode` asks. */
function stopRunning(run: PooledRun, mode: ShutdownMode): void {
  if (run.ended) return;
  const reason = 'the supervisor is shutting down';
  if (mode === 'kill') {
    void run.kill(reason);
  } else if (mode === 'cancel') {
    void run.terminate(reason);
  } else {
    // A run that cannot take a finalize now (starting, already ending, refused) is terminated instead.
    run.finalize(reason).then(
      (ack) => {
        if (ack.status !== 'accepted' && ack.status !== 'applied') void run.terminate(reason);
      },
      () => void run.terminate(reason),
    );
  }
}
