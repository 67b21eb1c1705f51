// The fuseraft serve driver behind the seam: the pure session on the shared daemon channel (WebSocket or Unix socket), its facts to the core.
import type { Control, Driver, DriverContext, Launch, Protocol, SendOutcome } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import { answerAfterReturn, forwardFacts } from '../shared/session.js';
import { DaemonChannel } from '../shared/socket/daemon-channel.js';
import { serveHeaders } from './serve-hello.js';
import { ServeSession } from './serve-session.js';
import type { ServeFacts } from './serve-session.js';

/**
 * One run on fuseraft serve. The protocol logic lives in the pure {@link ServeSession}; this class puts it
 * on the shared {@link DaemonChannel} (the handshake's headers, liveness, re-attaching within
 * `reconnectGraceMs` under a client id) and turns its facts into the core's.
 */
class FuseraftServeDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly #context: DriverContext;
  readonly #channel: DaemonChannel;
  readonly #session: ServeSession;

  constructor(context: DriverContext) {
    this.#context = context;
    const options = context.options;
    const connection = options.connection!;
    this.#channel = new DaemonChannel(context, {
      headers: serveHeaders(connection),
      opened: (reattach) => this.#session.opened(reattach),
      frame: (frame) => this.#session.onFrame(frame),
      lost: () => this.#session.connectionLost(),
    });
    const leaveGraceMs = Math.min(1000, options.killGraceMs);
    this.#session = new ServeSession(
      {
        send: (message) => this.#channel.send(message),
        attached: () => this.#channel.attached(),
        leave: () => this.#channel.leave(leaveGraceMs),
      },
      this.#facts(),
      {
        protocol: options.protocol,
        task: options.task,
        resume: connection.resume,
        clientId: connection.clientId,
        approve: options.approve,
        answerQuestion: options.answerQuestion,
        maxAnswerChars: options.maxAnswerChars,
      },
    );
  }

  launch(): Launch {
    this.#channel.open();
    const taskRef = this.#session.taskRef;
    return taskRef === undefined ? {} : { taskRef };
  }

  send(control: Control): SendOutcome {
    return answerAfterReturn(this.#context.sink, this.#session.send(control));
  }

  resume(): void {
    this.#channel.resume();
  }

  async finish(): Promise<void> {
    this.#session.shutDown();
    // Nothing is left to read; the outcome waits until the socket is really closed.
    this.#channel.dispose();
    await this.#channel.closed();
  }

  disconnect(): void {
    this.#channel.disconnect();
  }

  dispose(): void {
    this.#channel.dispose();
  }

  /** The session's facts as the core's. Progress events carry no budget facts: they are broadcast to every client. */
  #facts(): ServeFacts {
    const sink = () => this.#context.sink;
    return {
      ...forwardFacts(this.#context, (draft) => this.#channel.event(draft), { meter: false }),
      rejected: (rejection, fatal, code) => this.#channel.rejected(rejection, fatal, code),
      fatal: (code, error) => sink().fatal(code, error),
      exit: (end) => sink().exit(end),
    };
  }
}

/** `fuseraft serve`: connectRun({ protocol: 'fuseraft-serve', url | socketPath, token, clientId, task | resume, approve }). */
export const fuseraftServeProtocol: Protocol = {
  asksApproval: true,
  // A turn is one task. Its progress is broadcast to every client (tool calls cannot be told apart) and its
  // result carries no usage; each user_input starts a new task, and a running task reads no input.
  reports: { turns: true, toolCalls: false, tokens: false, costUsd: false },
  capabilities: { finalize: false, continueConversation: false },
  validate(options: ResolvedRunOptions): void {
    const connection = options.connection;
    if (connection === undefined) throw new TypeError("protocol 'fuseraft-serve' is a daemon: start it with connectRun");
    if (connection.clientId !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(connection.clientId)) {
      throw new TypeError('options.clientId must be 1-64 characters of A-Z a-z 0-9 - _ (fuseraft serve\'s Fuseraft-Client-Id)');
    }
    if (connection.token !== undefined && connection.socketPath !== undefined) {
      throw new TypeError("options.token applies to fuseraft serve's WebSocket only: the Unix socket takes no token");
    }
    if (connection.resume !== undefined && connection.clientId === undefined) {
      throw new TypeError('options.resume needs options.clientId: fuseraft serve keeps a task for the client id that sent it');
    }
    if (options.cwd !== undefined) throw new TypeError("options.cwd does not apply to 'fuseraft-serve': the daemon runs tasks in its own directory");
  },
  create: (context) => new FuseraftServeDriver(context),
};
