// The run core: one protocol-free supervised run (process, timers, acks, events, state, outcome) around a driver.
import type { RunState } from '../wire/index.js';
import { ControlLedger } from './control-ledger.js';
import type { Driver, DriverSink, Protocol, TurnReport } from '../protocol/driver.js';
import { ControlSender } from './control-sender.js';
import { ExitGate } from './exit-gate.js';
import { RunTally } from './run-tally.js';
import { RunHandle } from './run-handle.js';
import { StateMirror } from './mirror.js';
import { buildOutcome, finalVerdict } from './outcome.js';
import type { FinalVerdict, TermsFields, Verdict } from './outcome.js';
import type { Answer, ChildExit } from '../protocol/results.js';
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';
import { registerLiveRun, unregisterLiveRun, watchLiveRun } from '../process/shutdown.js';
import type { ShutdownParticipant } from '../process/shutdown.js';
import { adoptChild, startChild } from './child-start.js';
import type { ChildListeners, OwnedChild } from './child-start.js';
import type { DurableTenure } from './durable-tenure.js';
import { RunBounds } from './run-bounds.js';
import type { EndHow } from './run-bounds.js';
import { termsOf } from './task-terms.js';
import { TreeLimiter } from './tree-limiter.js';
import type { GovernedRun, TaskTerms } from './task-terms.js';
import { cannotTakeTask } from './task-hand-off.js';
import type { TaskHandOff } from './task-hand-off.js';
import type { SupervisedProcess } from '../process/supervised-process.js';
import type { ProcessExit, ProcessReport } from '../process/supervised-process.js';
import type { Ack, Run } from './handle.js';
import type { ApprovalAnswer, ApprovalRequest, Outcome, RejectedEvent, RunEvent } from '../protocol/index.js';

/** The report of a run that had no process (it never started, or its driver talks to a daemon). */
const NO_PROCESS: ProcessReport = { exitCode: null, signal: null, killed: false, escalated: false, outputTail: '' };

const CANCELLED_BY_PARENT: Verdict = { status: 'cancelled', code: 'aborted', error: 'the run was cancelled by the parent' };

/** Implementation of {@link Run}; created by `spawnRun` with the driver of the run's protocol. */
export class SupervisedRun extends RunHandle implements Run, ShutdownParticipant {
  readonly id: string;
  taskAck: Promise<Ack | undefined> = Promise.resolve(undefined);

  /** The run's options; a hand-off replaces the per-task ones (see {@link takeTask}). */
  #options: ResolvedRunOptions;
  readonly #protocol: Protocol;
  /** When the run started (a re-attached run's, when its first parent started it). */
  readonly #startedAt: number;
  /** What `durationMs` counts from: the start, or the hand-off of a task to a run that waited for one. */
  #measuredFrom: number;
  /** A run started without a task was handed one (see {@link takeTask}). */
  #taskTaken = false;
  /** A durable run: this parent's hold on it (its lease). */
  #tenure: DurableTenure | undefined;
  readonly #mirror: StateMirror;
  readonly #driver: Driver;
  #process: SupervisedProcess | undefined;
  #command: string;

  readonly #ledger: ControlLedger;
  readonly #controls: ControlSender;
  #readingPaused = false;

  #childExit: ChildExit | undefined;
  readonly #exit: ExitGate;
  readonly #tally = new RunTally();
  #verdict: Verdict | undefined;
  #protocolFailure: Verdict | undefined;
  /** The tree went over one of its `limits`: wins over every verdict but a spawn error. */
  #limitFailure: Verdict | undefined;
  /** Its `limits`, when it has any. */
  readonly #limiter: TreeLimiter | undefined;
  #closeSent = false;
  /** The child was started (or the driver connected): there is something to stop. */
  #launched = false;
  /** The child said `ready` at least once: the run reached its agent. */
  #reachedAgent = false;
  /** A run without a process: its driver said the peer is gone. */
  #peerGone = false;
  #wrappingUp = false;
  #ended = false;

