// The fuseraft drivers behind the seam: the spawn plan, stdin/stdout plumbing, and session facts to the run core.
import type { Control, Driver, DriverContext, Launch, ProcessExitInfo, ProcessIO, Protocol, SendOutcome } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import type { RejectedEvent, RunEvent } from '../../protocol/index.js';
import { LineSplitter } from '../../text/line-splitter.js';
import type { LineReceiver } from '../../text/line-splitter.js';
import type { JsonObject } from '../../wire/index.js';
import { BridgeSession } from './bridge-session.js';
import type { EventDraft } from '../shared/event-drafts.js';
import type { LineRejection } from './frames.js';
import { ReplSession } from './repl-session.js';
import type { FuseraftIo, SessionFacts } from './session-io.js';
import { answerAfterReturn, forwardFacts } from '../shared/session.js';

/** Which fuseraft transport a driver speaks. */
type Mode = 'repl' | 'bridge';

/** How long the driver waits for stdout to end after the process exited (a grandchild may hold it open). */
const STDOUT_DRAIN_MS = 2000;

/** The env variable that lets fuseraft ask questions on stdio (seed 002). */
const QUESTIONS_ENV = 'FUSERAFT_VSCODE_QUESTIONS';

/** Grace before SIGINT after an `interrupt`, and before the ladder for a process that lingers after saying it ends. */
function shortGraceMs(options: ResolvedRunOptions): number {
  return Math.min(1000, Math.floor(options.killGraceMs / 2));
}

/**
 * One fuseraft run: `repl --vscode` (a chat) or `run --bridge` (an orchestration session). The
 * protocol logic lives in the pure sessions; this class spawns, feeds them stdout lines, writes their
 * stdin lines, and turns their facts into the core's.
 */
