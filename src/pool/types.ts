// Public types of the supervisor pool: its options, the pooled Run handle, retries, counts and shutdown.
import type { EventEmitter } from 'eventemitter3';
import type { BudgetLimits, Outcome, Run, RunEvent, RunOptions, SharedBudget, StreamIterator } from '../api/types.js';
import type { UsageLedger } from './ledger.js';
import type { Dashboard, DashboardOptions } from '../dashboard/types.js';
import type { PoolClock } from './clock.js';
import type { RateLimitGateState } from './rate-limit-gate.js';

export type { UsageLedger, UsageTotals } from './ledger.js';
export type { PoolClock, PoolTimer } from './clock.js';
export type { RateLimitGateState } from './rate-limit-gate.js';

/**
 * When and how a run that ended badly is run again. Each retry is a new run (a new id, a new process)
 * queued like any other, linked to the attempt before it by {@link PoolRun.retryOf}.
 */
export interface RetryPolicy {
  /** Total attempts, the first one included (so `attempts: 3` means up to two retries). At least 1. */
  attempts: number;
  /**
   * Wait before a retry is queued, in milliseconds: a number, or a function of the attempt about to
   * start (2 for the first retry) and the outcome that triggers it. Default 0.
   */
  backoff?: number | ((attempt: number, outcome: Outcome) => number);
  /**
   * Whether this outcome is worth another attempt. Default: `failed`, `timed-out`, or stalled
   * (`errorCode: 'stalled'`). Whatever it says,
   * a run ended by the caller (cancel, terminate, kill, abort signal) or by a supervisor shutdown or a
   * parent signal is never retried.
   */
  when?: (outcome: Outcome) => boolean;
}

/**
 * Per-run options of {@link Supervisor.spawn}: run options (merged over the defaults) plus pool fields.
 * `budget` is merged limit by limit over the pool's `budget.perRun`; `T` types `outcome.data`.
 */
export interface PoolSpawnOptions<T = unknown> extends Partial<RunOptions<T>> {
  /** Higher starts sooner; equal priorities start in spawn order. Default 0. */
  priority?: number;
  /** Retries of this run, overriding the supervisor's `retry`; `false` turns them off. */
  retry?: RetryPolicy | false;
}

/** The budget of a pool (see {@link SupervisorOptions.budget}). */
export interface PoolBudget {
  /**
   * Limits on the pool's runs together, counted live from what every run reports (retried attempts
   * included). Once one is reached the running runs are stopped as a run at its own limit is (closed,
   * finalized or cancelled), and every queued run (and any later spawn) ends `cancelled` with
   * `errorCode: 'budget-exceeded'` without ever starting. `sup.budget` shows what was spent.
   */
  total?: BudgetLimits;
  /** Limits of every run (a spawn's own `budget` overrides them limit by limit). */
  perRun?: BudgetLimits;
}

/** Options of {@link createSupervisor}. */
export interface SupervisorOptions {
  /** How many runs may be live at once: live process trees, not promises. An integer >= 1. */
  concurrency: number;
  /**
   * Run options every `spawn()` starts from. `spawn(options)` is merged over them key by key, except
   * `env`, which is merged variable by variable (`defaults.env` then `options.env`).
   */
  defaults?: Partial<RunOptions>;
  /** Retries for every run (a `spawn` can override it). Default: none. */
  retry?: RetryPolicy;
  /**
   * A pool-wide `total` and a `perRun` budget (see {@link PoolBudget}); each limit must be a figure the
   * runs' protocol reports (spawn() throws otherwise). Per-run limits go here, not in `defaults.budget`.
   */
  budget?: PoolBudget;
  /**
   * `true` (default): SIGINT/SIGTERM of the parent stop the whole pool at once through the same
   * handlers as a lone run (no second set is installed): nothing queued starts, every running tree
   * is cancelled and reaped, then the signal takes its normal course. `false`: your program handles
   * the signals (call `shutdown()` from your handler). This value is also given to every run, whatever
   * its own `handleParentSignals` says.
   */
  handleParentSignals?: boolean;
  /**
   * Backpressure of {@link Supervisor.events}: while one of its iterators holds more than this many
   * entries, the pool stops taking events from the runs (each run then pauses like a run whose own
   * iterator is full). Default 1024.
   */
  highWaterMark?: number;
  /** The same in bytes (what the entries' events took on the wire). Default 1 MiB. */
  highWaterBytes?: number;
  /**
   * How a run starts once it has a slot. Default `spawnRun`, whose option checks also run at `spawn()`,
   * before anything is queued. Another function (a wrapper that adds your own tracing, or a test's
   * `createInMemoryRun`) gets the merged options and checks them itself, when the run starts.
   */
  start?: (options: RunOptions) => Run;
  /**
   * Every run of the pool is durable (`RunOptions.durable`, Fen only): it outlives this process, and a
   * pool of a later process re-attaches to it with {@link Supervisor.reattach}.
   */
  durable?: { leaseMs?: number };
  /**
   * Warm children: this many children per start profile are kept started and waiting in `ready` (their
   * protocol's first point of waiting for a prompt), so `spawn({ task })` hands the task to one already
   * waiting instead of starting a child. A start profile is every option but the task's own (`task`, `runId`,
   * `timeoutMs`/`deadline`, `budget`, `outputSchema`, `outputInstructions`, `keepAlive`, `stallTimeoutMs`,
   * `ackTimeoutMs`, `signal`, `journal`, `tracing`), which apply from the hand-off. The pool's own profile
   * (`defaults`) is warmed at once, any other once a run of it is spawned. Each child holds a slot of
   * `concurrency`, behind every run waiting for one (a waiting child is closed for such a run); one that dies
   * waiting is replaced (after 1 s, 2 s, 4 s... up to 60 s while replacements keep dying); one that waits
   * `idleMs` (default 60000) is closed and not replaced until its profile is asked for again. Not for runs
   * with their own `runId` or `durable`, nor protocols that need the task to start (HEP, fuseraft-bridge:
   * their runs start cold, with a warning). See docs/api.md#warm-children. Default: none.
   */
  warm?: number | { size: number; idleMs?: number };
  /**
   * Which rate-limit gate a run waits at and reports to, from its options (merged over `defaults`): runs
   * of one account or provider share one. Default: one gate for the whole pool (`'default'`).
   */
  rateLimitKey?: (options: RunOptions) => string;
  /**
   * The rate-limit gate (docs/api.md#the-rate-limit-gate): when a run reports `limited` news, no run of its
   * gate starts (nor is handed to a warm child) until the later of the news' `retryAfterMs` and `resetsAt`
   * (`holdMs`, default 10000, when it names neither; at most `maxHoldMs`, default 900000); then one run may
   * start, and every `rampMs` (default 2000) twice as many as in the step before, until `concurrency` would.
   * Runs already going are not touched. `false`: no gate.
   */
  rateLimit?: false | { holdMs?: number; maxHoldMs?: number; rampMs?: number };
  /** The clock of the pool's own timers (the gate, warm children's idle close and back-off): tests pass their own. Default: the system clock. */
  clock?: PoolClock;
}

