// Public types of subvisor/queue: producer and worker options, profiles, the RemoteRun handle and the worker handle.
import type { EventEmitter } from 'eventemitter3';
import type { RedisOptions } from 'ioredis';
import type { ProtocolName } from '../api/registry.js';
import type { Ack, AckOrigin, Delivery, Outcome, RunEvent, RunHandleState, RunOptions } from '../api/types.js';
import type { WireControlType } from '../wire/index.js';
import type { UsageLedger } from '../pool/ledger.js';
import type { Dashboard, DashboardOptions } from '../dashboard/types.js';

/** Where Redis is: a `redis://` URL, or ioredis options (host, port, password, tls, ...). */
export type RedisConnection = string | RedisOptions;

/** What every producer and worker of one queue must agree on. */
export interface QueueAddress {
  /** The Redis server (the same for producers and workers). */
  connection: RedisConnection;
  /** The queue name: producers and workers with the same name (and prefix) share the runs. */
  queue: string;
  /** Prefix of every Redis key (BullMQ's and subvisor's). Default `subvisor`. */
  prefix?: string;
}

/** How much of a run's event stream Redis keeps, for a producer that reads late or re-attaches. */
export interface Retention {
  /**
   * Most records kept in the run's Redis stream (XADD MAXLEN): older ones are trimmed, and a producer
   * reading behind sees an `info` event saying how many it missed. Default 10000.
   */
  maxEvents?: number;
  /**
   * How long the stream and the finished job stay in Redis after the last write, in milliseconds: the
   * window for `attach()` and for duplicate detection (an enqueue with the id of a run still kept does not
   * start a second run). Default 3600000 (one hour).
   */
  ttlMs?: number;
}

/** Options of {@link createQueueSupervisor}. */
export interface QueueSupervisorOptions extends QueueAddress {
  /** Retention of every run's events (a spawn can override it). */
  retention?: Retention;
  /**
   * How long a relayed control waits for the worker's answer before it resolves `unanswered`. Default 30000.
   */
  controlTimeoutMs?: number;
  /**
   * How often a run that got no record for a while is checked against its BullMQ job (failed for good,
   * removed), in milliseconds. Default 5000.
   */
  checkIntervalMs?: number;
  /** Backpressure: a run whose iterator holds more than this many events is not read from Redis until it drains. Default 1024. */
  highWaterMark?: number;
}

/** Options of {@link QueueSupervisor.spawn}. Only what a worker's profile allows: never a command line. */
export interface RemoteSpawnOptions {
  /** The name of a profile defined on the workers (see {@link WorkerProfile}). */
  profile: string;
  /** The first prompt. */
  task?: string;
  /** The run id, which is also the BullMQ job id: an enqueue with an id already queued, running or kept starts no second run. Default: a random UUID. */
  runId?: string;
  /** Time budget of each attempt, from its start on the worker (capped by the profile's `limits.maxTimeoutMs`). Default: the profile's `limits.timeoutMs`, else 2700000 (45 minutes). */
  timeoutMs?: number;
  /** Keep the run open in `ready` for more prompts (see `RunOptions.keepAlive`). Default false. */
  keepAlive?: boolean;
  /**
   * How many times the run may start, whatever ended the attempt before: a worker that died or lost its
   * lock (a stall), or an attempt that ended `failed` or `timed-out`. A run ended by a cancel is never
   * retried. Default 1 (no retry).
   */
  attempts?: number;
  /** Wait before a retry of an attempt that ended failed or timed out, in milliseconds. Default 0. */
  backoffMs?: number;
  /** BullMQ priority (1 is the highest; 0, the default, means none). */
  priority?: number;
  /** Retention of this run's events, over the supervisor's. */
  retention?: Retention;
}

/** Listener map of a {@link RemoteRun}. Listeners must not throw. */
export interface RemoteRunEvents {
  /** Every event, in order, as the iterator yields it. */
  event: (event: RunEvent) => void;
  /** The state changed. */
  state: (state: RunHandleState, previous: RunHandleState) => void;
  /** An attempt started on a worker (`attempt` 1 is the first). */
  attempt: (attempt: number, worker: string) => void;
  /** A control was answered on the worker (the task prompt, subvisor's own, or one of yours). */
  ack: (ack: Ack, control: WireControlType | 'kill', origin: AckOrigin) => void;
  /** The run ended; emitted once, right before `outcome` resolves. */
  outcome: (outcome: Outcome) => void;
}

