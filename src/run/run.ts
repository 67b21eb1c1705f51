// The supervised run: wires the channel, the child process, the state mirror, acks, events and the outcome.
import { randomUUID } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { EventEmitter } from 'eventemitter3';
import {
  channelEnv,
  ControlWriter,
  createRunDirectory,
  EventReader,
  removeRunDirectory,
} from '../channel/index.js';
import type { ControlPayload, ReaderRejection, RunDirectory } from '../channel/index.js';
import type { ExitEvent, JsonObject, ResultEvent, RunState, WireControlType, WireEvent } from '../wire/index.js';
import { addUsage, readAnswer } from './answer.js';
import type { Answer } from './answer.js';
import { ControlLedger } from './control-ledger.js';
import { toRunEvent } from './convert.js';
import { ControlRefusedError } from './errors.js';
import { EventFanout } from './event-fanout.js';
import { StateMirror } from './mirror.js';
import { buildOutcome, finalVerdict } from './outcome.js';
import type { FinalVerdict, Verdict } from './outcome.js';
import { registerLiveRun, unregisterLiveRun } from './shutdown.js';
import type { ShutdownParticipant } from './shutdown.js';
import { SupervisedProcess } from './supervised-process.js';
import type { ProcessExit, ProcessReport } from './supervised-process.js';
import type { Ack, ExitRunEvent, Outcome, OutcomeErrorCode, RejectedEvent, Run, RunEvent, RunEvents } from './types.js';

/** Options after defaults and validation (see spawn-run.ts). */
export interface ResolvedRunOptions {
  command: string;
  args: readonly string[];
  task: string | undefined;
  runId: string;
  cwd: string | undefined;
  env: Record<string, string>;
  deadlineMs: number | undefined;
  killGraceMs: number;
  finalizeGraceMs: number;
  readyTimeoutMs: number;
  ackTimeoutMs: number | undefined;
  keepAlive: boolean;
  stateDir: string;
  signal: AbortSignal | undefined;
  maxFinalTextBytes: number;
  keepFiles: boolean;
  retainEvents: boolean;
  highWaterMark: number;
  outputTailBytes: number;
  handleParentSignals: boolean;
}

/** Environment variable whose unique value marks every process of one run's tree. */
const TREE_MARKER_ENV = 'SUBVISOR_TREE';

const PROTOCOL_FAILURE_CODES: Record<string, OutcomeErrorCode> = {
  'version-mismatch': 'version-mismatch',
  'foreign-run': 'foreign-run',
  'event-file-truncated': 'event-file-truncated',
  'read-error': 'channel-error',
};

/** Implementation of {@link Run}; created by `spawnRun`. */
export class SupervisedRun extends EventEmitter<RunEvents> implements Run, ShutdownParticipant {
  readonly id: string;
  readonly outcome: Promise<Outcome>;
  taskAck: Promise<Ack | undefined> = Promise.resolve(undefined);

  readonly #options: ResolvedRunOptions;
  readonly #startedAt = Date.now();
  readonly #mirror: StateMirror;
  #directory: RunDirectory | undefined;
  #writer: ControlWriter | undefined;
  #reader: EventReader | undefined;
  #process: SupervisedProcess | undefined;

  readonly #ledger: ControlLedger;
  readonly #fanout: EventFanout;
  #readingPaused = false;

  #exitEvent: ExitEvent | undefined;
  #result: ResultEvent | undefined;
  #answer: Promise<Answer> | undefined;
  #turnUsage: JsonObject | undefined;
  #turns = 0;
  #turnOpen = false;
  #rejectedLines = 0;
  #verdict: Verdict | undefined;
  #protocolFailure: Verdict | undefined;
  #closeSent = false;
  /** Controls may be written (the child is not known to be exiting or gone). */
  #channelOpen = false;
  #ended = false;

  readonly #outputDecoders: { stdout?: StringDecoder; stderr?: StringDecoder } = {};
  #readyTimer: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #finalizeTimer: NodeJS.Timeout | undefined;
  readonly #onAbort = () => void this.terminate('the abort signal fired');
  #resolveOutcome!: (outcome: Outcome) => void;

