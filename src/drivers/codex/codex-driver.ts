// The codex driver behind the seam: `codex app-server` started with the caller's args, the pure session on the shared stdio channel, its facts to the run core.
import type { Control, Driver, DriverContext, Launch, ProcessExitInfo, ProcessIO, Protocol, SendOutcome } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import { packageVersion } from '../../text/package-version.js';
import { EventStamper } from '../shared/envelope.js';
import { rejectedEvent } from '../shared/rejected.js';
import { answerAfterReturn, forwardFacts } from '../shared/session.js';
import { StdioChannel } from '../shared/stdio/channel.js';
import { TimerSet } from '../shared/timer-set.js';
import { CodexSession } from './codex-session.js';
import type { CodexFacts } from './session-io.js';

/** The bound of every request subvisor sends once the thread runs (`turn/start`, `turn/steer`, `turn/interrupt`). */
export const CODEX_REQUEST_MS = 30_000;

/**
 * One `codex app-server` process (app-server protocol v2 over JSON lines on stdio, no `"jsonrpc"` member): the
 * protocol logic lives in {@link CodexSession}; this class starts the process, puts the session on the shared
 * stdio channel and turns its facts into the core's.
 */
class CodexDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly #context: DriverContext;
  readonly #session: CodexSession;
  readonly #channel: StdioChannel;
  readonly #stamper: EventStamper;
  readonly #timers = new TimerSet();
  /** The seq of the last event published: rate-limit news shares the seq of the event of its notification. */
  #seq = 0;

  constructor(context: DriverContext) {
    this.#context = context;
    this.#stamper = new EventStamper(context.runId);
    const options = context.options;
    this.#channel = new StdioChannel({
      maxLineBytes: options.maxFrameBytes,
      shouldPause: () => context.shouldPause(),
      lines: { line: (text, lineNumber) => this.#session.lines.line(text, lineNumber), overlong: (rejection, lineNumber, head) => this.#session.lines.overlong(rejection, lineNumber, head) },
      // Usually the child is exiting (EPIPE): its exit decides the outcome; later writes report themselves.
      inputFailed: (what) => context.sink.event(this.#stamper.at({ type: 'error', error: `codex's stdin failed (${what})`, source: 'subvisor' }, ++this.#seq)),
    });
    this.#session = new CodexSession(
      {
        send: (message) => this.#channel.write(message),
        endInput: () => this.#channel.endInput(),
        setTimer: this.#timers.set,
      },
      this.#facts(),
      {
        protocol: options.protocol,
        task: options.task,
        cwd: options.cwd ?? process.cwd(),
        args: options.args,
        resume: options.resume,
        approve: options.approve,
        answerQuestion: options.answerQuestion,
        outputSchema: options.outputSchema,
        maxAnswerChars: options.maxAnswerChars,
        clientVersion: packageVersion(),
        handshakeMs: options.readyTimeoutMs,
        requestMs: CODEX_REQUEST_MS,
      },
    );
  }

  launch(): Launch {
    const { options } = this.#context;
    const taskRef = this.#session.taskRef;
    return {
      process: { command: options.command, args: ['app-server', ...options.args], env: {}, stdin: 'pipe', stdout: 'driver' },
      ...(taskRef === undefined ? {} : { taskRef }),
    };
  }

  attach(io: ProcessIO): void {
    this.#channel.attach(io);
    this.#session.start();
  }

  send(control: Control): SendOutcome {
    return answerAfterReturn(this.#context.sink, this.#session.send(control));
  }

  resume(): void {
    this.#channel.resume();
  }

  async finish(exit: ProcessExitInfo | undefined): Promise<void> {
    // Read what Codex wrote before it went (bounded: a tool's process holding stdout open is not waited for).
    const unterminated = await this.#channel.finish();
    if (unterminated !== undefined && unterminated !== '') this.#session.lines.line(unterminated, 0);
    const end = this.#session.finish(exit === undefined ? { exitCode: null, signal: null } : exit);
    if (end !== undefined && exit?.spawnFailed !== true) this.#context.sink.exit(end);
    this.#timers.clear();
  }

  dispose(): void {
    this.#session.dispose();
    this.#timers.clear();
    this.#channel.dispose();
  }

  #facts(): CodexFacts {
    const sink = this.#context.sink;
    return {
      ...forwardFacts(this.#context, (draft) => sink.event(this.#stamper.at(draft, draft.type === 'rate-limit' ? this.#seq : ++this.#seq))),
      rejected: (rejection) => sink.rejected(rejectedEvent(rejection, false)),
      rateLimit: (fields) => sink.rateLimit(fields),
      fatal: (code, error) => sink.fatal(code, error),
    };
  }


}

/**
 * Codex through `codex app-server` (`command` defaults to `codex`): threads, turns, steers, interrupts and
 * approvals over JSON-RPC on stdio. Codex reports tokens, never a cost.
 */
export const codexProtocol: Protocol = {
  asksApproval: true,
  defaultCommand: 'codex',
  resumes: true,
  // A turn is one turn/start; its usage comes with thread/tokenUsage/updated (tokens only).
  reports: { turns: true, toolCalls: true, tokens: true, costUsd: false },
  // finalize: turn/interrupt, then one last turn; every prompt goes on in the same thread.
  capabilities: { finalize: true, continueConversation: true },
  validate(options: ResolvedRunOptions): void {
    if (options.args.includes('--listen') || options.args.some((arg) => arg.startsWith('--listen='))) {
      throw new TypeError("protocol 'codex' speaks to codex app-server over stdio: options.args must not choose another transport (--listen)");
    }
  },
  create: (context) => new CodexDriver(context),
};
