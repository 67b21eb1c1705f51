// The bounds the core puts on every run, whatever its protocol: ready, deadline, finalize grace, a silent turn, a request nobody answers.
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';
import type { RunState } from '../wire/index.js';
import type { Verdict } from './outcome.js';
import { RunTimers } from './run-timers.js';
import { StallWatchdog } from './stall-watchdog.js';

/** How the core makes sure the child goes (see SupervisedRun's one stop path). */
export interface EndHow {
  /** Send the child a cancel first, when it can still hear one. */
  cancel?: boolean;
  /** Skip the ladder's first grace: SIGTERM at once (a child that is not ready reads no controls). */
  immediate?: boolean;
  /** SIGKILL the tree now, no grace at all. */
  now?: boolean;
  /** Also run a faster ladder with this grace (parent shutdown). */
  hurryMs?: number;
}

/** What the bounds ask of the run they guard. */
export interface BoundedRun {
  /** The mirrored state. */
  readonly state: RunState;
  /** The child can still act: its process runs, or (no process) the driver's peer is there. */
  readonly childAlive: boolean;
  /** The child said how it ended: a deadline or finalize grace no longer applies. */
  readonly childExited: boolean;
  /** A run without a process (a daemon), which does not know the run's deadline. */
  readonly daemon: boolean;
  /** The outcome is settled. */
  readonly ended: boolean;
  /** Ends the run: the core's one stop path. */
  end(verdict: Verdict, how: EndHow): void;
}

/**
 * Each bound ends the run with its own verdict. Every timer is unref'd and cleared at the end; the stall
 * watchdog watches only while a turn is open; a blocked request is forgotten when it is settled.
 */
export class RunBounds {
  readonly #options: ResolvedRunOptions;
  readonly #run: BoundedRun;
  readonly #timers = new RunTimers();
  readonly #watchdog: StallWatchdog;
  /** Requests the driver cannot answer, each with the timer that bounds its wait (see DriverSink.blocked). */
  readonly #blocked = new Map<string, NodeJS.Timeout>();
  /** The deadline (the options', or a task's handed over later: see {@link takeTask}). */
  #deadlineMs: number | undefined;
  #stallTimeoutMs: number | undefined;
  /** The child was told its deadline at its start (FEN_WIRE_DEADLINE): false for a deadline that came with a later task. */
  #childKnowsDeadline = true;

  constructor(options: ResolvedRunOptions, run: BoundedRun) {
    this.#options = options;
    this.#run = run;
    this.#deadlineMs = options.deadlineMs;
    this.#stallTimeoutMs = options.stallTimeoutMs;
    this.#watchdog = new StallWatchdog(options.stallTimeoutMs, (silentMs) => this.#onStall(silentMs));
  }

  /** Wall time of the last line the child wrote (see `Run.lastEventAt`). */
  get lastEventAt(): number | undefined {
    return this.#watchdog.lastEventAt;
  }

  /** The child was started (or connected): the ready timer and the deadline run from now. */
  arm(): void {
    const options = this.#options;
    this.#timers.after('ready', options.readyTimeoutMs, () => this.#onReadyTimeout());
    this.#armDeadline();
  }

  /**
   * A task handed to a run that waited for one: its deadline and stall bound from now. The child was started
   * before and was never told this deadline: past it the core cancels it first, then the ladder.
   */
  takeTask(deadlineMs: number | undefined, stallTimeoutMs: number | undefined): void {
    this.#deadlineMs = deadlineMs;
    this.#stallTimeoutMs = stallTimeoutMs;
    this.#childKnowsDeadline = false;
    this.#watchdog.timeoutMs = stallTimeoutMs;
    this.#armDeadline();
  }

