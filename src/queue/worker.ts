// startWorker: a BullMQ worker that runs each job's run in the run host thread, streams its records and obeys relayed controls.
import { hostname } from 'node:os';
import { EventEmitter } from 'eventemitter3';
import type { Worker } from 'bullmq';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Outcome, RunEvent } from '../api/types.js';
import { capAnswer, DEFAULT_MAX_ANSWER_BYTES } from './answer-cap.js';
import { closeRedis, createRedis, redisOptions } from './connection.js';
import { queuePeers } from './peers.js';
import { WORKER_OPTION_KEYS } from './option-keys.js';
import { refuseUnknownKeys } from '../text/option-keys.js';
import { childlessOutcome } from '../run/outcome.js';
import { checkProfiles, runOptionsFor } from './profiles.js';
import { checkJobData, DEFAULT_RETENTION, parseControlMessage, queueKeys } from './records.js';
import type { JobData, QueueKeys } from './records.js';
import { RunHost } from './run-host.js';
import { StreamWriter } from './stream-writer.js';
import { contextOf, envWithCarrier } from '../observe/carriers.js';
import { startRunTelemetry } from '../observe/run-telemetry.js';
import type { RunTelemetry } from '../observe/run-telemetry.js';
import type { QueueWorker, QueueWorkerEvents, WorkerOptions, WorkerProfile, WorkerShutdownMode } from './types.js';

/** Starts a worker that takes runs from the queue and runs them with the named profiles. */
export function startWorker(options: WorkerOptions): QueueWorker {
  return new QueueWorkerImpl(options);
}

/** One run this worker holds. */
interface Held {
  attempt: number;
  writer: StreamWriter;
  /** Ended by the producer (cancel, kill): never retried. */
  cancelled: boolean;
  /** Being given back to the queue (worker shutdown). */
  handingBack: boolean;
  /** Its lock was lost: another worker owns the job now, this one writes nothing more. */
  lost: boolean;
  /** Resolves once the run is in the host (or will never be): controls that arrive earlier wait for it. */
  started: Promise<void>;
  /** The attempt's telemetry (its span is a child of the producer's context), fed from the host's messages. */
  telemetry: RunTelemetry | undefined;
}

class QueueWorkerImpl extends EventEmitter<QueueWorkerEvents> implements QueueWorker {
  readonly name: string;
  readonly #keys: QueueKeys;
  readonly #profiles: Record<string, WorkerProfile>;
  readonly #shutdown: WorkerShutdownMode;
  readonly #graceMs: number | undefined;
  readonly #stateDir: string | undefined;
  readonly #commands: Redis;
  readonly #subscriber: Redis;
  readonly #host: RunHost;
  readonly #worker: Worker;
  readonly #held = new Map<string, Held>();
  readonly #subscribed: Promise<unknown>;
  #closing: Promise<void> | undefined;
  #removeSignals: (() => void) | undefined;