/** How {@link Supervisor.shutdown} treats runs that are running (queued runs are always cancelled). */
export type ShutdownMode = 'finalize' | 'cancel' | 'kill';

export interface ShutdownOptions {
  /**
   * `finalize` (default): ask each run for its answer (`finalize()`); a run that refuses or cannot
   * take it is terminated. `cancel`: `terminate()` each run (cancel, then the kill ladder).
   * `kill`: `kill()` each run (SIGKILL now).
   */
  mode?: ShutdownMode;
  /**
   * After this many milliseconds, whatever still runs is killed (SIGKILL). Default: no extra limit:
   * each run's own `finalizeGraceMs` and kill ladder (`killGraceMs`) bound the wait.
   */
  graceMs?: number;
}

/** How many runs are where. Final outcomes count each task once; a retried attempt counts in `retried`. */
export interface SupervisorCounts {
  /** Waiting for a slot (including retries waiting out their backoff). */
  queued: number;
  /** Holding a slot: started and not yet reaped. */
  running: number;
  done: number;
  failed: number;
  timedOut: number;
  cancelled: number;
  /** Attempts that ended and were followed by a retry. */
  retried: number;
  /** Warm children started and not handed a task (starting, waiting, or being closed): each holds a slot. */
  warm: number;
}

/**
 * A run of a supervisor: a {@link Run} handle returned at once, before a slot is free.
 *
 * **While queued** (`state === 'queued'`, no process, `pid` undefined): listeners and iterators can be
 * attached (events begin when it starts); `cancel()` resolves `{ status: 'accepted', seq: 0 }` (no
 * control line is written: `seq` 0) and `terminate()`, `kill()`, the abort signal and disposal end it
 * too; it then ends `cancelled` (errorCode `aborted`) without ever spawning. Every other control
 * (`prompt`, `steer`, `followUp`, `finalize`, `close`) rejects with a `ControlRefusedError` of code
 * `queued`: there is no child to hear it yet. `timeoutMs` counts from the start, not from `spawn()`;
 * an absolute `deadline` that passes while queued ends the run `timed-out` (errorCode `deadline`)
 * without spawning.
 *
 * **Once started** it behaves exactly as a run from `spawnRun`.
 */
export interface PoolRun<T = unknown> extends Run<T> {
  /** 1 for the first attempt, 2 for the first retry, and so on. */
  readonly attempt: number;
  /** The attempt this one retries (undefined for a first attempt). */
  readonly retryOf: PoolRun | undefined;
  /** The retry that followed this attempt, once its outcome called for one. */
  readonly nextAttempt: PoolRun | undefined;
  /** The outcome of the last attempt of this task: its own outcome unless it was retried. Never rejects. */
  readonly finalOutcome: Promise<Outcome<T>>;
  /** Its priority in the queue (see {@link PoolSpawnOptions.priority}). */
  readonly priority: number;
}

/** One entry of {@link Supervisor.events}: an event and the run it belongs to. */
export interface PoolEvent {
  run: PoolRun;
  event: RunEvent;
}

