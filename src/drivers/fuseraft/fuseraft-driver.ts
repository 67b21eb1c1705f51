// The fuseraft drivers behind the seam: the spawn plan, the session on the shared stdio channel, session facts to the run core.
import type { Control, Driver, DriverContext, Launch, ProcessExitInfo, ProcessIO, Protocol, SendOutcome } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import { BridgeSession } from './bridge-session.js';
import { EventStamper } from '../shared/envelope.js';
import type { FrameRejection } from '../shared/json-line.js';
import { rejectedEvent } from '../shared/rejected.js';
import { StdioChannel } from '../shared/stdio/channel.js';
import { TimerSet } from '../shared/timer-set.js';
import { ReplSession } from './repl-session.js';
import type { FuseraftIo, SessionFacts } from './session-io.js';
import { answerAfterReturn, forwardFacts } from '../shared/session.js';

/** Which fuseraft transport a driver speaks. */
type Mode = 'repl' | 'bridge';

/** The env variable that lets fuseraft ask questions on stdio (seed 002). */
const QUESTIONS_ENV = 'FUSERAFT_VSCODE_QUESTIONS';

/** Grace before SIGINT after an `interrupt`, and before the ladder for a process that lingers after saying it ends. */
function shortGraceMs(options: ResolvedRunOptions): number {
  return Math.min(1000, Math.floor(options.killGraceMs / 2));
}

/**
 * One fuseraft run: `repl --vscode` (a chat) or `run --bridge` (an orchestration session). The
 * protocol logic lives in the pure sessions; this class spawns, puts them on the shared stdio channel
 * (stdout lines in, stdin lines out), and turns their facts into the core's.
 */
class FuseraftDriver implements Driver {
  readonly closeWhenIdle: boolean;
  readonly #context: DriverContext;
  readonly #mode: Mode;
  readonly #session: ReplSession | BridgeSession;
  readonly #channel: StdioChannel;
  readonly #stamper: EventStamper;
  readonly #timers = new TimerSet();
  #exitReported = false;
  #finished = false;

  constructor(context: DriverContext, mode: Mode) {
    this.#context = context;
    this.#mode = mode;
    this.closeWhenIdle = mode === 'repl';
    this.#stamper = new EventStamper(context.runId);
    const options = context.options;
    this.#channel = new StdioChannel({
      maxLineBytes: options.maxFrameBytes,
      shouldPause: () => context.shouldPause(),
      lines: { line: (text) => this.#session.onLine(text), overlong: (rejection) => this.#session.onOverlongLine(rejection) },
      // Usually the child is exiting (EPIPE): its exit decides the outcome; later writes report themselves.
      inputFailed: (what) => context.sink.event(this.#stamper.next({ type: 'error', error: `fuseraft's stdin failed (${what})`, source: 'subvisor' })),
    });
    const io: FuseraftIo = {
      write: (line) => this.#channel.write(line).ok,
      endInput: () => this.#channel.endInput(),
      interrupt: () => void this.#channel.signal('SIGINT'),
      setTimer: this.#timers.set,
    };
    const common = {
      protocol: options.protocol,
      approve: options.approve,
      task: options.task,
      interruptGraceMs: shortGraceMs(options),
      maxAnswerChars: options.maxAnswerChars,
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
    this.#channel.attach(io);
  }

  send(control: Control): SendOutcome {
    return answerAfterReturn(this.#context.sink, this.#session.send(control));
  }

  resume(): void {
    this.#channel.resume();
  }

  async finish(exit: ProcessExitInfo | undefined): Promise<void> {
    // Read everything the child wrote before it went (bounded: a grandchild holding stdout open is not waited for).
    const unterminated = await this.#channel.finish();
    if (unterminated !== undefined) this.#session.onLine(unterminated);
    this.#finished = true;
    const end = this.#session.finish(exit === undefined ? { exitCode: null, signal: null } : exit);
    if (!this.#exitReported && end !== undefined && exit?.spawnFailed !== true) {
      this.#exitReported = true;
      this.#context.sink.exit(end);
    }
    this.#timers.clear();
  }

  dispose(): void {
    this.#finished = true;
    this.#session.dispose();
    this.#timers.clear();
    this.#channel.dispose();
  }

  /* ---------------------------------------------------------------------------------------------- */

  #facts(): SessionFacts {
    return {
      // A bridge turn is one agent's: the session goes on by itself, so the state stays running.
      ...forwardFacts(this.#context, (draft) => this.#context.sink.event(this.#stamper.next(draft)), { idle: this.#mode === 'repl' }),
      rejected: (rejection, fatal) => this.#rejected(rejection, fatal),
      ending: () => this.#onEnding(),
    };
  }

  /** fuseraft said it is about to exit: if it lingers, report how it ended so the kill ladder reaps it. */
  #onEnding(): void {
    this.#timers.set(() => {
      if (this.#finished || this.#exitReported) return;
      const end = this.#session.provisionalEnd();
      if (end === undefined) return;
      this.#exitReported = true;
      this.#context.sink.exit(end);
    }, shortGraceMs(this.#context.options));
  }

  #rejected(rejection: FrameRejection, fatal: boolean): void {
    if (fatal) this.#context.sink.fatal('version-mismatch', `protocol failure (${rejection.code}): ${rejection.reason}`);
    this.#context.sink.rejected(rejectedEvent(rejection, fatal));
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
