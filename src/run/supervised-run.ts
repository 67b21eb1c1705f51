// The run core: one protocol-free supervised run (process, timers, acks, events, state, outcome) around a driver.
import type { RunState } from '../wire/index.js';
import { ControlLedger } from './control-ledger.js';
import type { Control, Driver, DriverSink, Launch, ProcessPlan, Protocol, TurnReport } from '../protocol/driver.js';
import { ControlRefusedError } from './errors.js';
import { isEndingControl, runEndedAck } from './ended-ack.js';
import { RunHandle } from './run-handle.js';
import { StateMirror } from './mirror.js';
import { buildOutcome, finalVerdict } from './outcome.js';
import type { FinalVerdict, TermsFields, Verdict } from './outcome.js';
import type { Answer, ChildExit, RunResult } from '../protocol/results.js';
import type { AttachTarget, ResolvedRunOptions } from '../protocol/resolved-options.js';
import { registerLiveRun, unregisterLiveRun, watchLiveRun } from '../process/shutdown.js';
import type { ShutdownParticipant } from '../process/shutdown.js';
import { adoptChild, startChild } from './child-start.js';
import type { ChildListeners } from './child-start.js';
import { DurableTenure } from './durable-tenure.js';
import { RunBounds } from './run-bounds.js';
import type { EndHow } from './run-bounds.js';
import { termsOf } from './task-terms.js';
import type { TaskTerms } from './task-terms.js';
import type { SupervisedProcess } from '../process/supervised-process.js';
import type { WatchEntry } from '../process/watchdog.js';
import type { ProcessExit, ProcessReport } from '../process/supervised-process.js';
import type { Ack, AckOrigin, Run, SentControl } from './handle.js';
import type { ExitRunEvent, Outcome, RejectedEvent, RunEvent } from '../protocol/index.js';
import { addUsage } from '../wire/index.js';

/** The report of a run that had no process (it never started, or its driver talks to a daemon). */
const NO_PROCESS: ProcessReport = { exitCode: null, signal: null, killed: false, escalated: false, outputTail: '' };

/**
 * Closes the descriptor of events still behind when a run handle is dropped before they were taken
 * (nothing else would: the program holds no way to take them any more).
 */
const eventsBehindRelease = new FinalizationRegistry<() => void>((release) => release());

const CANCELLED_BY_PARENT: Verdict = { status: 'cancelled', code: 'aborted', error: 'the run was cancelled by the parent' };

/** Implementation of {@link Run}; created by `spawnRun` with the driver of the run's protocol. */
export class SupervisedRun extends RunHandle implements Run, ShutdownParticipant {
  readonly id: string;
  taskAck: Promise<Ack | undefined> = Promise.resolve(undefined);

  readonly #options: ResolvedRunOptions;
  /** When the run started (a re-attached run's, when its first parent started it). */
  readonly #startedAt: number;
  /** A durable run: this parent's hold on it (its lease). */
  #tenure: DurableTenure | undefined;
  readonly #mirror: StateMirror;
  readonly #driver: Driver;
  #process: SupervisedProcess | undefined;
  #command: string;

  readonly #ledger: ControlLedger;
  #readingPaused = false;
  /** Ack and delivery settlements waiting for the event that carried them (or the next microtask). */
  #settlements: Array<() => void> = [];
  #settlementsScheduled = false;

  #childExit: ChildExit | undefined;
  /** An `exit` event came (the driver's, or made up): nothing is published after it. */
  #exitSeen = false;
  /** The driver's `exit` event, held until the run's verdict gives it its status. */
  #heldExit: ExitRunEvent | undefined;
  /** The run's single verdict, once the child is gone: every published `exit` carries its status. */
  #finalVerdict: Verdict | undefined;
  #result: RunResult | undefined;
  /** The peer's own session id (DriverSink.session). */
  #sessionId: string | undefined;
  #turnUsage: RunResult['usage'];
  #turns = 0;
  #turnOpen = false;
  #rejectedLines = 0;
  #verdict: Verdict | undefined;
  #protocolFailure: Verdict | undefined;
  #closeSent = false;
  /** The child was started (or the driver connected): there is something to stop. */
  #launched = false;
  /** The child said `ready` at least once: the run reached its agent. */
  #reachedAgent = false;
  /** Controls may be sent (the child is not known to be exiting or gone). */
  #controlsOpen = false;
  /** A run without a process: its driver said the peer is gone. */
  #peerGone = false;
  #wrappingUp = false;
  #ended = false;
  /** The outcome may come before the last events: the driver still publishes them as the consumers take them. */
  #eventsBehind = false;