class FuseraftDriver implements Driver {
  readonly closeWhenIdle: boolean;
  readonly readsAhead = false;
  readonly channelDir = '';
  readonly #context: DriverContext;
  readonly #mode: Mode;
  readonly #session: ReplSession | BridgeSession;
  readonly #lines: LineSplitter;
  /** Where the splitter hands each stdout line (one object for the run, not one per line). */
  readonly #receiver: LineReceiver = {
    line: (text) => this.#session.onLine(text),
    tooLong: (_lineNumber, limit, head) => this.#session.onOverlongLine(head, limit),
  };
  readonly #timers = new Set<NodeJS.Timeout>();
  #io: ProcessIO | undefined;
  #stdoutClosed: Promise<void> | undefined;
  #stdinFailed = false;
  #exitReported = false;
  #finished = false;
  #seq = 0;

  constructor(context: DriverContext, mode: Mode) {
    this.#context = context;
    this.#mode = mode;
    this.closeWhenIdle = mode === 'repl';
    const options = context.options;
    this.#lines = new LineSplitter(options.maxFrameBytes);
    const io: FuseraftIo = {
      write: (line) => this.#write(line),
      endInput: () => this.#io?.stdin?.end(),
      interrupt: () => void this.#io?.signal('SIGINT'),
      setTimer: (fn, ms) => this.#timer(fn, ms),
    };
    const common = {
      approve: options.approve,
      task: options.task,
      interruptGraceMs: shortGraceMs(options),
      maxAnswerChars: options.maxFinalTextBytes,
    };
    this.#session =
      mode === 'repl'
        ? new ReplSession(io, this.#facts(), { ...common, answerQuestion: options.answerQuestion })
        : new BridgeSession(io, this.#facts(), common);
  }

  launch(): Launch {
    const { options } = this.#context;
    const args = this.#mode === 'bridge' ? [...options.args, options.task!] : options.args;
    const env: Record<string, string> = {};
    // Questions only when someone answers them: fuseraft then offers its agent the ask-user tool.
    if (this.#mode === 'repl') env[QUESTIONS_ENV] = options.answerQuestion === undefined ? '0' : '1';
    const taskRef = this.#session.taskRef;
    return {
      process: { command: options.command, args, env, stdin: 'pipe', stdout: 'driver' },
      ...(taskRef === undefined ? {} : { taskRef }),
    };
  }

  attach(io: ProcessIO): void {
    this.#io = io;
    io.stdin?.on('error', (error: NodeJS.ErrnoException) => this.#onStdinError(error));
    const stdout = io.stdout;
    if (stdout === undefined) return;
    this.#stdoutClosed = new Promise((resolve) => stdout.once('close', () => resolve()));
    stdout.on('data', (chunk: Buffer) => {
      if (this.#finished) return;
      this.#lines.write(chunk, this.#receiver);
      if (this.#context.shouldPause()) stdout.pause();
    });
  }

  send(control: Control): SendOutcome {
    const verdict = this.#session.send(control);
    answerAfterReturn(this.#context.sink, verdict);
    return { kind: 'sent', ref: verdict.ref };
  }

  resume(): void {
    if (!this.#finished) this.#io?.stdout?.resume();
  }

  async finish(exit: ProcessExitInfo | undefined): Promise<void> {
    const stdout = this.#io?.stdout;
    if (stdout !== undefined && this.#stdoutClosed !== undefined) {
      // Read everything the child wrote before it went; a grandchild holding stdout open is not waited for.
      stdout.resume();
      await Promise.race([this.#stdoutClosed, new Promise<void>((resolve) => this.#timer(resolve, STDOUT_DRAIN_MS))]);
    }
    const unterminated = this.#lines.finish();
    if (unterminated !== undefined) this.#session.onLine(unterminated);
    this.#finished = true;
    stdout?.destroy();
    const end = this.#session.finish(exit === undefined ? { exitCode: null, signal: null } : exit);
    if (!this.#exitReported && end !== undefined && exit?.spawnFailed !== true) {
      this.#exitReported = true;
      this.#context.sink.exit(end);
    }
    this.#clearTimers();
  }

  disconnect(): void {
    // Never called: a fuseraft run always has a process.
  }

  dispose(): void {
    this.#finished = true;
    this.#session.dispose();
    this.#clearTimers();
    this.#io?.stdout?.destroy();
    this.#io?.stdin?.destroy();
  }

  /* ---------------------------------------------------------------------------------------------- */

  #facts(): SessionFacts {
    return {
      // A bridge turn is one agent's: the session goes on by itself, so the state stays running.
      ...forwardFacts(this.#context, (draft) => this.#context.sink.event(this.#stamp(draft)), { idle: this.#mode === 'repl' }),
      rejected: (rejection, fatal) => this.#rejected(rejection, fatal),
      ending: () => this.#onEnding(),
    };
  }

  /** fuseraft said it is about to exit: if it lingers, report how it ended so the kill ladder reaps it. */
  #onEnding(): void {
    this.#timer(() => {
      if (this.#finished || this.#exitReported) return;
      const end = this.#session.provisionalEnd();
      if (end === undefined) return;
      this.#exitReported = true;
      this.#context.sink.exit(end);
    }, shortGraceMs(this.#context.options));
  }

  #rejected(rejection: LineRejection, fatal: boolean): void {
    const event: RejectedEvent = { type: 'rejected', code: rejection.code, reason: rejection.reason, fatal };
    if (rejection.lineType !== undefined) event.lineType = rejection.lineType;
    if (rejection.errors !== undefined) event.errors = rejection.errors;
    if (fatal) this.#context.sink.fatal('version-mismatch', `protocol failure (${rejection.code}): ${rejection.reason}`);
    this.#context.sink.rejected(event);
  }

  /**
   * Adds the envelope to the draft itself (each draft is a fresh object the session hands over once; a
   * copy per event was the driver's largest cost). fuseraft has no sequence numbers: `seq` counts the run's events.
   */
  #stamp(draft: EventDraft): RunEvent {
    const event = draft as RunEvent & { v: 1; seq: number; run: string };
    event.v = 1;
    event.seq = ++this.#seq;
    event.run = this.#context.runId;
    return event;
  }

  #write(line: JsonObject): boolean {
    const stdin = this.#io?.stdin;
    if (stdin === undefined || this.#stdinFailed || stdin.destroyed || stdin.writableEnded) return false;
    stdin.write(`${JSON.stringify(line)}\n`);
    return true;
  }

  #onStdinError(error: NodeJS.ErrnoException): void {
    if (this.#stdinFailed) return;
    this.#stdinFailed = true;
    // Usually the child is exiting (EPIPE): its exit decides the outcome; later writes report themselves.
    this.#context.sink.event(this.#stamp({ type: 'error', error: `fuseraft's stdin failed (${error.code ?? error.message})`, source: 'subvisor' }));
  }

  #timer(fn: () => void, ms: number): { clear(): void } {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    this.#timers.add(timer);
    return {
      clear: () => {
        clearTimeout(timer);
        this.#timers.delete(timer);
      },
    };
  }

  #clearTimers(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }
}


/** `fuseraft repl --vscode --no-banner`: one chat over stdin/stdout. */
export const fuseraftProtocol: Protocol = {
  asksApproval: true,
  // message_end's counts may be null (a provider that reports none); fuseraft reports no cost.
  reports: { turns: true, toolCalls: true, tokens: true, costUsd: false },
  // finalize: an interrupt, then one last user_input; any prompt after an answer goes on in the same chat.
  capabilities: { finalize: true, continueConversation: true },
  validate: () => undefined,
  create: (context) => new FuseraftDriver(context, 'repl'),
};

/** `fuseraft run --bridge -c <config> <task>`: one orchestration session; the task is the last argument. */
export const fuseraftBridgeProtocol: Protocol = {
  asksApproval: true,
  // A turn is one agent message (its usage: tokens, never a cost); stdin takes approvals and interrupt only.
  reports: { turns: true, toolCalls: true, tokens: true, costUsd: false },
  capabilities: { finalize: false, continueConversation: false },
  validate(options: ResolvedRunOptions): void {
    if (options.task === undefined || options.task === '') {
      throw new TypeError("protocol 'fuseraft-bridge' needs options.task: it is fuseraft run's last argument");
    }
    // An argument that starts with '-' would be read as an option (a task of '--resume <id>' would resume another session).
    if (options.task.startsWith('-')) throw new RangeError("a 'fuseraft-bridge' task must not start with '-': fuseraft would read it as an option");
    if (options.answerQuestion !== undefined) {
      throw new TypeError("options.answerQuestion applies to protocol 'fuseraft' only: run --bridge reads no question_response");
    }
  },
  create: (context) => new FuseraftDriver(context, 'bridge'),
};
