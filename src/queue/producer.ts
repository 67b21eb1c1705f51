// createQueueSupervisor: enqueues runs as BullMQ jobs (job id = run id), follows their streams, relays controls and cancels.
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { closeRedis, createRedis, redisOptions } from './connection.js';
import { queuePeers } from './peers.js';
import { QUEUE_DASHBOARD_OPTION_KEYS, QUEUE_SUPERVISOR_OPTION_KEYS, REMOTE_SPAWN_OPTION_KEYS } from './option-keys.js';
import { refuseUnknownKeys } from '../text/option-keys.js';
import { childlessOutcome } from '../run/outcome.js';
import { parseRecord, queueKeys, resolveRetention } from './records.js';
import type { JobData, QueueKeys } from './records.js';
import { RemoteRunImpl } from './remote-run.js';
import type { RemoteRunContext } from './remote-run.js';
import { StreamReader } from './stream-reader.js';
import { activeContext, carrierOf } from '../observe/carriers.js';
import { queueBoardSource } from './board-source.js';
import type { FollowedRuns, QueuedRunInfo } from './board-source.js';
import type { Dashboard } from '../dashboard/types.js';
import type { QueueDashboardOptions } from './types.js';
import type { QueueSupervisor, QueueSupervisorOptions, RemoteRun, RemoteSpawnOptions, Retention } from './types.js';
import { UsageBook } from '../pool/ledger.js';
import type { UsageLedger } from '../pool/ledger.js';

/** Creates the producer side of a queue: `spawn()` enqueues runs that queue workers (`startWorker`) run. */
export function createQueueSupervisor(options: QueueSupervisorOptions): QueueSupervisor {
  return new QueueSupervisorImpl(options);
}

/** At most this many live jobs, and the newest this many finished ones, are looked at per look of a dashboard's discovery. */
const DISCOVERED_LIVE = 500;
const DISCOVERED_FINISHED = 100;


class QueueSupervisorImpl implements QueueSupervisor {
  readonly #keys: QueueKeys;
  readonly #retention: Retention | undefined;
  readonly #controlTimeoutMs: number;
  readonly #checkIntervalMs: number;
  readonly #highWaterMark: number;
  readonly #commands: Redis;
  readonly #readerClient: Redis;
  readonly #queue: Queue;
  readonly #reader: StreamReader;
  readonly #runs = new Map<string, RemoteRunImpl>();
  /** Runs whose job is known to exist (enqueued by us, or attached): only those are checked against BullMQ. */
  readonly #checkable = new Set<RemoteRunImpl>();
  /** The enqueue of each run spawned here, awaited before a cancel looks for the job. */
  readonly #enqueued = new Map<string, Promise<unknown>>();
  readonly #checkTimer: NodeJS.Timeout;
  readonly #errors: Array<(error: Error) => void> = [];
  /** Every attempt of the runs followed here, as their outcomes come. */
  readonly #book = new UsageBook();
  /** What each followed run's job says (its profile and task), for a dashboard; and the dashboards watching. */
  readonly #infos = new Map<string, QueuedRunInfo>();
  readonly #watchers = new Set<(run: RemoteRun, info: QueuedRunInfo) => void>();
  #closed: Promise<void> | undefined;