  #armDeadline(): void {
    const at = this.#deadlineAt;
    if (at !== undefined) this.#timers.at('deadline', at, () => this.#onDeadline());
  }

  /** When the deadline passes: a child told it sees whole seconds rounded up, so the parent enforces the same instant. */
  get #deadlineAt(): number | undefined {
    const deadline = this.#deadlineMs;
    if (deadline === undefined) return undefined;
    return this.#childKnowsDeadline ? Math.ceil(deadline / 1000) * 1000 : deadline;
  }

  /** The child said ready. */
  ready(): void {
    this.#timers.clear('ready');
  }

  /** The child wrote a line (an event, a rejected line, a line read ahead). */
  seen(): void {
    this.#watchdog.seen();
  }

  turnStarted(): void {
    this.#watchdog.turnStarted();
  }

  turnCompleted(): void {
    this.#watchdog.turnCompleted();
  }

  /** Whether the (rounded-up) deadline has passed. */
  get pastDeadline(): boolean {
    const at = this.#deadlineAt;
    return at !== undefined && Date.now() >= at;
  }

  /** A finalize was accepted: it has `finalizeGraceMs` to end the run (once per run: a second one does not extend it). */
  finalizeAccepted(): void {
    if (this.#timers.isSet('finalize')) return;
    this.#timers.after('finalize', this.#options.finalizeGraceMs, () => {
      if (!this.#run.childAlive || this.#run.childExited) return;
      this.#run.end(
        { status: 'cancelled', code: 'finalize-timeout', error: `finalize did not end the run within ${this.#options.finalizeGraceMs} ms; cancelled` },
        { cancel: true },
      );
    });
  }

  /**
   * The agent waits on a request nobody here can answer: another client may settle it within
   * requestTimeoutMs; past that the run fails, as it could never go on by itself.
   */
  blocked(id: string, what: string): void {
    if (this.#run.ended || this.#blocked.has(id)) return;
    const waitMs = this.#options.requestTimeoutMs;
    const timer = setTimeout(() => {
      this.#blocked.delete(id);
      this.#run.end(
        {
          status: 'failed',
          code: 'request-unanswered',
          error: `the agent waited for an answer subvisor cannot give (${what}); nobody settled it within ${waitMs} ms (requestTimeoutMs)`,
        },
        { cancel: true },
      );
    }, waitMs).unref();
    this.#blocked.set(id, timer);
  }

  unblocked(id: string): void {
    clearTimeout(this.#blocked.get(id));
    this.#blocked.delete(id);
  }

  /** The run is ending: a silent child is no longer the watchdog's to stop. */
  stopWatching(): void {
    this.#watchdog.stop();
  }

  /** Every bound off (the child is gone). */
  clear(): void {
    this.#watchdog.stop();
    this.#timers.clearAll();
    for (const timer of this.#blocked.values()) clearTimeout(timer);
    this.#blocked.clear();
  }

  #onReadyTimeout(): void {
    if (this.#run.state !== 'starting' || !this.#run.childAlive) return;
    // A child that is not ready reads no controls: no cancel, straight to SIGTERM.
    this.#run.end(
      { status: 'failed', code: 'ready-timeout', error: `the child did not say ready within ${this.#options.readyTimeoutMs} ms` },
      { immediate: true },
    );
  }

  #onDeadline(): void {
    if (!this.#run.childAlive || this.#run.childExited) return;
    // A child process knows its deadline (FEN_WIRE_DEADLINE) and stops by itself. A daemon does not:
    // its work is cancelled, and the connection dropped at once (the deadline has passed).
    // A child handed its task later was never told the deadline either: it is cancelled, then the ladder.
    const daemon = this.#run.daemon;
    this.#run.end({ status: 'timed-out', code: 'deadline', error: 'the run passed its deadline' }, { cancel: daemon || !this.#childKnowsDeadline, immediate: daemon });
  }

  /** A turn is open and the child has been silent for stallTimeoutMs: cancel, then the kill ladder. */
  #onStall(silentMs: number): void {
    if (this.#run.ended) return;
    this.#run.end(
      {
        status: 'cancelled',
        code: 'stalled',
        error: `the child wrote nothing for ${silentMs} ms while a turn was open (stallTimeoutMs ${this.#stallTimeoutMs})`,
      },
      { cancel: true },
    );
  }
}
