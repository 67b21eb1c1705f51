// The driver of a pure session on the stdio channel: the process plan, the channel's wiring, the timers, the session's facts stamped and forwarded to the core.
import type { Control, Driver, DriverContext, Launch, ProcessExitInfo, ProcessIO, SendOutcome } from '../../../protocol/driver.js';
import { EventStamper } from '../envelope.js';
import { rejectedEvent } from '../rejected.js';
import { answerAfterReturn, forwardFacts } from '../session.js';
import type { ChildEnd, ControlVerdict } from '../session.js';
import { TimerSet } from '../timer-set.js';
import { StdioChannel } from './channel.js';
import type { StdioLines } from './channel.js';
import type { StdioSessionFacts, StdioSessionIo } from './session-io.js';

/** What the driver asks of its session: lines in, controls, the end. */
export interface StdioSession {
  readonly lines: StdioLines;
  /** The ref of the task's prompt, when the run has one. */
  readonly taskRef: number | undefined;
  /** The child is attached: the handshake (or the first write) begins. */
  start(): void;
  send(control: Control): ControlVerdict;
  /** The process is gone: how the child ended the run, when the session decides it. */
  finish(exit: { exitCode: number | null; signal: string | null }): ChildEnd | undefined;
  dispose(): void;
}

/** What differs between the stdio session drivers. */
export interface StdioSessionPlan<S extends StdioSession> {
  /** The child as a message names it: `<agent>'s stdin failed`. */
  agent: string;
  /** The process's arguments (the command is `options.command`). */
  args: readonly string[];
  /** The pure session, on the io and facts the driver gives it. */
  session(io: StdioSessionIo, facts: StdioSessionFacts): S;
}

/**
 * One child speaking JSON lines on stdio, its protocol in a pure session: this class starts the process,
 * puts the session on the shared stdio channel and turns its facts into the core's. A driver with more to
 * do (claude-code's leftover socket) extends it.
 */
export class StdioSessionDriver<S extends StdioSession = StdioSession> implements Driver {
  readonly closeWhenIdle = true;
  protected readonly context: DriverContext;
  readonly #session: S;
  readonly #args: readonly string[];
  readonly #channel: StdioChannel;
  readonly #stamper: EventStamper;
  readonly #timers = new TimerSet();
  /** The seq of the last event published: rate-limit news shares the seq of the event of the line that carried it. */
  #seq = 0;

  constructor(context: DriverContext, plan: StdioSessionPlan<S>) {
    this.context = context;
    this.#stamper = new EventStamper(context.runId);
    this.#args = plan.args;
    const options = context.options;
    this.#channel = new StdioChannel({
      maxLineBytes: options.maxFrameBytes,
      shouldPause: () => context.shouldPause(),
      lines: { line: (text, lineNumber) => this.#session.lines.line(text, lineNumber), overlong: (rejection, lineNumber, head) => this.#session.lines.overlong(rejection, lineNumber, head) },
      // Usually the child is exiting (EPIPE): its exit decides the outcome; later writes report themselves.
      inputFailed: (what) => context.sink.event(this.#stamper.at({ type: 'error', error: `${plan.agent}'s stdin failed (${what})`, source: 'subvisor' }, ++this.#seq)),
    });
    this.#session = plan.session(
      { send: (message) => this.#channel.write(message), endInput: () => this.#channel.endInput(), setTimer: this.#timers.set },
      this.#facts(),
    );
  }

  launch(): Launch {
    const taskRef = this.#session.taskRef;
    return {
      process: { command: this.context.options.command, args: [...this.#args], env: {}, stdin: 'pipe', stdout: 'driver' },
      ...(taskRef === undefined ? {} : { taskRef }),
    };
  }

  attach(io: ProcessIO): void {
    this.#channel.attach(io);
    this.#session.start();
  }

  send(control: Control): SendOutcome {
    return answerAfterReturn(this.context.sink, this.#session.send(control));
  }

  resume(): void {
    this.#channel.resume();
  }

  async finish(exit: ProcessExitInfo | undefined): Promise<void> {
    // Read what the child wrote before it went (bounded: a tool's process holding stdout open is not waited for).
    const unterminated = await this.#channel.finish();
    if (unterminated !== undefined && unterminated !== '') this.#session.lines.line(unterminated, 0);
    const end = this.#session.finish(exit === undefined ? { exitCode: null, signal: null } : exit);
    if (end !== undefined && exit?.spawnFailed !== true) this.context.sink.exit(end);
    this.#timers.clear();
  }

  dispose(): void {
    this.#session.dispose();
    this.#timers.clear();
    this.#channel.dispose();
  }

  #facts(): StdioSessionFacts {
    const sink = this.context.sink;
    return {
      ...forwardFacts(this.context, (draft) => sink.event(this.#stamper.at(draft, draft.type === 'rate-limit' ? this.#seq : ++this.#seq))),
      rejected: (rejection) => sink.rejected(rejectedEvent(rejection, false)),
      rateLimit: (fields) => sink.rateLimit(fields),
      fatal: (code, error) => sink.fatal(code, error),
    };
  }
}