  constructor(options: QueueSupervisorOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('createQueueSupervisor needs an options object');
    refuseUnknownKeys(options, QUEUE_SUPERVISOR_OPTION_KEYS, 'createQueueSupervisor');
    this.#keys = queueKeys(options.queue, options.prefix);
    resolveRetention(options.retention);
    this.#retention = options.retention;
    this.#controlTimeoutMs = positiveOption('controlTimeoutMs', options.controlTimeoutMs, 30_000);
    this.#checkIntervalMs = positiveOption('checkIntervalMs', options.checkIntervalMs, 5_000);
    this.#highWaterMark = options.highWaterMark ?? 1024;
    if (!Number.isInteger(this.#highWaterMark) || this.#highWaterMark < 1) throw new RangeError('options.highWaterMark must be an integer >= 1');
    const onError = (error: Error) => {
      for (const listener of this.#errors) listener(error);
    };
    const connection = redisOptions(options.connection);
    this.#commands = createRedis(connection, onError);
    this.#readerClient = createRedis(connection, onError);
    this.#queue = new (queuePeers().bullmq.Queue)(this.#keys.queue, { connection, prefix: this.#keys.prefix });
    this.#queue.on('error', onError);
    this.#reader = new StreamReader(this.#readerClient, this.#commands, onError);
    this.#checkTimer = setInterval(() => void this.#checkQuiet(), this.#checkIntervalMs);
  }

  /** Connection problems (Redis down, a failed read); they never end a run by themselves. */
  onError(listener: (error: Error) => void): void {
    this.#errors.push(listener);
  }

  /** A failed check against BullMQ: reported, unless the producer is closing (its connections go away). */
  #report(error: Error): void {
    if (this.#closed !== undefined) return;
    for (const listener of this.#errors) listener(new Error(`checking a run against its job failed: ${error.message}`));
  }

  usage(): UsageLedger {
    return this.#book.snapshot();
  }

  async ready(): Promise<void> {
    await Promise.all([this.#queue.waitUntilReady(), this.#commands.ping()]);
  }

  spawn(options: RemoteSpawnOptions): RemoteRun {
    if (this.#closed !== undefined) throw new Error('the queue supervisor is closed: spawn() accepts no more runs');
    const { data, runId, jobOptions } = this.#jobOf(options);
    const existing = this.#runs.get(runId);
    if (existing !== undefined) return existing;
    const run = this.#follow(runId, { profile: data.profile, task: data.task });
    const enqueued = this.#queue.add('run', data, jobOptions).then(
      () => this.#checkable.add(run),
      (error: Error) => run.settle(childlessOutcome(runId, 'failed', 'channel-error', `the run could not be enqueued: ${error.message}`)),
    );
    this.#enqueued.set(runId, enqueued);
    return run;
  }

  attach(runId: string): RemoteRun {
    if (this.#closed !== undefined) throw new Error('the queue supervisor is closed: attach() follows no more runs');
    if (typeof runId !== 'string' || runId.length === 0) throw new TypeError('attach needs a run id');
    const existing = this.#runs.get(runId);
    if (existing !== undefined) return existing;
    return this.#attach(runId, { profile: undefined, task: undefined });
  }

  async serveDashboard(options: QueueDashboardOptions = {}): Promise<Dashboard> {
    if (typeof options !== 'object' || options === null) throw new TypeError('serveDashboard needs an options object');
    refuseUnknownKeys(options, QUEUE_DASHBOARD_OPTION_KEYS, 'qs.serveDashboard');
    const { runs = 'followed', discoverIntervalMs = 2000, ...served } = options;
    if (runs !== 'followed' && runs !== 'queue') throw new TypeError("options.runs must be 'followed' or 'queue'");
    if (typeof discoverIntervalMs !== 'number' || !Number.isFinite(discoverIntervalMs) || discoverIntervalMs < 100) {
      throw new RangeError('options.discoverIntervalMs must be a number of milliseconds >= 100');
    }
    const followed: FollowedRuns = { watch: (listener) => this.#watch(listener), discover: (intervalMs) => this.#discover(intervalMs) };
    // Loaded when first served, like the pool's.
    const { serveDashboard } = await import('../dashboard/server.js');
    return serveDashboard(queueBoardSource(followed, runs === 'queue', discoverIntervalMs), served);
  }

  /** Follows a run of the queue from its job (attach, or a dashboard's discovery). */
  #attach(runId: string, info: QueuedRunInfo): RemoteRun {
    const run = this.#follow(runId, info);
    this.#checkable.add(run);
    // A run that finished long ago (stream expired) or never existed is settled from its job at once.
    run.lastRecordAt = 0;
    this.#check(run).catch((error: Error) => this.#report(error));
    return run;
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      clearInterval(this.#checkTimer);
      for (const run of [...this.#runs.values()]) run.detach();
      await this.#reader.close();
      // BullMQ's connection reports a connect cut short by close() as an 'error' after it dropped its
      // listeners, which would throw: let it finish connecting first (unless Redis is down for long).
      await Promise.race([this.#queue.waitUntilReady().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      await this.#queue.close().catch(() => undefined);
      await Promise.all([closeRedis(this.#commands), closeRedis(this.#readerClient)]);
    })();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #jobOf(options: RemoteSpawnOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('spawn needs an options object');
    refuseUnknownKeys(options, REMOTE_SPAWN_OPTION_KEYS, "qs.spawn (a queued run names a profile: the command is the worker's)");
    const { profile, task, timeoutMs, keepAlive, attempts = 1, backoffMs = 0, priority = 0 } = options;
    if (typeof profile !== 'string' || profile.length === 0) throw new TypeError('options.profile must be a non-empty string');
    if (task !== undefined && typeof task !== 'string') throw new TypeError('options.task must be a string');
    if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0)) throw new RangeError('options.timeoutMs must be a positive number');
    if (keepAlive !== undefined && typeof keepAlive !== 'boolean') throw new TypeError('options.keepAlive must be a boolean');
    if (!Number.isInteger(attempts) || attempts < 1 || attempts > 1000) throw new RangeError('options.attempts must be an integer from 1 to 1000');
    if (typeof backoffMs !== 'number' || !Number.isFinite(backoffMs) || backoffMs < 0) throw new RangeError('options.backoffMs must be a number >= 0');
    if (!Number.isInteger(priority) || priority < 0 || priority > 2_097_152) throw new RangeError('options.priority must be an integer from 0 to 2097152');
    const runId = options.runId ?? randomUUID();
    if (typeof runId !== 'string' || runId.length === 0 || /[\s\0]/.test(runId) || /^\d+$/.test(runId)) {
      throw new TypeError('options.runId must be a non-empty string without spaces or NUL, and not only digits (BullMQ keeps those for its own ids)');
    }
    const retention = resolveRetention(this.#retention, options.retention);
    const data: JobData = { v: 1, profile, attempts, maxEvents: retention.maxEvents, ttlMs: retention.ttlMs };
    if (task !== undefined) data.task = task;
    if (timeoutMs !== undefined) data.timeoutMs = timeoutMs;
    if (keepAlive !== undefined) data.keepAlive = keepAlive;
    // The caller's trace context rides with the job: the worker parents each attempt's span under it.
    const trace = carrierOf(activeContext());
    if (Object.keys(trace).length > 0) data.trace = trace;
    const keepSeconds = Math.ceil(retention.ttlMs / 1000);
    const jobOptions = {
      jobId: runId,
      attempts,
      backoff: { type: 'fixed', delay: backoffMs },
      priority,
      // Finished jobs stay as long as their streams, so an enqueue of the same id meanwhile is a duplicate.
      removeOnComplete: { age: keepSeconds },
      removeOnFail: { age: keepSeconds },
    };
    return { data, runId, jobOptions };
  }

  #follow(runId: string, info: QueuedRunInfo): RemoteRunImpl {
    const context: RemoteRunContext = {
      streamKey: this.#keys.events(runId),
      highWaterMark: this.#highWaterMark,
      controlTimeoutMs: this.#controlTimeoutMs,
      publish: async (message) => {
        await this.#commands.publish(this.#keys.controls, JSON.stringify(message));
      },
      cancelQueued: (id) => this.#cancelQueued(id),
      wake: () => this.#reader.wake(),
      release: (run) => {
        this.#reader.remove(run);
        this.#checkable.delete(run);
        this.#enqueued.delete(run.id);
        if (this.#runs.get(run.id) === run) {
          this.#runs.delete(run.id);
          this.#infos.delete(run.id);
        }
      },
      attemptEnded: (outcome) => this.#book.add(outcome),
    };
    const run = new RemoteRunImpl(runId, context);
    this.#runs.set(runId, run);
    this.#infos.set(runId, info);
    this.#reader.add(run);
    for (const watcher of this.#watchers) watcher(run, info);
    return run;
  }

  /** Hands `listener` every run followed now and every one followed later. */
  #watch(listener: (run: RemoteRun, info: QueuedRunInfo) => void): () => void {
    this.#watchers.add(listener);
    for (const run of [...this.#runs.values()]) listener(run, this.#infos.get(run.id) ?? { profile: undefined, task: undefined });
    return () => this.#watchers.delete(listener);
  }

  /**
   * Follows every run of the queue: the jobs BullMQ holds (waiting, delayed, prioritized, active, and the last
   * finished ones), looked at every `intervalMs`. Returns a function that stops looking.
   */
  #discover(intervalMs: number): () => void {
    const seen = new Set<string>();
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const look = async () => {
      try {
        const states = ['active', 'waiting', 'delayed', 'prioritized', 'paused', 'waiting-children'] as const;
        // The finished ones too, every time: a run that started and ended between two looks is shown all the same.
        const finished = await this.#queue.getJobs(['completed', 'failed'], 0, DISCOVERED_FINISHED - 1);
        const jobs = [...finished, ...(await this.#queue.getJobs([...states], 0, DISCOVERED_LIVE - 1))];
        for (const job of jobs) {
          const id = job?.id;
          if (stopped || this.#closed !== undefined || id === undefined || job.name !== 'run' || seen.has(id)) continue;
          seen.add(id);
          if (this.#runs.has(id)) continue;
          const data = (typeof job.data === 'object' && job.data !== null ? job.data : {}) as Partial<JobData>;
          this.#attach(id, { profile: typeof data.profile === 'string' ? data.profile : undefined, task: typeof data.task === 'string' ? data.task : undefined });
        }
      } catch (error) {
        this.#report(error as Error);
      }
      if (!stopped && this.#closed === undefined) {
        timer = setTimeout(() => void look(), intervalMs);
        timer.unref();
      }
    };
    void look();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }

  /** Marks the run cancelled; when no worker holds its job, removes the job and writes the run's end to its stream. */
  async #cancelQueued(runId: string): Promise<boolean> {
    await this.#enqueued.get(runId);
    const retention = resolveRetention(this.#retention);
    await this.#commands.set(this.#keys.cancelled(runId), '1', 'PX', retention.ttlMs);
    const job = await this.#queue.getJob(runId);
    if (job === undefined) return false;
    const state = await job.getState();
    if (!['waiting', 'delayed', 'prioritized', 'waiting-children'].includes(state)) return false;
    try {
      await job.remove();
    } catch {
      return false; // a worker took it meanwhile: it sees the cancel mark, and the relayed cancel follows
    }
    const outcome = childlessOutcome(runId, 'cancelled', 'aborted', 'the run was cancelled while queued; it never started');
    const key = this.#keys.events(runId);
    const data = job.data as Partial<JobData>;
    const maxEvents = String(typeof data.maxEvents === 'number' ? data.maxEvents : retention.maxEvents);
    const exit = { type: 'exit', status: 'cancelled', synthetic: true, run: runId, error: outcome.error };
    await this.#commands
      .pipeline()
      .xadd(key, 'MAXLEN', maxEvents, '*', 'r', JSON.stringify({ k: 'event', a: Math.max(1, job.attemptsStarted), t: Date.now(), e: exit }))
      .xadd(key, 'MAXLEN', maxEvents, '*', 'r', JSON.stringify({ k: 'outcome', outcome }))
      .pexpire(key, retention.ttlMs)
      .exec();
    return true;
  }

  /** Runs that got no record for a check interval: did their job end in BullMQ without an outcome record? */
  async #checkQuiet(): Promise<void> {
    const now = Date.now();
    for (const run of [...this.#checkable]) {
      if (now - run.lastRecordAt >= this.#checkIntervalMs) await this.#check(run).catch((error: Error) => this.#report(error));
    }
  }

  async #check(run: RemoteRunImpl): Promise<void> {
    const state = await this.#queue.getJobState(run.id);
    if (state !== 'failed' && state !== 'completed' && state !== 'unknown') return;
    // The stream's last record is the outcome when the worker wrote one: the reader delivers it.
    const last = await this.#commands.xrevrange(this.#keys.events(run.id), '+', '-', 'COUNT', 1);
    const fields = last[0]?.[1];
    if (fields !== undefined) {
      const parsed = parseRecord(fields[fields.indexOf('r') + 1] ?? '');
      if (parsed.ok && parsed.record.k === 'outcome') return;
    }
    if (run.ended) return;
    if (state === 'unknown') {
      run.settle(childlessOutcome(run.id, 'failed', 'worker-lost', 'the run has no job in the queue (never enqueued, or removed after its retention) and its stream holds no outcome'));
      return;
    }
    const job = await this.#queue.getJob(run.id);
    if (state === 'completed' && job?.returnvalue !== undefined && typeof job.returnvalue === 'object' && job.returnvalue !== null) {
      run.settle(job.returnvalue);
      return;
    }
    const reason = job?.failedReason ?? 'the job failed';
    run.settle(childlessOutcome(run.id, 'failed', 'worker-lost', `the run's job failed in the queue without an outcome: ${reason}`));
  }
}

function positiveOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new RangeError(`options.${name} must be a positive number of milliseconds`);
  return value;
}