  #disconnectTimer: NodeJS.Timeout | undefined;
  readonly #bounds: RunBounds;
  /** Its budget and output schema, when it has either. */
  #terms: TaskTerms | undefined;
  /** What the terms may do to this run. */
  readonly #governed: GovernedRun;
  readonly #onAbort = () => void this.terminate('the abort signal fired');

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
    this.#protocol = protocol;
    this.id = options.runId;
    this.#startedAt = options.attach?.startedAt ?? Date.now();
    this.#measuredFrom = this.#startedAt;
    this.#command = options.command;
    this.#mirror = new StateMirror((state, previous) => {
      this.#controls.tellTaskWritten();
      this.emit('state', state, previous);
    });
    const run = this;
    this.#ledger = new ControlLedger({
      ack: (ack, type, origin) => {
        this.#controls.tellTaskWritten();
        this.emit('ack', ack, type, origin);
        // An ack that timed out no longer holds back the automatic close.
        if (ack.status === 'unanswered') queueMicrotask(() => this.#maybeClose());
      },
      delivery: (seq, delivery) => this.emit('delivery', seq, delivery),
    });
    this.#controls = new ControlSender({
      runId: this.id,
      get driver() {
        return run.#driver;
      },
      ledger: this.#ledger,
      ackTimeoutMs: options.ackTimeoutMs,
      broken: (reason) => this.#onChannelBroken(reason),
      cancelWritten: () => this.#end(CANCELLED_BY_PARENT),
      // Reading never pauses while an ack is awaited: wake a paused reader up.
      written: () => {
        if (this.#readingPaused) queueMicrotask(() => this.#driver.resume());
      },
      listening: () => this.listenerCount('control') > 0,
      tell: (sent) => this.emit('control', sent),
    });
    this.#exit = new ExitGate({
      runId: this.id,
      publish: (event) => this.#publish(event),
      endIterators: () => this.endIterators(),
    });
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
    this.#governed = {
      get stoppable() {
        return run.#controls.open && !run.#closeSent && !run.#mirror.terminal;
      },
      get idle() {
        return run.#idle;
      },
      close: () => {
        this.#closeSent = true;
        this.#controls.sendOwn({ type: 'close' });
      },
      send: (control) => this.#controls.sendOwn(control),
      cancel: (verdict) => {
        if (!this.#ended) this.#end(verdict, { cancel: true });
      },
    };
    this.#terms = termsOf(options, protocol, this.#governed);
    this.#limiter = options.limits === undefined ? undefined : new TreeLimiter(options.limits, (verdict) => this.#onLimit(verdict));
    this.#driver = protocol.create({
      runId: options.runId,
      startedAt: this.#startedAt,
      options: options.approve === undefined ? options : { ...options, approve: (request) => this.#approve(request) },
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
      this.#controls.taskWritten(options.task ?? '', launch.taskRef);
    }
    // A re-attached run: the earlier parent's controls are answered in the channel read from its start.
    for (const prior of launch.priorControls ?? []) this.#ledger.prior(prior.ref, prior.type);
    this.#controls.open = true;
    this.#launched = true;
    registerLiveRun(this, options.handleParentSignals, launch.durableDir !== undefined);
    if (options.attach !== undefined) {
      this.#own(adoptChild(options.attach, launch, options, this.#childListeners()));
    } else if (launch.process === undefined) {
      this.#armTimers();
    } else {
      this.#command = launch.process.command;
      this.#own(startChild(launch.process, launch, { runId: this.id, startedAt: this.#startedAt, channelDir: this.channelDir }, options, this.#childListeners()));
    }
  }

  get pid(): number | undefined {
    return this.#process?.pid;
  }

  get state(): RunState {
    return this.#mirror.state;
  }

  get channelDir(): string {
    return this.#driver.channelDir ?? '';
  }

  get ended(): boolean {
    return this.#ended;
  }

  get lastEventAt(): number | undefined {
    return this.#bounds.lastEventAt;
  }

  prompt(text: string): Promise<Ack> {
    return this.#controls.send({ type: 'prompt', text });
  }

  steer(text: string): Promise<Ack> {
    return this.#controls.send({ type: 'steer', text });
  }

  followUp(text: string): Promise<Ack> {
    return this.#controls.send({ type: 'follow-up', text });
  }

  finalize(note?: string): Promise<Ack> {
    return this.#controls.send(note === undefined ? { type: 'finalize' } : { type: 'finalize', note });
  }

  cancel(): Promise<Ack> {
    return this.#controls.send({ type: 'cancel' });
  }

  close(): Promise<Ack> {
    return this.#controls.send({ type: 'close' });
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
    if (this.#exit.eventsBehind) this.#driver.dispose(true);
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* A task handed over later                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  /** @internal The protocol the run speaks (its reports and option checks, for a task handed over later). */
  get protocol(): Protocol {
    return this.#protocol;
  }

  /** @internal The protocol's name, as the outcome gives it. */
  get protocolName(): string {
    return this.#options.protocol;
  }

  /** @internal Why it cannot take a task now (see {@link takeTask}), or undefined when it can. */
  get cannotTakeTask(): string | undefined {
    return cannotTakeTask({
      taskless: this.#options.task === undefined,
      taken: this.#taskTaken,
      ended: this.#ended || !this.#controls.open,
      state: this.#mirror.state,
      turns: this.#tally.turns,
    });
  }

  /**
   * @internal Hands a task to a run started without one that waits in ready (a pool's warm child): its
   * prompt goes out as the run's task (`taskAck`), and the per-task terms apply from now: the deadline
   * (which the child was never told: at it the core cancels, then the ladder), the stall watchdog, the ack
   * timeout, the budget and output schema, keepAlive (false: closed once idle, as any run), the abort
   * signal; `durationMs` counts from now. Throws a TypeError, changing nothing, when it cannot take one.
   */
  takeTask(handOff: TaskHandOff): void {
    const refusal = this.cannotTakeTask;
    if (refusal !== undefined) throw new TypeError(`run ${this.id} cannot take a task: ${refusal}`);
    const { task, ...terms } = handOff;
    this.#taskTaken = true;
    this.#measuredFrom = Date.now();
    this.#options = { ...this.#options, ...terms, task };
    this.#controls.ackTimeoutMs = terms.ackTimeoutMs;
    this.#bounds.takeTask(terms.deadlineMs, terms.stallTimeoutMs);
    this.#terms = termsOf(this.#options, this.#protocol, this.#governed);
    const spent = this.#terms?.spentBeforeStart();
    if (spent !== undefined) {
      this.#end(spent, { cancel: true });
      return;
    }
    if (terms.signal?.aborted === true) {
      this.#end({ status: 'cancelled', code: 'aborted', error: 'the abort signal had fired before the task was handed over' }, { cancel: true });
      return;
    }
    terms.signal?.addEventListener('abort', this.#onAbort, { once: true });
    const ack = this.#controls.sendTask(task);
    if (ack !== undefined) this.taskAck = ack;
  }

  /** The driver reads facts ahead of the events it holds back (Fen): a pool may stop relaying while nobody iterates. */
  protected override get readsAhead(): boolean {
    return this.#driver.readsAhead ?? false;
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

  /** @internal The parent process is exiting: SIGKILL what is left, release the channel and the sandbox's tmp, synchronously. */
  killNow(): void {
    this.#process?.killNow();
    this.#driver.dispose(true);
    this.#process?.release();
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Start-up                                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  /**
   * The child runs (started, or adopted by attachRun): its exit ends the run, the watchdog covers a
   * parent killed without any hook, the driver reads its pipes, the bounds start.
   */
  #own(owned: OwnedChild): void {
    const child = owned.process;
    this.#process = child;
    this.#tenure = owned.tenure;
    void child.exited.then((exit) => this.#onChildGone(exit));
    if (child.pid === undefined) return; // the spawn error arrives through `exited`
    if (owned.durableError !== undefined) {
      // The run goes on owned by this parent alone until the cancel ends it.
      this.#verdict ??= { status: 'failed', code: 'channel-error', error: owned.durableError };
      this.#end(undefined, { cancel: true });
    }
    if (owned.watch !== undefined) watchLiveRun(this, owned.watch);
    this.#limiter?.watch(child);
    this.#driver.attach?.({
      pid: child.pid,
      stdin: child.stdin,
      stdout: child.stdout,
      signal: (signal) => child.signal(signal),
    });
    this.#armTimers();
  }

  #childListeners(): ChildListeners {
    return {
      output: (text, stream) => {
        if (this.listenerCount('output') > 0) this.emit('output', text, stream);
      },
      kill: (step) => this.emit('kill', step),
    };
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

  /**
   * The driver's `approve`: the caller's (the task's, after a hand-off), denied without asking once a budget limit
   * was reached, as the finalize that follows asks for an answer and no more tools.
   */
  #approve(request: ApprovalRequest): ApprovalAnswer | Promise<ApprovalAnswer> {
    const approve = this.#options.approve;
    if (this.#terms?.spent === true || approve === undefined) return false;
    return approve(request);
  }

  /**
   * The tree went over a limit: no cancel (the tree keeps growing while it would be read), the ladder at
   * once (SIGTERM now, SIGKILL after the grace). False when the run is already ending for another reason.
   */
  #onLimit(verdict: Verdict): boolean {
    if (this.#ended || this.#wrappingUp || this.#limitFailure !== undefined) return false;
    this.#limitFailure = verdict;
    this.#end(undefined, { immediate: true });
    return true;
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
    if (how.cancel === true && !this.#mirror.terminal) this.#controls.sendOwn({ type: 'cancel' });
    this.#controls.open = false;
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
      this.#driver.disconnect?.();
      this.#onPeerGone();
    }, graceMs);
  }

  /** Ready, with no turn open, every control answered and nothing waiting to be injected. */
  get #idle(): boolean {
    return this.#mirror.state === 'ready' && !this.#tally.turnOpen && this.#ledger.unacked === 0 && this.#ledger.undelivered === 0;
  }

  /**
   * keepAlive false: close once idle, after outputSchema's repair turn when the answer needs one (a
   * follow-up: a driver still ending the turn takes it once the turn is over, an idle child at once).
   */
  #maybeClose(): void {
    if (this.#options.keepAlive || this.#closeSent || !this.#controls.open || !this.#driver.closeWhenIdle || !this.#idle) return;
    const repair = this.#terms?.repairBeforeClose();
    if (repair !== undefined && this.#controls.sendOwn({ type: 'follow-up', text: repair }) !== undefined) return;
    this.#closeSent = true;
    this.#controls.sendOwn({ type: 'close' });
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
        if (rejected) this.#tally.rejectedLines++;
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
        if (!this.#ended) this.#ledger.deliver(ref, delivery);
      },
      turnStarted: (turn) => {
        if (this.#ended) return;
        this.#tally.turnStarted(turn);
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
        if (model !== undefined) this.#tally.model = model;
        if (usage !== undefined) this.#terms?.modelCallEnded(usage);
      },
      result: (result) => {
        if (!this.#ended) this.#tally.resulted(result);
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
        if (!this.#ended) this.#tally.sessionId = id;
      },
      rateLimit: (report) => {
        if (!this.#ended) this.emit('rate-limit', report);
      },
      blocked: (id, what) => this.#bounds.blocked(id, what),
      unblocked: (id) => this.#bounds.unblocked(id),
    };
  }

  #onEvent(event: RunEvent, bytes = 0): void {
    if (this.#exit.closed || (this.#ended && !this.#exit.eventsBehind)) return;
    this.#bounds.seen();
    if (event.type === 'exit') {
      this.#exit.childExit(event);
      this.#ledger.settlePending();
      return;
    }
    this.#publish(event, bytes);
    this.#ledger.settlePending();
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
    this.#tally.turnCompleted(report);
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
    this.#ledger.answer(ack, type, action === 'start-turn');
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
    if (this.#exit.closed || (this.#ended && !this.#exit.eventsBehind)) return;
    this.#bounds.seen();
    if (!countedAhead) this.#tally.rejectedLines++;
    this.emit('rejected', event);
    this.#publish(event, bytes);
  }

  #publish(event: RunEvent, bytes = 0): void {
    this.#controls.tellTaskWritten();
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
    this.#controls.open = false;
    // Everything the child wrote before it went is still to be read: the driver reads it all.
    const finishing = this.#driver.finish(
      exit === undefined
        ? undefined
        : { exitCode: exit.exitCode, signal: exit.signal, spawnFailed: exit.spawnError !== undefined },
    );
    const finished = finishing instanceof Promise ? await finishing : finishing;
    this.#bounds.clear();
    this.#options.signal?.removeEventListener('abort', this.#onAbort);
    this.#ledger.giveUp();
    // The answer is read before the exit event goes out: outputSchema's verdict on it is the run's.
    const result = this.#tally.result;
    const answer = result === undefined ? undefined : await result.answer;
    // A child its own RLIMIT_CPU killed (SIGXCPU) ended for that limit.
    if (exit !== undefined) this.#limitFailure ??= this.#limiter?.exitVerdict(exit, this.#options.sandbox !== undefined);
    const decided = finalVerdict({
      command: this.#command,
      exit,
      limitFailure: this.#limitFailure,
      protocolFailure: this.#protocolFailure,
      childExit: this.#childExit,
      parentVerdict: this.#verdict,
      reachedAgent: this.#reachedAgent,
    });
    const { verdict, fields } = this.#terms?.judge(decided, answer?.finalText) ?? { verdict: decided, fields: {} };
    if (this.#childExit === undefined || verdict !== decided) this.#mirror.exit(verdict.status);
    // The facts are all in; events the driver still holds follow as the consumers take them.
    this.#exit.decided(verdict, finished, this);
    const report = this.#process === undefined ? NO_PROCESS : await this.#process.reaped;
    this.#finish(verdict, report, answer, fields);
  }

  /** The run ends before anything was started (aborted signal, a spent shared budget, a channel that could not be set up). */
  async #finishUnstarted(): Promise<void> {
    await Promise.resolve();
    const verdict = this.#verdict!;
    this.#mirror.exit(verdict.status);
    this.#exit.synthetic(verdict);
    this.#finish({ ...verdict, fromChild: false }, NO_PROCESS, undefined);
  }

  /** `fields`: what the terms added when they judged the verdict (else they judge it now: every end reports its budget). */
  #finish(verdict: FinalVerdict, report: ProcessReport, answer: Answer | undefined, fields?: TermsFields): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#limiter?.stop();
    const outcome = buildOutcome({
      runId: this.id,
      protocol: this.#options.protocol,
      ...this.#tally.facts(),
      verdict,
      report,
      answer,
      durationMs: Date.now() - this.#measuredFrom,
      fields: fields ?? this.#terms?.judge(verdict, answer?.finalText).fields ?? {},
      limits: this.#limiter?.report(),
    });
    this.#tenure?.end();
    this.#driver.dispose();
    // After the answer was read: a file the child named in the sandbox's private tmp is gone with it.
    this.#process?.release();
    if (this.#launched) unregisterLiveRun(this);
    this.settle(outcome);
  }
}