  constructor(options: ResolvedRunOptions) {
    super();
    this.#options = options;
    this.id = options.runId;
    this.#mirror = new StateMirror((state, previous) => this.emit('state', state, previous));
    this.#ledger = new ControlLedger({
      ack: (ack, type, origin) => this.emit('ack', ack, type, origin),
      delivery: (seq, delivery) => this.emit('delivery', seq, delivery),
    });
    this.#fanout = new EventFanout(options.retainEvents, options.highWaterMark, () => {
      this.#readingPaused = false;
      queueMicrotask(() => this.#reader?.drain());
    });
    this.outcome = new Promise((resolve) => (this.#resolveOutcome = resolve));
    if (options.signal?.aborted) {
      this.#verdict = { status: 'cancelled', code: 'aborted', error: 'the abort signal had fired before the run started' };
      void this.#finishWithoutProcess();
      return;
    }
    try {
      this.#openChannel();
    } catch (error) {
      this.#verdict = {
        status: 'failed',
        code: 'channel-error',
        error: `could not set up the run directory under ${options.stateDir}: ${(error as Error).message}`,
      };
      void this.#finishWithoutProcess();
      return;
    }
    this.#spawn();
  }

  /**
   * Listeners run inside the run's own bookkeeping: one that throws must not leave the run half
   * updated. Its error is rethrown on a later tick (an uncaught exception, as from any callback).
   */
  override emit<T extends EventEmitter.EventNames<RunEvents>>(
    event: T,
    ...args: EventEmitter.EventArgs<RunEvents, T>
  ): boolean {
    try {
      return super.emit(event, ...args);
    } catch (error) {
      setImmediate(() => {
        throw error;
      });
      return true;
    }
  }

  get pid(): number | undefined {
    return this.#process?.pid;
  }

  get state(): RunState {
    return this.#mirror.state;
  }

  get channelDir(): string {
    return this.#directory?.dir ?? '';
  }

  get ended(): boolean {
    return this.#ended;
  }

  prompt(text: string): Promise<Ack> {
    return this.#control('prompt', { text });
  }

  steer(text: string): Promise<Ack> {
    return this.#control('steer', { text });
  }

  followUp(text: string): Promise<Ack> {
    return this.#control('follow-up', { text });
  }

  finalize(note?: string): Promise<Ack> {
    return this.#control('finalize', note === undefined ? {} : { note });
  }

  cancel(): Promise<Ack> {
    return this.#control('cancel', {});
  }

  close(): Promise<Ack> {
    return this.#control('close', {});
  }

  terminate(reason = 'the run was terminated'): Promise<Outcome> {
    if (this.#ended || this.#process === undefined) return this.outcome;
    this.#verdict ??= { status: 'cancelled', code: 'aborted', error: reason };
    this.#stopChild();
    return this.outcome;
  }

  kill(reason = 'the run was killed'): Promise<Outcome> {
    if (this.#ended || this.#process === undefined) return this.outcome;
    this.#verdict ??= { status: 'cancelled', code: 'aborted', error: reason };
    this.#channelOpen = false;
    this.#process.killNow();
    return this.outcome;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.terminate('the run was disposed');
  }

  [Symbol.asyncIterator](): AsyncIterator<RunEvent, undefined> {
    return this.#fanout.iterator();
  }

  batches(): AsyncIterableIterator<RunEvent[], undefined> {
    const queue = this.#fanout.iterator();
    return {
      next: () => queue.nextBatch(),
      return: async () => {
        await queue.return();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Parent shutdown                                                                                */
  /* ---------------------------------------------------------------------------------------------- */

  /** @internal Parent got SIGINT/SIGTERM: cancel and reap fast. */
  shutdown(graceMs: number): Promise<Outcome> {
    if (this.#ended || this.#process === undefined) return this.outcome;
    this.#verdict ??= { status: 'cancelled', code: 'parent-shutdown', error: 'the parent process is shutting down' };
    this.#stopChild();
    this.#process.hurry(graceMs);
    return this.outcome;
  }

  /** @internal The parent process is exiting: SIGKILL what is left, remove the files, synchronously. */
  killNow(): void {
    this.#process?.killNow();
    this.#removeChannelFiles();
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Start-up                                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  /** Removes the run directory unless the caller asked to keep it for debugging. */
  #removeChannelFiles(): void {
    if (this.#directory !== undefined && !this.#options.keepFiles) removeRunDirectory(this.#directory.dir);
  }

  #openChannel(): void {
    const directory = createRunDirectory(this.#options.stateDir, { keep: this.#options.keepFiles });
    this.#directory = directory;
    try {
      this.#writer = new ControlWriter(directory.controlPath, this.id);
      if (this.#options.task !== undefined) {
        const sent = this.#writer.send('prompt', { text: this.#options.task });
        if (!sent.ok) throw new Error('rejection' in sent ? sent.rejection.reason : sent.reason);
        this.taskAck = this.#ledger.awaitAck(sent.seq, 'prompt', 'task', this.#options.ackTimeoutMs);
      }
      this.#reader = new EventReader(
        directory.eventPath,
        this.id,
        {
          event: (event) => this.#onWireEvent(event),
          rejected: (rejection) => this.#onRejected(rejection),
        },
        { shouldPause: () => this.#shouldPauseReading() },
      );
      this.#reader.start();
    } catch (error) {
      this.#writer?.close();
      this.#reader?.close();
      removeRunDirectory(directory.dir);
      this.#directory = undefined;
      throw error;
    }
    this.#channelOpen = true;
  }

  #spawn(): void {
    const options = this.#options;
    const treeId = randomUUID();
    const env = {
      ...options.env,
      [TREE_MARKER_ENV]: treeId,
      ...channelEnv(this.#directory!, this.id, options.deadlineMs),
    };
    const child = new SupervisedProcess({
      command: options.command,
      args: options.args,
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      env,
      killGraceMs: options.killGraceMs,
      marker: `${TREE_MARKER_ENV}=${treeId}`,
      outputTailBytes: options.outputTailBytes,
      onOutput: (chunk, stream) => {
        // Decode per stream, so a character split between two chunks arrives whole.
        const decoder = (this.#outputDecoders[stream] ??= new StringDecoder('utf8'));
        const text = decoder.write(chunk);
        if (text !== '' && this.listenerCount('output') > 0) this.emit('output', text, stream);
      },
      onKill: (step) => this.emit('kill', step),
    });
    this.#process = child;
    registerLiveRun(this, options.handleParentSignals, child.watchEntry(options.keepFiles ? undefined : this.#directory?.dir));
    void child.exited.then((exit) => this.#onProcessExit(exit));
    if (child.pid === undefined) return; // the spawn error arrives through `exited`

    this.#readyTimer = setTimeout(() => this.#onReadyTimeout(), options.readyTimeoutMs);
    this.#readyTimer.unref();
    // The child sees whole seconds rounded up: enforce the same instant, then give the usual grace.
    if (options.deadlineMs !== undefined) this.#armDeadline(Math.ceil(options.deadlineMs / 1000) * 1000);
    options.signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Controls                                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  #control<T extends WireControlType>(type: T, payload: ControlPayload<T>): Promise<Ack> {
    if (!this.#channelOpen || this.#writer === undefined) {
      return Promise.reject(
        new ControlRefusedError('run-ended', type, `cannot send ${type}: run ${this.id} has ended or is ending`),
      );
    }
    if ((type === 'steer' || type === 'follow-up') && (payload as { text?: unknown }).text === '') {
      return Promise.reject(
        new ControlRefusedError('empty-text', type, `cannot send ${type} with empty text: the child would never inject it`),
      );
    }
    const sent = this.#writer.send(type, payload);
    if (!sent.ok) {
      if ('rejection' in sent) {
        const code = sent.rejection.code === 'too-large' ? 'too-large' : 'invalid';
        return Promise.reject(new ControlRefusedError(code, type, `cannot send ${type}: ${sent.rejection.reason}`));
      }
      this.#onChannelBroken(sent.reason);
      return Promise.reject(new ControlRefusedError('run-ended', type, `cannot send ${type}: ${sent.reason}`));
    }
    const ack = this.#ledger.awaitAck(sent.seq, type, 'caller', this.#options.ackTimeoutMs);
    if (type === 'cancel') {
      // The grace runs from the cancel itself: a child that never answers is backed up all the same.
      this.#verdict ??= { status: 'cancelled', code: 'aborted', error: 'the run was cancelled by the parent' };
      this.#channelOpen = false;
      this.#process?.backstop();
    }
    // Reading never pauses while an ack is awaited: wake a paused reader up.
    if (this.#readingPaused) queueMicrotask(() => this.#reader?.drain());
    return ack;
  }

  /** Sends a control of the parent's own (close, cancel); failures only matter through the backstop. */
  #sendInternal(type: 'close' | 'cancel'): void {
    if (!this.#channelOpen || this.#writer === undefined) return;
    const sent = this.#writer.send(type, {});
    if (sent.ok) this.#ledger.written(sent.seq, type);
    else if (!('rejection' in sent)) this.#onChannelBroken(sent.reason);
  }

  /** Cancel (when the child can still hear it), refuse further controls, start the kill ladder. */
  #stopChild(): void {
    if (!this.#mirror.terminal) this.#sendInternal('cancel');
    this.#channelOpen = false;
    this.#process?.backstop();
  }

  #onChannelBroken(reason: string): void {
    this.#verdict ??= { status: 'failed', code: 'channel-error', error: reason };
    // The writer is gone: no cancel can reach the child, the ladder has to.
    this.#channelOpen = false;
    this.#process?.backstop();
  }

  /** keepAlive false: close once ready, with every control answered and nothing waiting to be injected. */
  #maybeClose(): void {
    if (this.#options.keepAlive || this.#closeSent || !this.#channelOpen) return;
    if (this.#mirror.state !== 'ready' || this.#turnOpen) return;
    if (this.#ledger.unacked > 0 || this.#ledger.undelivered > 0) return;
    this.#closeSent = true;
    this.#sendInternal('close');
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Events                                                                                         */
  /* ---------------------------------------------------------------------------------------------- */

  #onWireEvent(event: WireEvent): void {
    const after: Array<() => void> = [];
    switch (event.type) {
      case 'ready':
        this.#clearReadyTimer();
        this.#mirror.ready();
        break;
      case 'control-ack':
        this.#onAck(event.ref, event.status, event.reason, after);
        break;
      case 'steering-injected':
      case 'follow-up-injected':
        if (event.ref !== undefined) this.#ledger.deliver(event.ref, 'injected', after);
        break;
      case 'info':
        for (const ref of event.refs ?? []) this.#ledger.deliver(ref, 'dropped', after);
        break;
      case 'turn-started':
        this.#turns = Math.max(this.#turns, event.turn);
        this.#turnOpen = true;
        this.#mirror.turnStarted();
        break;
      case 'turn-complete':
        this.#turns = Math.max(this.#turns, event.turn);
        this.#turnOpen = false;
        if (event.usage !== undefined) addUsage((this.#turnUsage ??= {}), event.usage);
        this.#onTurnComplete(event['stop-reason']);
        break;
      case 'result':
        this.#result ??= event;
        this.#answer ??= readAnswer(event, this.#options.maxFinalTextBytes);
        break;
      case 'exit':
        this.#onExitEvent(event);
        break;
    }
    this.#publish(toRunEvent(event));
    for (const settle of after) settle();
    if (event.type === 'exit') this.#fanout.end();
    else this.#maybeClose();
  }

  /**
   * Past the (rounded-up) deadline the child is already `timed-out` when it reports its aborted turn.
   * An `aborted` turn with no finalize or cancel behind it means the child is on its way to a terminal
   * state it does not announce (a deadline or fatal error): hold the state until its `exit` instead of
   * showing a `ready` the child never was in.
   */
  #onTurnComplete(stopReason: string): void {
    const deadline = this.#options.deadlineMs;
    if (deadline !== undefined && Date.now() >= Math.ceil(deadline / 1000) * 1000) {
      this.#mirror.deadline();
      return;
    }
    if (stopReason === 'aborted' && this.#mirror.state === 'running') return;
    this.#mirror.turnComplete();
  }

  #onAck(
    ref: number | undefined,
    status: 'accepted' | 'rejected' | 'applied',
    reason: string | undefined,
    after: Array<() => void>,
  ): void {
    if (ref === undefined) return; // a rejection of a line with no usable seq: nothing of ours to answer
    const type = this.#ledger.take(ref);
    if (type === undefined) return; // an answer to no control we sent (or answered twice)
    const action = this.#mirror.acknowledged(type, status);
    if (status === 'accepted' && type === 'finalize') this.#startFinalizeTimer();
    if (status === 'accepted' && type === 'cancel') {
      this.#verdict ??= { status: 'cancelled', code: 'aborted', error: 'the run was cancelled by the parent' };
      this.#channelOpen = false;
      this.#process?.backstop();
    }
    const ack: Ack = { status, seq: ref };
    if (reason !== undefined) ack.reason = reason;
    // From ready a steer/follow-up text itself starts the turn: it reached the agent.
    this.#ledger.answer(ack, type, action === 'start-turn', after);
  }

  #onExitEvent(event: ExitEvent): void {
    this.#exitEvent = event;
    this.#channelOpen = false;
    this.#clearTimers();
    this.#mirror.exit(event.status);
    // Nothing may follow `exit`; the child should now leave, and the backstop makes sure it does.
    this.#reader?.close();
    this.#process?.snapshot();
    this.#process?.backstop();
  }

  #onRejected(rejection: ReaderRejection): void {
    this.#rejectedLines++;
    const event: RejectedEvent = {
      type: 'rejected',
      code: rejection.code,
      reason: rejection.reason,
      fatal: rejection.fatal,
    };
    if (rejection.seq !== undefined) event.seq = rejection.seq;
    if (rejection.type !== undefined) event.lineType = rejection.type;
    if (rejection.run !== undefined) event.run = rejection.run;
    if (rejection.errors !== undefined) event.errors = rejection.errors;
    if (rejection.fatal) {
      this.#protocolFailure ??= {
        status: 'failed',
        code: PROTOCOL_FAILURE_CODES[rejection.code] ?? 'channel-error',
        error: `protocol failure (${rejection.code}): ${rejection.reason}`,
      };
      this.#stopChild();
    }
    this.emit('rejected', event);
    this.#publish(event);
  }

  #publish(event: RunEvent): void {
    this.emit('event', event);
    this.#fanout.publish(event);
  }

  #shouldPauseReading(): boolean {
    // Never pause while an ack is awaited (a consumer awaiting it inside its loop would deadlock),
    // nor once the child is gone (the final drain reads everything).
    this.#readingPaused = this.#ledger.unacked === 0 && this.#process?.running === true && this.#fanout.overHighWater();
    return this.#readingPaused;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Timers                                                                                         */
  /* ---------------------------------------------------------------------------------------------- */

  #onReadyTimeout(): void {
    this.#readyTimer = undefined;
    if (this.#mirror.state !== 'starting' || this.#process?.running !== true) return;
    this.#verdict ??= {
      status: 'failed',
      code: 'ready-timeout',
      error: `the child did not say ready within ${this.#options.readyTimeoutMs} ms`,
    };
    this.#channelOpen = false;
    // A child that is not ready reads no controls: no cancel, straight to SIGTERM.
    this.#process.backstop(true);
  }

  #armDeadline(at: number): void {
    // setTimeout cannot wait more than 2^31-1 ms: far deadlines re-arm until they are near.
    const wait = Math.min(Math.max(0, at - Date.now()), 2 ** 31 - 1);
    this.#deadlineTimer = setTimeout(() => (Date.now() < at ? this.#armDeadline(at) : this.#onDeadline()), wait);
    this.#deadlineTimer.unref();
  }

  #onDeadline(): void {
    this.#deadlineTimer = undefined;
    if (this.#process?.running !== true || this.#exitEvent !== undefined) return;
    this.#verdict ??= { status: 'timed-out', code: 'deadline', error: 'the run passed its deadline' };
    this.#channelOpen = false;
    this.#process.backstop();
  }

  #startFinalizeTimer(): void {
    if (this.#finalizeTimer !== undefined) return;
    this.#finalizeTimer = setTimeout(() => {
      if (this.#process?.running !== true || this.#exitEvent !== undefined) return;
      this.#verdict ??= {
        status: 'cancelled',
        code: 'finalize-timeout',
        error: `finalize did not end the run within ${this.#options.finalizeGraceMs} ms; cancelled`,
      };
      this.#stopChild();
    }, this.#options.finalizeGraceMs);
    this.#finalizeTimer.unref();
  }

  #clearReadyTimer(): void {
    if (this.#readyTimer !== undefined) clearTimeout(this.#readyTimer);
    this.#readyTimer = undefined;
  }

  #clearTimers(): void {
    this.#clearReadyTimer();
    if (this.#deadlineTimer !== undefined) clearTimeout(this.#deadlineTimer);
    if (this.#finalizeTimer !== undefined) clearTimeout(this.#finalizeTimer);
    this.#deadlineTimer = undefined;
    this.#finalizeTimer = undefined;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The end                                                                                        */
  /* ---------------------------------------------------------------------------------------------- */

  async #onProcessExit(exit: ProcessExit): Promise<void> {
    try {
      await this.#wrapUp(exit);
    } catch (error) {
      // A bug must not leave the outcome pending: report it as the run's failure.
      const report = await this.#process!.reaped;
      this.#finish(
        { status: 'failed', code: 'channel-error', error: `internal error: ${(error as Error).message}`, fromChild: false },
        report,
        undefined,
      );
    }
  }

  async #wrapUp(exit: ProcessExit): Promise<void> {
    // Everything the child wrote before it died is still in the file: read it all.
    this.#reader?.finish();
    this.#channelOpen = false;
    this.#writer?.close();
    this.#clearTimers();
    this.#options.signal?.removeEventListener('abort', this.#onAbort);
    this.#ledger.giveUp();
    const verdict = finalVerdict({
      command: this.#options.command,
      exit,
      protocolFailure: this.#protocolFailure,
      exitEvent: this.#exitEvent,
      parentVerdict: this.#verdict,
    });
    if (this.#exitEvent === undefined) {
      this.#mirror.exit(verdict.status);
      this.#publishSyntheticExit(verdict);
    }
    const report = await this.#process!.reaped;
    const answer = this.#answer === undefined ? undefined : await this.#answer;
    this.#finish(verdict, report, answer);
  }

  #publishSyntheticExit(verdict: Verdict): void {
    const event: ExitRunEvent = { type: 'exit', status: verdict.status, synthetic: true, run: this.id };
    if (verdict.error !== '') event.error = verdict.error;
    this.#publish(event);
    this.#fanout.end();
  }

  async #finishWithoutProcess(): Promise<void> {
    await Promise.resolve();
    const verdict = this.#verdict!;
    this.#mirror.exit(verdict.status);
    this.#publishSyntheticExit(verdict);
    this.#finish(
      { ...verdict, fromChild: false },
      { exitCode: null, signal: null, killed: false, escalated: false, outputTail: '' },
      undefined,
    );
  }

  #finish(verdict: FinalVerdict, report: ProcessReport, answer: Answer | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    const outcome = buildOutcome({
      runId: this.id,
      verdict,
      report,
      answer,
      result: this.#result,
      turnUsage: this.#turnUsage,
      turns: this.#turns,
      rejectedLines: this.#rejectedLines,
      durationMs: Date.now() - this.#startedAt,
    });
    this.#writer?.close();
    this.#reader?.close();
    this.#removeChannelFiles();
    if (this.#process !== undefined) unregisterLiveRun(this);
    this.emit('outcome', outcome);
    this.#resolveOutcome(outcome);
  }
}
