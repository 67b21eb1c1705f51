// The mew driver behind the seam: the session on the shared daemon channel, the daemon process when spawnRun starts one, facts to the core.
import type { Control, Driver, DriverContext, Launch, Protocol, SendOutcome } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import { answerAfterReturn, forwardFacts } from '../shared/session.js';
import { DaemonChannel } from '../shared/socket/daemon-channel.js';
import { waitForListener } from './daemon-listener.js';
import type { ListenerWait } from './daemon-listener.js';
import { spellTag } from './messages.js';
import type { MewWireCase } from './messages.js';
import { MewSession } from './mew-session.js';
import type { MewFacts, MewIo } from './session-types.js';

/** Longest wait for a detaching connection's close handshake. */
const LEAVE_GRACE_MS = 1000;

/**
 * One run on a mew daemon. The protocol logic lives in the pure {@link MewSession}; this class puts it
 * on the shared {@link DaemonChannel} (connection, liveness with mew's own `ping`, re-attaching within
 * `reconnectGraceMs` when the session says nothing is at stake) and turns its facts into the core's.
 * Under spawnRun it also owns the daemon: the process is started first, the connection opened once the
 * daemon accepts TCP connections, and the daemon is reaped by the kill ladder once the session ends.
 */
class MewDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly #context: DriverContext;
  readonly #channel: DaemonChannel;
  readonly #session: MewSession;
  readonly #wireCase: MewWireCase;
  readonly #ownsDaemon: boolean;
  #listenerWait: ListenerWait | undefined;
  #done = false;

  constructor(context: DriverContext, ownsDaemon: boolean) {
    this.#context = context;
    this.#ownsDaemon = ownsDaemon;
    const options = context.options;
    const connection = options.connection!;
    this.#wireCase = connection.mewTagCase;
    this.#channel = new DaemonChannel(context, {
      probe: () => ({ type: spellTag('ping', this.#wireCase) }),
      opened: () => this.#session.opened(),
      frame: (frame) => this.#session.onFrame(frame),
      lost: (end) => this.#session.connectionLost(end.code === 'no-pong' ? 'no-pong' : 'connection-lost', end.reason),
    });
    this.#session = new MewSession(this.#io(), this.#facts(), {
      protocol: options.protocol,
      task: options.task,
      cwd: options.cwd,
      sessionId: connection.sessionId ?? connection.resume,
      approve: options.approve,
      answerQuestion: options.answerQuestion,
      requestIdPrefix: `subvisor-${options.runId}`,
      maxAnswerChars: options.maxAnswerChars,
    });
  }

  launch(): Launch {
    const { options } = this.#context;
    const taskRef = this.#session.taskRef;
    const launch: Launch = taskRef === undefined ? {} : { taskRef };
    // The daemon's own output is its log: tailed into the outcome like any child's.
    if (this.#ownsDaemon) launch.process = { command: options.command, args: options.args, env: {}, stdin: 'ignore', stdout: 'tail' };
    else this.#channel.open();
    return launch;
  }

  attach(): void {
    // The daemon was spawned: connect once it listens (the ready timeout bounds the wait).
    const url = this.#context.options.connection!.url!;
    this.#listenerWait = waitForListener(url, () => {
      this.#listenerWait = undefined;
      if (!this.#done) this.#channel.open();
    });
  }

  send(control: Control): SendOutcome {
    if (this.#done) return { kind: 'broken', reason: 'the connection to mew is closed' };
    return answerAfterReturn(this.#context.sink, this.#session.send(control));
  }

  resume(): void {
    this.#channel.resume();
  }

  finish(): void {
    this.#release();
  }

  disconnect(): void {
    this.#done = true;
    this.#session.dispose();
    this.#channel.disconnect();
  }

  dispose(): void {
    this.#release();
  }

  #release(): void {
    this.#done = true;
    this.#listenerWait?.stop();
    this.#listenerWait = undefined;
    this.#session.dispose();
    this.#channel.dispose();
  }

  #io(): MewIo {
    return {
      send: (message) => this.#channel.send({ ...message, type: spellTag(message.type, this.#wireCase) }),
      leave: () => this.#channel.leave(Math.min(LEAVE_GRACE_MS, this.#context.options.killGraceMs)),
      attached: () => this.#channel.attached(),
    };
  }

  #facts(): MewFacts {
    const sink = () => this.#context.sink;
    return {
      ...forwardFacts(this.#context, (draft) => this.#channel.event(draft)),
      rejected: (rejection) => this.#channel.rejected(rejection),
      exit: (end) => sink().exit(end),
      fatal: (code, error) => sink().fatal(code, error),
      blocked: (id, what) => sink().blocked(id, what),
      unblocked: (id) => sink().unblocked(id),
    };
  }
}


function checkMewOptions(options: ResolvedRunOptions): void {
  const connection = options.connection;
  if (connection?.url !== undefined) {
    let scheme = '';
    try {
      scheme = new URL(connection.url).protocol;
    } catch {
      throw new TypeError('options.url is not a valid URL');
    }
    if (scheme !== 'ws:' && scheme !== 'wss:') throw new TypeError(`options.url must be a ws:// or wss:// URL, not ${scheme}//`);
  }
  if (connection?.sessionId !== undefined && connection.resume !== undefined && connection.sessionId !== connection.resume) {
    throw new TypeError("pass one of options.sessionId and options.resume (for mew both name the session to attach to)");
  }
  if (connection?.socketPath !== undefined) {
    throw new TypeError("protocol 'mew' speaks WebSocket only: pass options.url (ws://host:port), not options.socketPath");
  }
  for (const name of ['token', 'clientId'] as const) {
    if (connection?.[name] !== undefined) throw new TypeError(`options.${name} is not used by protocol 'mew' (mew's daemon has no authentication nor client ids)`);
  }
}

/**
 * What mew's sessions report and take: every `message_end` carries its usage and cost; finalize is a cancel,
 * then one last prompt; a prompt after an answer goes on in the same session.
 */
const MEW_REPORTS = { turns: true, toolCalls: true, tokens: true, costUsd: true } as const;
const MEW_CAPABILITIES = { finalize: true, continueConversation: true } as const;

/** `connectRun({ protocol: 'mew', url, task, cwd, resume })`: a session on a running mew daemon. */
export const mewConnectProtocol: Protocol = {
  asksApproval: true,
  reports: MEW_REPORTS,
  capabilities: MEW_CAPABILITIES,
  validate: checkMewOptions,
  create: (context) => new MewDriver(context, false),
};

/**
 * `spawnRun({ protocol: 'mew', command: 'mew', args: ['daemon', ...], url })`: starts the daemon as a
 * supervised child listening at `url`, then runs a session on it; the daemon is reaped at the end.
 */
export const mewSpawnProtocol: Protocol = {
  asksApproval: true,
  spawnsDaemon: true,
  reports: MEW_REPORTS,
  capabilities: MEW_CAPABILITIES,
  validate(options: ResolvedRunOptions): void {
    checkMewOptions(options);
    if (options.connection?.url === undefined) {
      throw new TypeError("protocol 'mew' under spawnRun needs options.url: the ws:// address the daemon it starts listens on");
    }
  },
  create: (context) => new MewDriver(context, true),
};