/**
 * A run on a queue worker, seen from the producer: the same events, acks and outcome as a local `Run`.
 *
 * **Iteration** yields every event in order, read from the run's Redis stream from its start; the
 * first iterator also gets the events that arrived before it. When an attempt is retried (its worker died,
 * or it ended failed and `attempts` allows more), an `info` event with `queue: 'attempt'` comes before the
 * new attempt's events (which start over from `ready`); only the last attempt's `exit` is yielded, so the
 * stream still ends with exactly one `exit`.
 */
export interface RemoteRun extends EventEmitter<RemoteRunEvents>, AsyncIterable<RunEvent>, AsyncDisposable {
  /** The run id (also the BullMQ job id). */
  readonly id: string;
  /** `queued` until a worker starts it, then the state mirrored from the worker. */
  readonly state: RunHandleState;
  /** The current attempt (0 while no worker has started it). */
  readonly attempt: number;
  /** The id of the worker running the current attempt, once one started it. */
  readonly worker: string | undefined;
  /** True once the outcome is settled. */
  readonly ended: boolean;
  /** Resolves exactly once with the final outcome (of the last attempt); never rejects. */
  readonly outcome: Promise<Outcome>;
  /** The ack of the task prompt of the current attempt (`undefined` without a task or when the run ended first). Never rejects. */
  readonly taskAck: Promise<Ack | undefined>;
  prompt(text: string): Promise<Ack>;
  steer(text: string): Promise<Ack>;
  followUp(text: string): Promise<Ack>;
  finalize(note?: string): Promise<Ack>;
  /**
   * Cancels the run wherever it is: still queued (it is removed from the queue and ends `cancelled`
   * without starting), or running (the worker cancels it, within a second). A cancelled run is never retried.
   */
  cancel(): Promise<Ack>;
  close(): Promise<Ack>;
  /** `cancel()`, then resolves with the outcome. */
  terminate(reason?: string): Promise<Outcome>;
  /** Asks the worker to SIGKILL the run's tree now; resolves with the outcome. */
  kill(reason?: string): Promise<Outcome>;
  /** Stops following the run (the run itself goes on); iterators end, `outcome` stays pending unless it came. */
  detach(): void;
  [Symbol.asyncIterator](): AsyncIterator<RunEvent, undefined>;
  /** `terminate()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The producer side: enqueues runs and follows them. */
export interface QueueSupervisor extends AsyncDisposable {
  /** Enqueues a run (BullMQ job id = run id) and returns its handle at once. Throws synchronously on invalid options. */
  spawn(options: RemoteSpawnOptions): RemoteRun;
  /** Follows a run enqueued earlier (by this or another producer): its events are replayed from the start of its stream. */
  attach(runId: string): RemoteRun;
  /** Resolves once the queue's Redis connections are up. */
  ready(): Promise<void>;
  /**
   * Tokens and cost of the runs this producer spawned or attached, summed over every attempt that ended
   * (the outcome of each retried attempt comes with its retry record), by protocol, model and status;
   * `complete: false` when one that ran reported no usage. A run that is detached before it ends is not in it.
   */
  usage(): UsageLedger;
  /** Connection problems (Redis unreachable, a failed read). They never end a run by themselves: the runs wait for Redis. */
  onError(listener: (error: Error) => void): void;
  /** Detaches every run (they go on running) and closes the Redis connections. */
  close(): Promise<void>;
  /**
   * Serves a live page of this producer's runs on 127.0.0.1 (docs/observability.md), or with `runs: 'queue'`
   * of every run of the queue. Open the returned `url` (it holds the page's token); `close()` it before the
   * producer: it keeps the process alive.
   */
  serveDashboard(options?: QueueDashboardOptions): Promise<Dashboard>;
}

/** Options of {@link QueueSupervisor.serveDashboard}. */
export interface QueueDashboardOptions extends DashboardOptions {
  /**
   * `followed` (default): the runs this producer spawned or attached. `queue`: every run of the queue,
   * whoever enqueued it: the jobs BullMQ holds (the live ones, and the newest 100 finished), looked at every
   * `discoverIntervalMs`, each attached and read from its stream.
   */
  runs?: 'followed' | 'queue';
  /** How often `runs: 'queue'` looks for new jobs. Default 2000. */
  discoverIntervalMs?: number;
}

/** A child the workers may start, by name: the queue never carries a command line. */
export interface WorkerProfile {
  command: string;
  args?: string[];
  /** Environment of the child, over the worker's own. */
  env?: Record<string, string>;
  protocol?: ProtocolName;
  /** Working directory of the child. */
  cwd?: string;
  limits?: ProfileLimits;
  /** Bounds on what each run's process tree may use: spawnRun's `limits` (memory, CPU seconds, processes, open files). */
  treeLimits?: RunOptions['limits'];
  /** Each run's child under bubblewrap: spawnRun's `sandbox`. */
  sandbox?: RunOptions['sandbox'];
}

/** Bounds a producer cannot exceed. Durations in milliseconds. */
export interface ProfileLimits {
  /** Time budget when the producer gives none. Default: spawnRun's, 2700000 (45 minutes); a queued run always has one. */
  timeoutMs?: number;
  /** Largest `timeoutMs` a producer may ask for (a larger one is cut to it). Default: no cap. */
  maxTimeoutMs?: number;
  killGraceMs?: number;
  readyTimeoutMs?: number;
  finalizeGraceMs?: number;
  stallTimeoutMs?: number;
  /** Largest answer shipped back through Redis, in bytes (UTF-8); a longer one is cut and marked truncated. Default 1048576. */
  maxAnswerBytes?: number;
}

/** What a worker does with the runs it holds when it is closed (or gets SIGTERM). */
export type WorkerShutdownMode = 'finish' | 'hand-back';

/** Options of {@link startWorker}. */
export interface WorkerOptions extends QueueAddress {
  /** Runs held at once by this worker (live process trees). Default 1. */
  concurrency?: number;
  /** The children this worker may start, by name. */
  profiles: Record<string, WorkerProfile>;
  /**
   * How long a job's lock lasts without renewal (renewed every half of it). A worker that dies is noticed
   * after its lock expired, at the next stalled check of any worker: pick-up takes up to
   * `lockDurationMs + stalledIntervalMs`. Default 30000 (BullMQ's).
   */
  lockDurationMs?: number;
  /** How often this worker looks for stalled jobs. Default 30000 (BullMQ's). */
  stalledIntervalMs?: number;
  /**
   * Safety cap on stall recoveries of one job, whatever its `attempts` (past it BullMQ fails the job for
   * good). `attempts` is the bound users set; this only stops a job that kills every worker it lands on
   * when `attempts` is large. Default 10.
   */
  maxStalledCount?: number;
  /** `finish` (default): on close, take no new job and let the running ones end. `hand-back`: stop them and put their jobs back in the queue for another worker. */
  shutdown?: WorkerShutdownMode;
  /** `finish` only: after this long, the runs still going are handed back. Default: no limit. */
  shutdownGraceMs?: number;
  /** `true`: SIGTERM and SIGINT close the worker (`shutdown` mode), a second signal hands back at once. Default false. */
  handleSignals?: boolean;
  /** A name for this worker in events and logs. Default `<hostname>:<pid>`. */
  name?: string;
  /** Where run directories are made (see `RunOptions.stateDir`). */
  stateDir?: string;
}

/** Listener map of a {@link QueueWorker}. */
export interface QueueWorkerEvents {
  /** A run started on this worker. */
  start: (runId: string, attempt: number) => void;
  /** A run held by this worker ended (or was handed back: `handedBack` true). */
  end: (runId: string, outcome: Outcome | undefined, handedBack: boolean) => void;
  /** Something went wrong that did not end a run (Redis unreachable, a bad job, ...). */
  error: (error: Error) => void;
}

/** A running worker. */
export interface QueueWorker extends EventEmitter<QueueWorkerEvents>, AsyncDisposable {
  /** The worker's name (see {@link WorkerOptions.name}). */
  readonly name: string;
  /** Runs held now. */
  readonly running: number;
  /** Resolves once the worker is connected and taking jobs. */
  ready(): Promise<void>;
  /** Stops taking jobs, ends or hands back the held runs (`mode`, default the worker's `shutdown`), closes every connection and the run host. */
  close(mode?: WorkerShutdownMode): Promise<void>;
}

export type { Delivery };