  constructor(options: WorkerOptions) {
    super();
    if (typeof options !== 'object' || options === null) throw new TypeError('startWorker needs an options object');
    refuseUnknownKeys(options, WORKER_OPTION_KEYS, 'startWorker');
    this.#keys = queueKeys(options.queue, options.prefix);
    this.#profiles = checkProfiles(options.profiles);
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError('options.concurrency must be an integer >= 1');
    const lockDuration = durationOption('lockDurationMs', options.lockDurationMs, 30_000);
    const stalledInterval = durationOption('stalledIntervalMs', options.stalledIntervalMs, 30_000);
    const maxStalledCount = options.maxStalledCount ?? 10;
    if (!Number.isInteger(maxStalledCount) || maxStalledCount < 0) throw new RangeError('options.maxStalledCount must be an integer >= 0');
    this.#shutdown = options.shutdown ?? 'finish';
    if (this.#shutdown !== 'finish' && this.#shutdown !== 'hand-back') throw new TypeError("options.shutdown must be 'finish' or 'hand-back'");
    this.#graceMs = options.shutdownGraceMs === undefined ? undefined : durationOption('shutdownGraceMs', options.shutdownGraceMs, 0);
    this.#stateDir = options.stateDir;
    this.name = options.name ?? `${hostname()}:${process.pid}`;

    const onError = (error: Error) => this.#error(error);
    const connection = redisOptions(options.connection);
    this.#commands = createRedis(connection, onError);
    this.#subscriber = createRedis(connection, onError);
    this.#host = new RunHost(concurrency, onError);
    this.#subscriber.on('message', (_channel: string, text: string) => this.#control(text));
    this.#subscribed = this.#subscriber.subscribe(this.#keys.controls).catch(onError);
    this.#worker = new (queuePeers().bullmq.Worker)(this.#keys.queue, (job, token) => this.#process(job, token), {
      connection,
      prefix: this.#keys.prefix,
      concurrency,
      lockDuration,
      stalledInterval,
      maxStalledCount,
      name: this.name,
    });
    this.#worker.on('error', onError);
    // BullMQ could not renew these locks in time: the stalled check hands the jobs to another worker,
    // so this worker stops its runs and writes nothing more for them.
    this.#worker.on('lockRenewalFailed', (jobIds) => {
      for (const id of jobIds) {
        const held = this.#held.get(id);
        if (held === undefined || held.lost) continue;
        held.lost = true;
        held.writer.mute();
        this.#host.stop(id, 'the worker lost the job lock; another worker takes the run');
      }
    });
    if (options.handleSignals === true) this.#installSignals();
  }

  get running(): number {
    return this.#held.size;
  }

  async ready(): Promise<void> {
    await Promise.all([this.#worker.waitUntilReady(), this.#subscribed]);
  }

  close(mode: WorkerShutdownMode = this.#shutdown): Promise<void> {
    if (mode !== 'finish' && mode !== 'hand-back') {
      return Promise.reject(new TypeError(`close(mode): mode must be 'finish' or 'hand-back', not ${JSON.stringify(mode)}`));
    }
    if (mode === 'hand-back') this.#handBackAll();
    this.#closing ??= this.#close(mode);
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #close(mode: WorkerShutdownMode): Promise<void> {
    let graceTimer: NodeJS.Timeout | undefined;
    if (mode === 'finish' && this.#graceMs !== undefined) graceTimer = setTimeout(() => this.#handBackAll(), this.#graceMs);
    try {
      // As the producer's queue: a close during BullMQ's connect would surface as a thrown 'error'.
      await Promise.race([this.#worker.waitUntilReady().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      // Takes no new job, then waits for the processors of the held ones to return.
      await this.#worker.close();
    } catch (error) {
      this.#error(error as Error);
    } finally {
      if (graceTimer !== undefined) clearTimeout(graceTimer);
    }
    await this.#host.close();
    this.#removeSignals?.();
    await Promise.all([closeRedis(this.#subscriber), closeRedis(this.#commands)]);
  }

  #handBackAll(): void {
    for (const [id, held] of this.#held) {
      if (held.handingBack || held.lost) continue;
      held.handingBack = true;
      this.#host.stop(id, 'the worker is shutting down; the run goes back to the queue');
    }
  }

  #installSignals(): void {
    let count = 0;
    const onSignal = () => {
      count++;
      void this.close(count === 1 ? this.#shutdown : 'hand-back');
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    this.#removeSignals = () => {
      process.removeListener('SIGTERM', onSignal);
      process.removeListener('SIGINT', onSignal);
    };
  }

  #error(error: Error): void {
    this.emit('error', error);
  }

  /** A control from a producer: obeyed when this worker holds the run, ignored otherwise (another worker does). */
  #control(text: string): void {
    const message = parseControlMessage(text);
    if (message === undefined) {
      this.#error(new Error('ignored a malformed control message on the controls channel'));
      return;
    }
    const held = this.#held.get(message.runId);
    if (held === undefined || held.lost) return;
    if (message.control === 'cancel' || message.control === 'kill') held.cancelled = true;
    void held.started.then(() => this.#host.control(message.runId, message.control, message.text)).then((ack) => {
      held.writer.add({ k: 'ack', a: held.attempt, req: message.req, control: message.control, origin: 'caller', ack });
      held.telemetry?.ack(ack, message.control, 'caller');
    });
  }

  /** One job: checks, the attempt count, the run in the host, then complete, retry or hand back. */
  async #process(job: Job, token: string | undefined): Promise<Outcome> {
    const runId = job.id!;
    const onError = (error: Error) => this.#error(error);
    const checked = checkJobData(job.data);
    const maxEvents = checked.ok ? checked.data.maxEvents : DEFAULT_RETENTION.maxEvents;
    const ttlMs = checked.ok ? checked.data.ttlMs : DEFAULT_RETENTION.ttlMs;
    const writer = new StreamWriter(this.#commands, this.#keys.events(runId), maxEvents, ttlMs, onError);
    const fail = async (outcome: Outcome): Promise<never> => {
      const a = Math.max(1, job.attemptsStarted);
      writer.add({ k: 'attempt', a, worker: this.name });
      writer.add({ k: 'event', a, t: Date.now(), e: exitOf(outcome) });
      writer.add({ k: 'outcome', outcome });
      await writer.flushed();
      throw new (queuePeers().bullmq.UnrecoverableError)(outcome.error);
    };
    if (!checked.ok) return fail(childlessOutcome(runId, 'failed', 'spawn-failed', `the job is not a subvisor run: ${checked.reason}`));
    const data = checked.data;
    const attempt = job.attemptsStarted - (data.handedBack ?? 0);
    if (attempt > data.attempts) {
      return fail(
        childlessOutcome(runId, 'failed', 'worker-lost',
          `attempt ${attempt - 1} of ${data.attempts} was lost with its worker (it died or stopped renewing its lock), and no attempt is left`),
      );
    }
    const profile = Object.hasOwn(this.#profiles, data.profile) ? this.#profiles[data.profile] : undefined;
    if (profile === undefined) {
      return fail(
        childlessOutcome(runId, 'failed', 'spawn-failed',
          `unknown profile ${JSON.stringify(data.profile)}: worker ${this.name} has ${Object.keys(this.#profiles).map((name) => JSON.stringify(name)).join(', ')}`),
      );
    }

    let markStarted!: () => void;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    const held: Held = { attempt, writer, cancelled: false, handingBack: false, lost: false, started, telemetry: undefined };
    this.#held.set(runId, held);
    const previous = attempt === 1 ? undefined : job.attemptsMade >= attempt - 1 ? 'retried' : 'lost';
    writer.add(previous === undefined ? { k: 'attempt', a: attempt, worker: this.name } : { k: 'attempt', a: attempt, worker: this.name, previous });
    this.emit('start', runId, attempt);
    let outcome: Outcome;
    let exit: RunEvent | undefined;
    try {
      // Checked after the run is held, so a cancel is either seen here or reaches #control.
      if ((await this.#commands.exists(this.#keys.cancelled(runId))) === 1) {
        held.cancelled = true;
        markStarted();
        outcome = childlessOutcome(runId, 'cancelled', 'aborted', 'the run was cancelled before it started');
      } else {
        const options = runOptionsFor(profile, data, runId, this.#stateDir);
        // The run host thread has no SDK of the application's: this thread traces the attempt from its messages.
        const telemetry = startRunTelemetry({ protocol: options.protocol ?? 'fen', runId, tracing: undefined, parent: contextOf(data.trace ?? {}), attempt });
        if (telemetry !== undefined) options.env = envWithCarrier(options.env ?? {}, telemetry.carrier, new Set(Object.keys(options.env ?? {})));
        held.telemetry = telemetry?.recording === true ? telemetry : undefined;
        const facts = held.telemetry;
        let previous = 'queued';
        outcome = await new Promise<Outcome>((resolve) => {
          this.#host.start(runId, options, {
            events: (events, at) => {
              for (const event of events) {
                facts?.event(event);
                // The exit is held back until it is known whether this attempt is the last one.
                if (event.type === 'exit') exit = event;
                else writer.add({ k: 'event', a: attempt, t: at, e: event });
              }
            },
            state: (state) => {
              facts?.state(state, previous);
              previous = state;
              writer.add({ k: 'state', a: attempt, s: state });
            },
            sent: (control, origin, seq) => facts?.controlSent(control, origin, seq),
            ack: (control, origin, ack) => {
              facts?.ack(ack, control, origin);
              writer.add({ k: 'ack', a: attempt, control, origin, ack });
            },
            delivery: (seq, delivery) => {
              facts?.delivery(seq, delivery);
              writer.add({ k: 'delivery', a: attempt, seq, d: delivery });
            },
            kill: (step) => facts?.kill(step),
            outcome: (ended) => {
              facts?.outcome(ended);
              resolve(ended);
            },
          });
          markStarted();
        });
      }
    } finally {
      markStarted();
      this.#held.delete(runId);
    }

    if (held.lost) {
      this.emit('end', runId, undefined, false);
      throw new Error('the worker lost the job lock; another worker took the run');
    }
    if (held.handingBack && !held.cancelled) {
      writer.add({ k: 'handed-back', a: attempt, worker: this.name });
      await writer.flushed();
      await job.updateData({ ...data, handedBack: (data.handedBack ?? 0) + 1 } satisfies JobData);
      await job.moveToWait(token);
      this.emit('end', runId, undefined, true);
      throw new (queuePeers().bullmq.WaitingError)();
    }
    const capped = capAnswer(outcome, profile.limits?.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES);
    const cancelled = held.cancelled || outcome.errorCode === 'aborted';
    if (!cancelled && attempt < data.attempts && retryable(outcome)) {
      const backoffMs = typeof job.opts.backoff === 'object' ? (job.opts.backoff.delay ?? 0) : (job.opts.backoff ?? 0);
      writer.add({ k: 'retry', a: attempt, outcome: capped, backoffMs });
      await writer.flushed();
      this.emit('end', runId, outcome, false);
      // BullMQ counts the failure and queues the next attempt after the backoff.
      throw new Error(`attempt ${attempt} ended ${outcome.status}${outcome.error === undefined ? '' : `: ${outcome.error}`}`);
    }
    writer.add({ k: 'event', a: attempt, t: Date.now(), e: exit ?? exitOf(capped) });
    writer.add({ k: 'outcome', outcome: capped });
    await writer.flushed();
    this.emit('end', runId, outcome, false);
    return capped;
  }
}

/** The outcomes worth another attempt: the same as the pool's default (failed, timed out, stalled). */
function retryable(outcome: Outcome): boolean {
  return outcome.status === 'failed' || outcome.status === 'timed-out' || outcome.errorCode === 'stalled';
}

/** The `exit` event of a run that ended without one from its child (a made-up one, as the run core makes). */
function exitOf(outcome: Outcome): RunEvent {
  const exit: RunEvent = { type: 'exit', status: outcome.status, synthetic: true, run: outcome.runId };
  if (outcome.error !== undefined) exit.error = outcome.error;
  return exit;
}

function durationOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new RangeError(`options.${name} must be a number of milliseconds >= 0`);
  return value;
}
