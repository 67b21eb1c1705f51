// The acp driver behind the seam: the caller's ACP agent (its command and args) started on stdio, the pure session on the shared stdio channel, its facts to the run core.
import { resolve } from 'node:path';
import type { Control, Driver, DriverContext, Launch, ProcessExitInfo, ProcessIO, Protocol, SendOutcome } from '../../protocol/driver.js';
import { packageVersion } from '../../text/package-version.js';
import { EventStamper } from '../shared/envelope.js';
import { rejectedEvent } from '../shared/rejected.js';
import { answerAfterReturn, forwardFacts } from '../shared/session.js';
import { StdioChannel } from '../shared/stdio/channel.js';
import { TimerSet } from '../shared/timer-set.js';
import { AcpSession } from './acp-session.js';
import type { AcpFacts } from './session-io.js';

/** How long a cancelled prompt may take to answer `cancelled` before the agent's stdin ends anyway. */
export const ACP_CANCEL_GRACE_MS = 5_000;

/** After `session/load` answered, how long without an update ends the replay of its history (Gemini CLI 0.61.0 streams it after its answer). */
export const ACP_REPLAY_QUIET_MS = 500;

/**
 * One ACP agent process (Agent Client Protocol v1: JSON-RPC 2.0, one message per line on stdio): the protocol logic
 * lives in {@link AcpSession}; this class starts the process, puts the session on the shared stdio channel and
 * turns its facts into the core's.
 */
class AcpDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly #context: DriverContext;
  readonly #session: AcpSession;
  readonly #channel: StdioChannel;
  readonly #stamper: EventStamper;
  readonly #timers = new TimerSet();
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
      inputFailed: (what) => context.sink.event(this.#stamper.at({ type: 'error', error: `the agent's stdin failed (${what})`, source: 'subvisor' }, ++this.#seq)),
    });
    this.#session = new AcpSession(
      { send: (message) => this.#channel.write(message), endInput: () => this.#channel.endInput(), setTimer: this.#timers.set },
      this.#facts(),
      {
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
      },
    );
  }

  launch(): Launch {
    const { options } = this.#context;
    const taskRef = this.#session.taskRef;
    return {
      process: { command: options.command, args: options.args, env: {}, stdin: 'pipe', stdout: 'driver' },
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
    // Read what the agent wrote before it went (bounded: a tool's process holding stdout open is not waited for).
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

  #facts(): AcpFacts {
    const sink = this.#context.sink;
    return {
      // Rate-limit news shares the seq of the event of the message that carried it (the turn-complete of a failed prompt).
      ...forwardFacts(this.#context, (draft) => sink.event(this.#stamper.at(draft, draft.type === 'rate-limit' ? this.#seq : ++this.#seq))),
      rejected: (rejection) => sink.rejected(rejectedEvent(rejection, false)),
      rateLimit: (fields) => sink.rateLimit(fields),
      fatal: (code, error) => sink.fatal(code, error),
    };
  }
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
  create: (context) => new AcpDriver(context),
};