/** Options of {@link Supervisor.events}. */
export interface PoolEventsOptions {
  /**
   * `false` (default): the iterable ends once the supervisor is shut down and every run has ended.
   * `true`: it ends the first time it finds the pool idle (nothing queued or running) with nothing
   * left to yield: when the pool goes idle, or when the consumer asks for more while it is idle. So
   * spawn the runs before you start consuming it (opening it earlier is fine).
   */
  untilIdle?: boolean;
}

/** Listener map of a {@link Supervisor}. Listeners must not throw. */
export interface SupervisorEvents {
  /** A run was accepted by `spawn()` (or queued as a retry). */
  queued: (run: PoolRun) => void;
  /** A run took a slot and is starting. */
  start: (run: PoolRun) => void;
  /**
   * A run ended; emitted for every attempt, after the run's own `outcome` event. When the attempt is
   * retried, `run.nextAttempt` is already set (and the `retry` event came first).
   */
  outcome: (outcome: Outcome, run: PoolRun) => void;
  /** `previous` ended with `outcome` and is retried by `next` (queued after the backoff). */
  retry: (next: PoolRun, previous: PoolRun, outcome: Outcome) => void;
  /**
   * Nothing is queued or running and every run's tree is gone (warm children may be waiting: `shutdown()`
   * or their `idleMs` closes them).
   */
  idle: () => void;
  /** A rate-limit gate shut, moved its time, stepped its reopening, opened (`state: 'open'`), or a run began or stopped waiting at it. */
  'rate-limit': (gate: RateLimitGateState) => void;
}

/**
 * A pool that runs subagents with at most `concurrency` live process trees. Created by
 * {@link createSupervisor}; `await using sup = createSupervisor(...)` shuts it down (`cancel`) at the
 * end of the scope.
 */
export interface Supervisor extends EventEmitter<SupervisorEvents>, AsyncDisposable {
  /**
   * Queues a run and returns its handle at once. `options` is merged over the supervisor's `defaults`.
   * Throws synchronously on invalid options (like `spawnRun`) and with a {@link SupervisorClosedError}
   * once `shutdown()` was called; nothing is queued then.
   */
  spawn<T = unknown>(options?: PoolSpawnOptions<T>): PoolRun<T>;
  /** The concurrency limit; can be raised or lowered at any time (running runs are never stopped for it). */
  concurrency: number;
  /** Runs holding a slot (started, not yet reaped). */
  readonly running: number;
  /** Runs waiting for a slot. */
  readonly queued: number;
  /** A snapshot of the counts. */
  readonly counts: SupervisorCounts;
  /**
   * Every rate-limit gate that is not open, by key (`'default'` without `rateLimitKey`): shut until when,
   * or how many may start in this step of its reopening, how many runs wait at it, and the news that shut
   * it. Empty when every gate is open.
   */
  readonly rateLimited: Readonly<Record<string, RateLimitGateState>>;
  /** The pool's `budget.total` (what its runs spent so far, live, and the limit reached), or undefined without one. */
  readonly budget: SharedBudget | undefined;
  /**
   * Tokens and cost of every run that ended (each attempt), summed, by protocol, by model and by outcome
   * status, with `complete: false` when a run that ran reported no usage (see {@link UsageLedger}).
   */
  usage(): UsageLedger;
  /** True once `shutdown()` was called (or a parent signal stopped the pool). */
  readonly closed: boolean;
  /** Resolves when nothing is queued or running and every tree is gone (at once when idle now). */
  onIdle(): Promise<void>;
  /**
   * Re-attaches to every durable run under `stateDir` (default: the pool's `defaults.stateDir`, else
   * `os.tmpdir()`) that a restarted orchestrator left behind: a record, a live child, no live parent
   * holding its lease. Each is a run of this pool, queued like any other and counted against its
   * concurrency, started with `attachRun`; never retried (its task is the earlier process's).
   */
  reattach(options?: { stateDir?: string }): PoolRun[];
  /**
   * Every event of every run as `{ run, event }`, in order per run, from the runs that start after the
   * call (and, for runs already running, from the call on, plus what they retained if nobody iterated
   * them yet). Same backpressure as a run's own iterator (see `highWaterMark`). Each call is its own
   * iterator; breaking out of the loop detaches it.
   */
  events(options?: PoolEventsOptions): StreamIterator<PoolEvent>;
  /**
   * Stops accepting runs (a later `spawn()` throws), cancels every queued run (and pending retry),
   * stops the running ones as `mode` says, and resolves with the final counts once every tree is gone.
   * Calling it again with a stronger mode (finalize < cancel < kill) escalates.
   */
  shutdown(options?: ShutdownOptions): Promise<SupervisorCounts>;
  /** `shutdown({ mode: 'cancel' })`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
  /**
   * Serves a live page of this pool's runs on 127.0.0.1 (docs/observability.md): every run with its state,
   * task, elapsed time, turns, tokens, cost and last event; a run's event stream, answer and controls. Open
   * the returned `url` (it holds the page's token); `close()` it when done: it keeps the process alive.
   */
  serveDashboard(options?: DashboardOptions): Promise<Dashboard>;
}
