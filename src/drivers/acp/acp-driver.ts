// The acp driver behind the seam: the caller's ACP agent (its command and args) started on stdio, its pure session on the shared stdio session driver.
import { resolve } from 'node:path';
import type { Driver, DriverContext, Protocol } from '../../protocol/driver.js';
import { packageVersion } from '../../text/package-version.js';
import { StdioSessionDriver } from '../shared/stdio/session-driver.js';
import { AcpSession } from './acp-session.js';

/** How long a cancelled prompt may take to answer `cancelled` before the agent's stdin ends anyway. */
export const ACP_CANCEL_GRACE_MS = 5_000;

/** After `session/load` answered, how long without an update ends the replay of its history (Gemini CLI 0.61.0 streams it after its answer). */
export const ACP_REPLAY_QUIET_MS = 500;

/**
 * One ACP agent process (Agent Client Protocol v1: JSON-RPC 2.0, one message per line on stdio): the protocol logic
 * lives in {@link AcpSession}, the shared stdio session driver runs it.
 */
function acpDriver(context: DriverContext): Driver {
  const options = context.options;
  return new StdioSessionDriver(context, {
    agent: 'the agent',
    args: options.args,
    session: (io, facts) =>
      new AcpSession(io, facts, {
        protocol: options.protocol,
        task: options.task,
        cwd: resolve(options.cwd ?? process.cwd()),
        resume: options.resume,
        approve: options.approve,
        maxAnswerChars: options.maxAnswerChars,
        clientVersion: packageVersion(),
        handshakeMs: options.readyTimeoutMs,
        cancelGraceMs: ACP_CANCEL_GRACE_MS,
        replayQuietMs: ACP_REPLAY_QUIET_MS,
      }),
  });
}

/**
 * Any Agent Client Protocol (v1) agent on stdio: `command` and `args` are the caller's, as each agent has its own
 * (`gemini --acp`, `qwen --acp`, `opencode acp`, `goose acp`, `claude-agent-acp`, `codex-acp`). Prompts, cancel,
 * permissions to `approve`; a steer while a prompt runs is refused (ACP v1 has none). Tokens where the agent reports
 * them; no cost budget (few agents report one).
 */
export const acpProtocol: Protocol = {
  asksApproval: true,
  resumes: true,
  reports: { turns: true, toolCalls: true, tokens: true, costUsd: false },
  // finalize: session/cancel, then one last prompt; every prompt goes on in the same session.
  capabilities: { finalize: true, continueConversation: true },
  // Nothing of its own to check: the command is the caller's (required), and the cwd is made absolute for ACP.
  validate(): void {},
  create: acpDriver,
};