  #disconnectTimer: NodeJS.Timeout | undefined;
  readonly #bounds: RunBounds;
  /** Its budget and output schema, when it has either. */
  readonly #terms: TaskTerms | undefined;
  /** The model the child last named. */
  #model: string | undefined;
  readonly #onAbort = () => void this.terminate('the abort signal fired');
  /** Tells the `control` listeners of the task prompt, once: see the constructor. */
  #taskWritten: (() => void) | undefined;

  constructor(options: ResolvedRunOptions, protocol: Protocol) {
    super({
      retain: options.retainEvents,
      highWater: { events: options.highWaterMark, bytes: options.highWaterBytes },
      onDrained: () => {
        this.#readingPaused = false;
        queueMicrotask(() => this.#driver.resume());
      },
    });
    this.#options = options;
    this.id = options.runId;
    this.#startedAt = options.attach?.startedAt ?? Date.now();
    this.#command = options.command;
    this.#mirror = new StateMirror((state, previous) => {
      this.#tellTaskWritten();
      this.emit('state', state, previous);
    });
    this.#ledger = new ControlLedger({
      ack: (ack, type, origin) => {
        this.#tellTaskWritten();
        this.emit('ack', ack, type, origin);
        // An ack that timed out no longer holds back the automatic close.
        if (ack.status === 'unanswered') queueMicrotask(() => this.#maybeClose());
      },
      delivery: (seq, delivery) => this.emit('delivery', seq, delivery),
    });
    const run = this;
    this.#bounds = new RunBounds(options, {
      get state() {
        return run.#mirror.state;
      },
      get childAlive() {
        return run.#childAlive;
      },
      get childExited() {
        return run.#childExit !== undefined;
      },
      get daemon() {
        return run.#process === undefined;
      },
      get ended() {
        return run.#ended;
      },
      end: (verdict, how) => this.#end(verdict, how),
    });
    this.#terms = termsOf(options, protocol, {
      get stoppable() {
        return run.#controlsOpen && !run.#closeSent && !run.#mirror.terminal;
      },
      get idle() {
        return run.#idle;
      },
      close: () => {
        this.#closeSent = true;
        this.#sendOwn({ type: 'close' });
      },
      send: (control) => this.#sendOwn(control),
      cancel: (verdict) => {
        if (!this.#ended) this.#end(verdict, { cancel: true });
      },
    });
    this.#driver = protocol.create({
      runId: options.runId,
      startedAt: this.#startedAt,
      options,
      sink: this.#sink(),
      shouldPause: () => this.#shouldPauseReading(),
      backpressure: () => this.#backpressure(),
    });
    const unstarted: Verdict | undefined = options.signal?.aborted
      ? { status: 'cancelled', code: 'aborted', error: 'the abort signal had fired before the run started' }
      : this.#terms?.spentBeforeStart();
    if (unstarted !== undefined) {
      this.#verdict = unstarted;
      void this.#finishUnstarted();
      return;
    }
    let launch;
    try {
      launch = this.#driver.launch();
    } catch (error) {
      this.#verdict = { status: 'failed', code: 'channel-error', error: (error as Error).message };
      void this.#finishUnstarted();
      return;
    }
    if (launch.taskRef !== undefined) {
      this.taskAck = this.#ledger.awaitAck(launch.taskRef, 'prompt', 'task', options.ackTimeoutMs);
      // Told on a microtask (nobody could listen yet to what the constructor wrote), or before anything
      // that answers it, whichever comes first.
      const task = { type: 'prompt' as const, text: options.task ?? '' };
      const ref = launch.taskRef;
      this.#taskWritten = () => this.#wrote(task, ref, 'task');
      queueMicrotask(() => this.#tellTaskWritten());
    }
    // A re-attached run: the earlier parent's controls are answered in the channel read from its start.
    for (const prior of launch.priorControls ?? []) this.#ledger.prior(prior.ref, prior.type);
    this.#controlsOpen = true;
    this.#launched = true;
    registerLiveRun(this, options.handleParentSignals, launch.durableDir !== undefined);
    if (options.attach !== undefined) this.#adopt(options.attach, launch);
    else if (launch.process === undefined) this.#armTimers();
    else this.#spawn(launch.process, launch);
  }

  get pid(): number | undefined {
    return this.#process?.pid;
  }

  get state(): RunState {
    return this.#mirror.state;
  }

  get channelDir(): string {
    return this.#driver.channelDir;
  }

  get ended(): boolean {
    return this.#ended;
  }

  get lastEventAt(): number | undefined {
    return this.#bounds.lastEventAt;
  }

  prompt(text: string): Promise<Ack> {
    return this.#control({ type: 'prompt', text });
  }

  steer(text: string): Promise<Ack> {
    return this.#control({ type: 'steer', text });
  }

  followUp(text: string): Promise<Ack> {
    return this.#control({ type: 'follow-up', text });
  }

  finalize(note?: string): Promise<Ack> {
    return this.#control(note === undefined ? { type: 'finalize' } : { type: 'finalize', note });
  }

  cancel(): Promise<Ack> {
    return this.#control({ type: 'cancel' });
  }

  close(): Promise<Ack> {
    return this.#control({ type: 'close' });
  }

  terminate(reason = 'the run was terminated'): Promise<Outcome> {
    if (this.#ended || !this.#launched) return this.outcome;
    this.#end({ status: 'cancelled', code: 'aborted', error: reason }, { cancel: true });
    return this.outcome;
  }

  kill(reason = 'the run was killed'): Promise<Outcome> {
    if (this.#ended || !this.#launched) return this.outcome;
    this.#end({ status: 'cancelled', code: 'aborted', error: reason }, { now: true });
    return this.outcome;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.terminate('the run was disposed');
    // Events still behind in the (removed) event file are dropped: their descriptor closes now, and
    // every iterator ends after what it holds.
    if (this.#eventsBehind) this.#driver.dispose(true);
  }

  /** The driver reads facts ahead of the events it holds back (Fen): a pool may stop relaying while nobody iterates. */
  protected override get readsAhead(): boolean {
    return this.#driver.readsAhead;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Parent shutdown                                                                                */
  /* ---------------------------------------------------------------------------------------------- */

  /** @internal Parent got SIGINT/SIGTERM: cancel and reap fast. */
  shutdown(graceMs: number): Promise<Outcome> {
    if (this.#ended || !this.#launched) return this.outcome;
    this.#end(
      { status: 'cancelled', code: 'parent-shutdown', error: 'the parent process is shutting down' },
      { cancel: true, hurryMs: graceMs },
    );
    return this.outcome;
  }

  /** @internal The parent process is exiting: SIGKILL what is left, release the channel, synchronously. */
  killNow(): void {
    this.#process?.killNow();
    this.#driver.dispose(true);
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Start-up                                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  #spawn(plan: ProcessPlan, launch: Launch): void {
    const options = this.#options;
    this.#command = plan.command;
    const durableDir = launch.durableDir;
    const { process: child, marker } = startChild(plan, options, this.#childListeners(), durableDir === undefined ? undefined : DurableTenure.outputOf(durableDir));
    this.#process = child;
    void child.exited.then((exit) => this.#onChildGone(exit));
    if (child.pid === undefined) return; // the spawn error arrives through `exited`
    let watch = child.watchEntry(launch.ownFiles);
    if (durableDir !== undefined && watch !== undefined && options.durable !== undefined) {
      const record = { runId: this.id, startedAt: this.#startedAt, pid: child.pid, pidStart: watch.rootStart, marker, command: plan.command, lastControlSeq: launch.taskRef ?? 0 };
      try {
        this.#tenure = DurableTenure.begin(durableDir, record, options, options.durable.leaseMs);
        watch = this.#tenure.watchEntry(watch);
      } catch (error) {
        // Without its record and lease nobody could re-attach: the run goes on, owned by this parent alone.
        this.#verdict ??= { status: 'failed', code: 'channel-error', error: `could not make the run durable: ${(error as Error).message}` };
        this.#end(undefined, { cancel: true });
      }
    }
    this.#watchAndAttach(child, watch);
  }

  /** attachRun: the durable run's child runs already; this parent owns it again (ladder, reaping, lease). */
  #adopt(target: AttachTarget, launch: Launch): void {
    const child = adoptChild(target, DurableTenure.outputOf(target.dir), this.#options, this.#childListeners());
    this.#process = child;
    void child.exited.then((exit) => this.#onChildGone(exit));
    this.#tenure = DurableTenure.resume(target.dir, this.#options.durable?.leaseMs ?? 0);
    const watch = child.watchEntry(launch.ownFiles);
    this.#watchAndAttach(child, watch === undefined ? undefined : this.#tenure.watchEntry(watch));
  }

  #childListeners(): ChildListeners {
    return {
      output: (text, stream) => {
        if (this.listenerCount('output') > 0) this.emit('output', text, stream);
      },
      kill: (step) => this.emit('kill', step),
    };
  }

  /** The child runs: the watchdog covers a parent killed without any hook, the driver reads its pipes, the bounds start. */
  #watchAndAttach(child: SupervisedProcess, watch: WatchEntry | undefined): void {
    if (watch !== undefined) watchLiveRun(this, watch);
    this.#driver.attach({
      pid: child.pid!,
      stdin: child.stdin,
      stdout: child.stdout,
      signal: (signal) => child.signal(signal),
    });
    this.#armTimers();
  }

  #armTimers(): void {
    this.#bounds.arm();
    this.#options.signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** True while the child can still act: its process runs, or (no process) the driver's peer is there. */
  get #childAlive(): boolean {
    return this.#process === undefined ? this.#launched && !this.#peerGone : this.#process.running;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Controls                                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  #control(control: Control): Promise<Ack> {
    const type = control.type;
    if (!this.#controlsOpen) {
      if (isEndingControl(type)) return Promise.resolve(runEndedAck(type, `run ${this.id} has ended or is ending`));
      return Promise.reject(
        new ControlRefusedError('run-ended', type, `cannot send ${type}: run ${this.id} has ended or is ending`),
      );
    }
    if ((control.type === 'steer' || control.type === 'follow-up') && control.text === '') {
      return Promise.reject(
        new ControlRefusedError('empty-text', type, `cannot send ${type} with empty text: the child would never inject it`),
      );
    }
    const sent = this.#driver.send(control);
    if (sent.kind === 'refused') {
      return Promise.reject(new ControlRefusedError(sent.code, type, `cannot send ${type}: ${sent.reason}`));
    }
    if (sent.kind === 'broken') {
      this.#onChannelBroken(sent.reason);
      if (isEndingControl(type)) return Promise.resolve(runEndedAck(type, sent.reason));
      return Promise.reject(new ControlRefusedError('run-ended', type, `cannot send ${type}: ${sent.reason}`));
    }
    const ack = this.#ledger.awaitAck(sent.ref, type, 'caller', this.#options.ackTimeoutMs);
    this.#wrote(control, sent.ref, 'caller');
    // The grace runs from the cancel itself: a child that never answers is backed up all the same.
    if (type === 'cancel') this.#end(CANCELLED_BY_PARENT);
    // Reading never pauses while an ack is awaited: wake a paused reader up.
    if (this.#readingPaused) queueMicrotask(() => this.#driver.resume());
    return ack;
  }

  /**
   * Sends a control of the core's own (close, cancel; a budget's finalize, the repair follow-up): its ack, or
   * undefined when it was not sent (failures only matter through the kill ladder).
   */
  #sendOwn(control: Control): Promise<Ack> | undefined {
    if (!this.#controlsOpen) return undefined;
    const sent = this.#driver.send(control);
    if (sent.kind === 'sent') {
      const ack = this.#ledger.awaitAck(sent.ref, control.type, 'auto', undefined);
      this.#wrote(control, sent.ref, 'auto');
      return ack;
    }
    if (sent.kind === 'broken') this.#onChannelBroken(sent.reason);
    return undefined;
  }

  #tellTaskWritten(): void {
    const tell = this.#taskWritten;
    this.#taskWritten = undefined;
    tell?.();
  }

  /** Tells the `control` listeners what was written. */
  #wrote(control: Control, seq: number, origin: AckOrigin): void {
    if (this.listenerCount('control') === 0) return;
    const sent: SentControl = { type: control.type, seq, origin };
    if ('text' in control) sent.text = control.text;
    if ('note' in control && control.note !== undefined) sent.note = control.note;
    this.emit('control', sent);
  }

  #onChannelBroken(reason: string): void {
    // The channel is gone: no cancel can reach the child, the ladder has to.
    this.#end({ status: 'failed', code: 'channel-error', error: reason });
  }

  /**
   * The one stop path. Records why the run ends (the first reason wins; `undefined` when the reason is
   * already recorded, e.g. the child's own exit), stops taking controls, and makes sure the child goes:
   * a cancel first when asked (and the child can still hear it), then the kill ladder, or for a run
   * without a process a disconnect after the same grace.
   */
  #end(verdict: Verdict | undefined, how: EndHow = {}): void {
    if (verdict !== undefined) this.#verdict ??= verdict;
    this.#bounds.stopWatching();
    if (how.cancel === true && !this.#mirror.terminal) this.#sendOwn({ type: 'cancel' });
    this.#controlsOpen = false;
    const child = this.#process;
    if (child === undefined) {
      this.#disconnectAfter(how.now === true || how.immediate === true ? 0 : (how.hurryMs ?? this.#options.killGraceMs));
      return;
    }
    if (how.now === true) {
      child.killNow();
      return;
    }
    child.startKillLadder(how.immediate === true);
    if (how.hurryMs !== undefined) child.hurry(how.hurryMs);
  }

  /** The ladder of a run without a process: give the peer `graceMs` to leave, then drop the connection. */
  #disconnectAfter(graceMs: number): void {
    if (!this.#launched || this.#peerGone) return;
    if (this.#disconnectTimer !== undefined) {
      if (graceMs > 0) return;
      clearTimeout(this.#disconnectTimer);
    }
    this.#disconnectTimer = setTimeout(() => {
      this.#disconnectTimer = undefined;
      this.#driver.disconnect();
      this.#onPeerGone();
    }, graceMs);
  }

  /** Ready, with no turn open, every control answered and nothing waiting to be injected. */
  get #idle(): boolean {
    return this.#mirror.state === 'ready' && !this.#turnOpen && this.#ledger.unacked === 0 && this.#ledger.undelivered === 0;
  }

  /**
   * keepAlive false: close once idle, after outputSchema's repair turn when the answer needs one (a
   * follow-up: a driver still ending the turn takes it once the turn is over, an idle child at once).
   */
  #maybeClose(): void {
    if (this.#options.keepAlive || this.#closeSent || !this.#controlsOpen || !this.#driver.closeWhenIdle || !this.#idle) return;
    const repair = this.#terms?.repairBeforeClose();
    if (repair !== undefined && this.#sendOwn({ type: 'follow-up', text: repair }) !== undefined) return;
    this.#closeSent = true;
    this.#sendOwn({ type: 'close' });
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Facts from the driver                                                                          */
  /* ---------------------------------------------------------------------------------------------- */

  #sink(): DriverSink {
    return {
      event: (event, bytes) => this.#onEvent(event, bytes),
      rejected: (event, bytes, countedAhead) => this.#onRejected(event, bytes, countedAhead === true),
      lineAhead: (rejected) => {
        if (this.#ended) return;
        this.#bounds.seen();
        if (rejected) this.#rejectedLines++;
        this.#maybeClose();
      },
      ready: () => {
        if (this.#ended) return;
        this.#bounds.ready();
        this.#reachedAgent = true;
        this.#ledger.childReady();
        this.#mirror.ready();
      },
      ack: (ref, status, reason) => this.#onAck(ref, status, reason),
      delivery: (ref, delivery) => {
        if (!this.#ended) this.#ledger.deliver(ref, delivery, this.#pendingSettlements());
      },
      turnStarted: (turn) => {
        if (this.#ended) return;
        this.#turns = Math.max(this.#turns, turn);
        this.#turnOpen = true;
        this.#bounds.turnStarted();
        this.#mirror.turnStarted();
      },
      turnCompleted: (report) => {
        this.#onTurnComplete(report);
        if (!this.#ended) this.#terms?.turnCompleted(report);
      },
      toolCalled: () => {
        if (!this.#ended) this.#terms?.toolCalled();
      },
      modelCall: ({ model, usage }) => {
        if (this.#ended) return;
        if (model !== undefined) this.#model = model;
        if (usage !== undefined) this.#terms?.modelCallEnded(usage);
      },
      result: (result) => {
        if (!this.#ended) this.#result ??= result;
      },
      exit: (exit) => this.#onChildExit(exit),
      fatal: (code, error) => {
        if (this.#ended) return;
        this.#protocolFailure ??= { status: 'failed', code, error };
        this.#end(undefined, { cancel: true });
      },
      broken: (reason) => {
        if (!this.#ended) this.#onChannelBroken(reason);
      },
      gone: () => this.#onPeerGone(),
      session: (id) => {
        if (!this.#ended) this.#sessionId = id;
      },
      blocked: (id, what) => this.#bounds.blocked(id, what),
      unblocked: (id) => this.#bounds.unblocked(id),
    };
  }

  /** The list settlements go on; flushed after the next published event, or on a microtask. */
  #pendingSettlements(): Array<() => void> {
    if (!this.#settlementsScheduled) {
      this.#settlementsScheduled = true;
      queueMicrotask(() => this.#flushSettlements());
    }
    return this.#settlements;
  }

  #flushSettlements(): void {
    this.#settlementsScheduled = false;
    if (this.#settlements.length === 0) return;
    const settlements = this.#settlements;
    this.#settlements = [];
    for (const settle of settlements) settle();
  }

  #onEvent(event: RunEvent, bytes = 0): void {
    if (this.#exitSeen || (this.#ended && !this.#eventsBehind)) return;
    this.#bounds.seen();
    if (event.type === 'exit') {
      // The driver's exit is the child's word; the stream's last event is the run's verdict, known once
      // the child is gone (a deadline or a protocol failure can still outrank what the child said).
      this.#exitSeen = true;
      if (this.#finalVerdict === undefined) this.#heldExit = event;
      else this.#publishExit(event, this.#finalVerdict);
      if (this.#settlements.length > 0) this.#flushSettlements();
      return;
    }
    this.#publish(event, bytes);
    if (this.#settlements.length > 0) this.#flushSettlements();
    this.#maybeClose();
  }

  /**
   * Past the (rounded-up) deadline the child is already `timed-out` when it reports its aborted turn.
   * An `aborted` turn with no finalize or cancel behind it means the child is on its way to a terminal
   * state it does not announce (a deadline or fatal error): hold the state until its `exit` instead of
   * showing a `ready` the child never was in.
   */
  #onTurnComplete(report: TurnReport): void {
    if (this.#ended) return;
    this.#turns = Math.max(this.#turns, report.turn);
    this.#turnOpen = false;
    if (report.usage !== undefined) addUsage((this.#turnUsage ??= {}), report.usage);
    // A child that goes on by itself (idle: false) is still working: the watchdog stays armed.
    if (report.idle === false) return;
    this.#bounds.turnCompleted();
    if (this.#bounds.pastDeadline) {
      this.#mirror.deadline();
      return;
    }
    if (report.stopReason === 'aborted' && this.#mirror.state === 'running') return;
    this.#mirror.turnComplete();
    this.#leaveWhenFinished();
  }

  #onAck(ref: number, status: 'accepted' | 'rejected' | 'applied', reason: string | undefined): void {
    if (this.#ended) return;
    const type = this.#ledger.take(ref);
    if (type === undefined) return; // an answer to no control we sent (or answered twice)
    const action = this.#mirror.acknowledged(type, status);
    if (status === 'accepted' && type === 'finalize') this.#bounds.finalizeAccepted();
    if (status === 'accepted' && type === 'cancel') this.#end(CANCELLED_BY_PARENT);
    this.#leaveWhenFinished();
    const ack: Ack = { status, seq: ref };
    if (reason !== undefined) ack.reason = reason;
    // From ready a steer/follow-up text itself starts the turn: it reached the agent.
    this.#ledger.answer(ack, type, action === 'start-turn', this.#pendingSettlements());
  }

  /**
   * The state table says the run is over (a close accepted while ready, the turn a close or finalize let
   * finish): the child's part now is to leave. Whatever the protocol, the kill ladder stands behind it
   * from here (the grace, then TERM and KILL to the tree; a disconnect for a run without a process), so a
   * child that ignores its end of input, SIGINT and SIGTERM cannot keep the run open.
   */
  #leaveWhenFinished(): void {
    if (this.#mirror.state !== 'done' || this.#ended || this.#childExit !== undefined || !this.#launched) return;
    this.#end(undefined);
  }

  #onChildExit(exit: ChildExit): void {
    if (this.#ended || this.#childExit !== undefined) return;
    this.#childExit = exit;
    this.#bounds.clear();
    this.#mirror.exit(exit.status);
    this.#process?.snapshot();
    // Nothing may follow the exit; the child should now leave, and the ladder makes sure it does.
    this.#end(undefined);
  }

  #onRejected(event: RejectedEvent, bytes = 0, countedAhead = false): void {
    if (this.#exitSeen || (this.#ended && !this.#eventsBehind)) return;
    this.#bounds.seen();
    if (!countedAhead) this.#rejectedLines++;
    this.emit('rejected', event);
    this.#publish(event, bytes);
  }

  #publish(event: RunEvent, bytes = 0): void {
    this.#tellTaskWritten();
    // Most runs are consumed with `for await`: no listener, and no emit (with its argument array) per event.
    if (this.listenerCount('event') > 0) this.emit('event', event);
    this.toIterators(event, bytes);
  }

  #shouldPauseReading(): boolean {
    // A driver that cannot read facts ahead never pauses while an ack is awaited (a consumer awaiting
    // it inside its loop would deadlock), nor once the child is gone (its final drain reads everything).
    // A kept backlog does not count here: the child would block until an iterator that may never come.
    this.#readingPaused = this.#ledger.unacked === 0 && this.#childAlive && this.overHighWater(false);
    return this.#readingPaused;
  }

  #backpressure(): boolean {
    this.#readingPaused = this.overHighWater();
    return this.#readingPaused;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The end                                                                                        */
  /* ---------------------------------------------------------------------------------------------- */

  /** A run without a process: the driver's peer is gone. (With a process, the process's exit decides.) */
  #onPeerGone(): void {
    if (this.#process !== undefined || !this.#launched || this.#peerGone) return;
    this.#peerGone = true;
    void this.#onChildGone(undefined);
  }

  async #onChildGone(exit: ProcessExit | undefined): Promise<void> {
    try {
      await this.#wrapUp(exit);
    } catch (error) {
      // A bug must not leave the outcome pending: report it as the run's failure.
      const report = this.#process === undefined ? NO_PROCESS : await this.#process.reaped;
      this.#finish(
        { status: 'failed', code: 'channel-error', error: `internal error: ${(error as Error).message}`, fromChild: false },
        report,
        undefined,
      );
    }
  }

  async #wrapUp(exit: ProcessExit | undefined): Promise<void> {
    if (this.#wrappingUp) return;
    this.#wrappingUp = true;
    if (this.#disconnectTimer !== undefined) clearTimeout(this.#disconnectTimer);
    this.#disconnectTimer = undefined;
    // The child is gone: no control can reach it any more (a prompt now would be accepted into the void).
    this.#controlsOpen = false;
    // Everything the child wrote before it went is still to be read: the driver reads it all.
    const finishing = this.#driver.finish(
      exit === undefined
        ? undefined
        : { exitCode: exit.exitCode, signal: exit.signal, spawnFailed: exit.spawnError !== undefined },
    );
    const finished = finishing instanceof Promise ? await finishing : finishing;
    this.#bounds.clear();
    this.#options.signal?.removeEventListener('abort', this.#onAbort);
    this.#flushSettlements();
    this.#ledger.giveUp();
    // The answer is read before the exit event goes out: outputSchema's verdict on it is the run's.
    const answer = this.#result === undefined ? undefined : await this.#result.answer;
    const decided = finalVerdict({
      command: this.#command,
      exit,
      protocolFailure: this.#protocolFailure,
      childExit: this.#childExit,
      parentVerdict: this.#verdict,
      reachedAgent: this.#reachedAgent,
    });
    const { verdict, fields } = this.#terms?.judge(decided, answer?.finalText) ?? { verdict: decided, fields: {} };
    if (this.#childExit === undefined || verdict !== decided) this.#mirror.exit(verdict.status);
    this.#finalVerdict = verdict;
    const held = this.#heldExit;
    this.#heldExit = undefined;
    if (held !== undefined) {
      this.#publishExit(held, verdict);
    } else if (finished?.eventsBehind !== undefined && !this.#exitSeen) {
      // The facts are all in; the events follow as the consumers take them, then (without the child's own) a synthetic exit.
      this.#eventsBehind = true;
      const token = {};
      if (finished.release !== undefined) eventsBehindRelease.register(this, finished.release, token);
      void finished.eventsBehind.then(() => {
        eventsBehindRelease.unregister(token);
        if (!this.#exitSeen) this.#publishSyntheticExit(verdict);
        this.#eventsBehind = false;
      });
    } else if (!this.#exitSeen) {
      this.#publishSyntheticExit(verdict);
    }
    const report = this.#process === undefined ? NO_PROCESS : await this.#process.reaped;
    this.#finish(verdict, report, answer, fields);
  }

  #publishSyntheticExit(verdict: Verdict): void {
    const event: ExitRunEvent = { type: 'exit', status: verdict.status, synthetic: true, run: this.id };
    if (verdict.error !== '') event.error = verdict.error;
    this.#exitSeen = true;
    this.#publish(event);
    this.endIterators();
  }

  /**
   * Publishes the driver's `exit` with the verdict's status: when the child said otherwise (it obeyed the
   * cancel of a deadline, a protocol failure outranked it), its word stays in `childStatus` and the
   * verdict's error replaces its own.
   */
  #publishExit(exit: ExitRunEvent, verdict: Verdict): void {
    let event = exit;
    if (exit.status !== verdict.status) {
      event = { ...exit, status: verdict.status, childStatus: exit.status };
      if (verdict.error !== '') event.error = verdict.error;
      else delete event.error;
    }
    this.#publish(event);
    this.endIterators();
  }

  /** The run ends before anything was started (aborted signal, a spent shared budget, a channel that could not be set up). */
  async #finishUnstarted(): Promise<void> {
    await Promise.resolve();
    const verdict = this.#verdict!;
    this.#mirror.exit(verdict.status);
    this.#publishSyntheticExit(verdict);
    this.#finish({ ...verdict, fromChild: false }, NO_PROCESS, undefined);
  }

  /** `fields`: what the terms added when they judged the verdict (else they judge it now: every end reports its budget). */
  #finish(verdict: FinalVerdict, report: ProcessReport, answer: Answer | undefined, fields?: TermsFields): void {
    if (this.#ended) return;
    this.#ended = true;
    const outcome = buildOutcome({
      runId: this.id,
      protocol: this.#options.protocol,
      model: this.#model,
      verdict,
      report,
      answer,
      result: this.#result,
      turnUsage: this.#turnUsage,
      turns: this.#turns,
      rejectedLines: this.#rejectedLines,
      durationMs: Date.now() - this.#startedAt,
      sessionId: this.#sessionId,
      fields: fields ?? this.#terms?.judge(verdict, answer?.finalText).fields ?? {},
    });
    this.#tenure?.end();
    this.#driver.dispose();
    if (this.#launched) unregisterLiveRun(this);
    this.settle(outcome);
  }
}
