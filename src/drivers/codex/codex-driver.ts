// The codex driver behind the seam: `codex app-server` started with the caller's args, its pure session on the shared stdio session driver.
import type { Driver, DriverContext, Protocol } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import { packageVersion } from '../../text/package-version.js';
import { StdioSessionDriver } from '../shared/stdio/session-driver.js';
import { CodexSession } from './codex-session.js';

/** The bound of every request subvisor sends once the thread runs (`turn/start`, `turn/steer`, `turn/interrupt`). */
export const CODEX_REQUEST_MS = 30_000;

/**
 * One `codex app-server` process (app-server protocol v2 over JSON lines on stdio, no `"jsonrpc"` member): the
 * protocol logic lives in {@link CodexSession}, the shared stdio session driver runs it.
 */
function codexDriver(context: DriverContext): Driver {
  const options = context.options;
  return new StdioSessionDriver(context, {
    agent: 'codex',
    args: ['app-server', ...options.args],
    session: (io, facts) =>
      new CodexSession(io, facts, {
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
      }),
  });
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
  create: codexDriver,
};
