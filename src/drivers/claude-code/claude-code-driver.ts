// The claude-code driver behind the seam: `claude` in stream-json mode with the caller's args, the pure session on the shared stdio channel, its facts to the run core.
import type { Control, Driver, DriverContext, Launch, ProcessExitInfo, ProcessIO, Protocol, SendOutcome } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import { EventStamper } from '../shared/envelope.js';
import { rejectedEvent } from '../shared/rejected.js';
import { answerAfterReturn, forwardFacts } from '../shared/session.js';
import { StdioChannel } from '../shared/stdio/channel.js';
import { TimerSet } from '../shared/timer-set.js';
import { ClaudeSession } from './claude-session.js';
import { claudeSocketPath, removeLeftoverSocket } from './leftover-socket.js';
import type { ClaudeFacts } from './session-io.js';

/** The bound of an `interrupt`'s answer. */
export const CLAUDE_REQUEST_MS = 30_000;

/**
 * What subvisor always passes, before the caller's args: stream-json both ways (`--verbose` is required with it),
 * streamed deltas, permission questions on stdio (`can_use_tool`), and each user line echoed when Claude Code
 * takes it up (how a steer's delivery is seen).
 */
export const CLAUDE_FLAGS: readonly string[] = [
  '--output-format', 'stream-json',
  '--input-format', 'stream-json',
  '--verbose',
  '--include-partial-messages',
  '--permission-prompt-tool', 'stdio',
  '--replay-user-messages',
];

/** The flags subvisor owns: a caller's own would change the channel. */
const OWNED = ['--output-format', '--input-format', '--permission-prompt-tool', '--sdk-url'];

/** Claude Code's arguments: subvisor's flags, the budget's and `resume`'s, then the caller's. */
export function claudeArgs(options: Pick<ResolvedRunOptions, 'args' | 'budget' | 'resume'>): string[] {
  const args = [...CLAUDE_FLAGS];
  const budget = options.budget;
  if (budget?.maxTurns !== undefined) args.push('--max-turns', String(budget.maxTurns));
  if (budget?.maxCostUsd !== undefined) args.push('--max-budget-usd', String(budget.maxCostUsd));
  if (options.resume !== undefined) args.push('--resume', options.resume);
  return [...args, ...options.args];
}

/**
 * One `claude` process speaking stream-json on stdio: the protocol logic lives in {@link ClaudeSession}; this
 * class starts the process, puts the session on the shared stdio channel and turns its facts into the core's.
 */
class ClaudeCodeDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly #context: DriverContext;
  readonly #session: ClaudeSession;
  readonly #channel: StdioChannel;
  readonly #stamper: EventStamper;
  readonly #timers = new TimerSet();
  /** The seq of the last event published: rate-limit news shares the seq of the event of its line. */
  #seq = 0;
  /** The process's pid, which names the socket it leaves when killed. */
  #pid: number | undefined;

  constructor(context: DriverContext) {
    this.#context = context;
    this.#stamper = new EventStamper(context.runId);
    const options = context.options;
    this.#channel = new StdioChannel({
      maxLineBytes: options.maxFrameBytes,
      shouldPause: () => context.shouldPause(),
      lines: { line: (text, lineNumber) => this.#session.lines.line(text, lineNumber), overlong: (rejection, lineNumber, head) => this.#session.lines.overlong(rejection, lineNumber, head) },
      // Usually the child is exiting (EPIPE): its exit decides the outcome; later writes report themselves.
      inputFailed: (what) => context.sink.event(this.#stamper.at({ type: 'error', error: `claude's stdin failed (${what})`, source: 'subvisor' }, ++this.#seq)),
    });
    this.#session = new ClaudeSession(
      {
        send: (message) => this.#channel.write(message),
        endInput: () => this.#channel.endInput(),
        setTimer: this.#timers.set,
      },
      this.#facts(),
      {
        protocol: options.protocol,
        task: options.task,
        approve: options.approve,
        maxAnswerChars: options.maxAnswerChars,
        requestMs: CLAUDE_REQUEST_MS,
        resumes: options.resume !== undefined,
      },
    );
  }

  launch(): Launch {
    const { options } = this.#context;
    const taskRef = this.#session.taskRef;
    return {
      process: { command: options.command, args: claudeArgs(options), env: {}, stdin: 'pipe', stdout: 'driver' },
      ...(taskRef === undefined ? {} : { taskRef }),
    };
  }

  attach(io: ProcessIO): void {
    this.#pid = io.pid;
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
    // Read what Claude Code wrote before it went (bounded: a tool's process holding stdout open is not waited for).
    const unterminated = await this.#channel.finish();
    if (unterminated !== undefined && unterminated !== '') this.#session.lines.line(unterminated, 0);
    const end = this.#session.finish(exit === undefined ? { exitCode: null, signal: null } : exit);
    if (end !== undefined && exit?.spawnFailed !== true) this.#context.sink.exit(end);
    this.#timers.clear();
    // The process is gone: a socket it left (it was killed) is removed.
    if (this.#pid !== undefined) removeLeftoverSocket(claudeSocketPath(this.#context.options.env, this.#pid));
  }

  dispose(): void {
    this.#session.dispose();
    this.#timers.clear();
    this.#channel.dispose();
  }

  #facts(): ClaudeFacts {
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
 * Claude Code through `claude --input-format stream-json` (`command` defaults to `claude`): turns, steers,
 * interrupts and permission questions over JSON lines on stdio. Claude Code reports tokens and a cost.
 */
export const claudeCodeProtocol: Protocol = {
  asksApproval: true,
  defaultCommand: 'claude',
  resumes: true,
  // A turn is one user line up to its result, which carries the turn's usage and the process's cost so far.
  reports: { turns: true, toolCalls: true, tokens: true, costUsd: true },
  // finalize: interrupt, then one last turn; every prompt goes on in the same conversation.
  capabilities: { finalize: true, continueConversation: true },
  validate(options: ResolvedRunOptions): void {
    for (const flag of OWNED) {
      if (options.args.some((arg) => arg === flag || arg.startsWith(`${flag}=`))) {
        throw new TypeError(`protocol 'claude-code' speaks stream-json with Claude Code on stdio: options.args must not set ${flag}`);
      }
    }
  },
  create: (context) => new ClaudeCodeDriver(context),
};
