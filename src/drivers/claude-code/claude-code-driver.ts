// The claude-code driver behind the seam: `claude` in stream-json mode with the caller's args, its pure session on the shared stdio session driver, the socket it leaves removed.
import type { DriverContext, ProcessExitInfo, ProcessIO, Protocol } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import { StdioSessionDriver } from '../shared/stdio/session-driver.js';
import { ClaudeSession } from './claude-session.js';
import { claudeSocketPath, removeLeftoverSocket } from './leftover-socket.js';

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
 * One `claude` process speaking stream-json on stdio: the protocol logic lives in {@link ClaudeSession}, the
 * shared stdio session driver runs it; this class adds the socket a killed Claude Code leaves.
 */
class ClaudeCodeDriver extends StdioSessionDriver<ClaudeSession> {
  /** The process's pid, which names the socket it leaves when killed. */
  #pid: number | undefined;

  constructor(context: DriverContext) {
    const options = context.options;
    super(context, {
      agent: 'claude',
      args: claudeArgs(options),
      session: (io, facts) =>
        new ClaudeSession(io, facts, {
          protocol: options.protocol,
          task: options.task,
          approve: options.approve,
          maxAnswerChars: options.maxAnswerChars,
          requestMs: CLAUDE_REQUEST_MS,
          resumes: options.resume !== undefined,
        }),
    });
  }

  override attach(io: ProcessIO): void {
    this.#pid = io.pid;
    super.attach(io);
  }

  override async finish(exit: ProcessExitInfo | undefined): Promise<void> {
    await super.finish(exit);
    // The process is gone: a socket it left (it was killed) is removed.
    if (this.#pid !== undefined) removeLeftoverSocket(claudeSocketPath(this.context.options.env, this.#pid));
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
