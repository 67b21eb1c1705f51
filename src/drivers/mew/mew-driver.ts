// The mew driver behind the seam: the connection (first connect, reconnects, detach), the daemon process when it owns one, facts to the core.
import type { Control, Driver, DriverContext, Launch, ProcessIO, SendOutcome } from '../../run/driver.js';
import type { Answer } from '../../run/outcome.js';
import type { OutcomeErrorCode, RejectedEvent, RunEvent } from '../../run/types/index.js';
import type { EventDraft } from '../fuseraft/event-drafts.js';
import type { SessionAnswer } from '../fuseraft/session-io.js';
import { encodeMessage } from './messages.js';
import type { MewWireCase } from './messages.js';
import { MewSession } from './mew-session.js';
import type { MewFacts, MewIo, MewTimer } from './session-types.js';

/** One connection to the daemon, as a transport opens it. */
export interface MewSocket {
  send(text: string): void;
  /** Closes in order (what was sent before goes first). */
  close(): void;
  /** Drops at once. */
  terminate(): void;
}

/** What a transport reports about one connection: open, then messages, then one `closed`. A failed connect is `closed` without `open`. */
export interface MewSocketHandlers {
  open(): void;
  message(text: string): void;
  /** The connection ended (or never opened): `refused` when nothing listened at the address. */
  closed(reason: string, refused: boolean): void;
}

/** Opens a connection to `url` (a WebSocket transport in production, an in-process daemon in tests). */
export type MewConnector = (url: string, handlers: MewSocketHandlers) => MewSocket;

/** The mew options of a run, resolved. */
export interface MewDriverConfig {
  url: string;
  sessionId: string | undefined;
  wireCase: MewWireCase;
  pingIntervalMs: number;
  pongTimeoutMs: number;
  /** How long a lost connection may take to come back (0: never re-opened). */
  reconnectGraceMs: number;
  /** When the driver started the daemon itself (spawnRun): connect attempts repeat until it listens. */
  ownsDaemon: boolean;
}

/** First delay between connect attempts; doubled each time up to {@link MAX_RETRY_MS}. */
const FIRST_RETRY_MS = 50;
const MAX_RETRY_MS = 1000;

/**
 * One run on a mew daemon. The protocol logic lives in the pure {@link MewSession}; this class opens
 * the connection (after the daemon's process started, when it owns one), retries it while a daemon it
 * started is still coming up, re-opens a lost one when the session asks (within the grace), and turns
 * the session's facts into the core's. Without a process the run ends when the connection is closed.
 */
export class MewDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly channelDir = '';
  readonly #context: DriverContext;
  readonly #config: MewDriverConfig;
  readonly #connect: MewConnector;
  readonly #session: MewSession;
  readonly #timers = new Set<NodeJS.Timeout>();
  #socket: MewSocket | undefined;
  /** The connection generation: handlers of an older one are ignored. */
  #generation = 0;
  #everOpened = false;
  #reconnectingSince: number | undefined;
  #detaching = false;
  #finished = false;
  #goneReported = false;
  #seq = 0;

  constructor(context: DriverContext, config: MewDriverConfig, connect: MewConnector) {
    this.#context = context;
    this.#config = config;
    this.#connect = connect;
    const options = context.options;
    this.#session = new MewSession(this.#io(), this.#facts(), {
      task: options.task,
      cwd: options.cwd,
      sessionId: config.sessionId,
      approve: options.approve,
      answerQuestion: options.answerQuestion,
      requestIdPrefix: `subvisor-${options.runId}`,
      pingIntervalMs: config.pingIntervalMs,
      pongTimeoutMs: config.pongTimeoutMs,
      reconnect: config.reconnectGraceMs > 0,
      maxAnswerChars: options.maxFinalTextBytes,
      wireCase: config.wireCase,
    });
  }

  launch(): Launch {
    const { options } = this.#context;
    const taskRef = this.#session.taskRef;
    const launch: Launch = taskRef === undefined ? {} : { taskRef };
    if (this.#config.ownsDaemon) {
      // The daemon's own output is its log: tailed into the outcome like any child's.
      launch.process = { command: options.command, args: options.args, env: {}, stdin: 'ignore', stdout: 'tail' };
    } else {
      queueMicrotask(() => this.#open());
    }
    return launch;
  }

  attach(_io: ProcessIO): void {
    this.#open();
  }

  send(control: Control): SendOutcome {
    const verdict = this.#session.send(control);
    // The core learns the ref from this return: the answer must come after it, and what the control sets off after that.
    if (verdict.status !== undefined) {
      const status = verdict.status;
      queueMicrotask(() => {
        this.#context.sink.ack(verdict.ref, status, verdict.reason);
        verdict.then?.();
      });
    }
    return { kind: 'sent', ref: verdict.ref };
  }

  resume(): void {
    // Messages are pushed by the socket; backpressure is the transport's (see docs/daemons.md, limits).
  }

  finish(): void {
    this.#finished = true;
    this.#session.dispose();
    this.#clearTimers();
    this.#socket?.terminate();
  }

  disconnect(): void {
    this.#detaching = true;
    this.#socket?.terminate();
    this.#reportGone();
  }

  dispose(): void {
    this.#finished = true;
    this.#session.dispose();
    this.#clearTimers();
    this.#socket?.terminate();
    this.#socket = undefined;
  }

  /* ---------------------------------------------------------------------------------------------- */

  /** Opens a connection; a refused one is retried while a daemon this run started may still be booting. */
  #open(delayMs = FIRST_RETRY_MS): void {
    if (this.#finished || this.#detaching) return;
    const generation = ++this.#generation;
    const current = () => generation === this.#generation && !this.#finished;
    this.#socket = this.#connect(this.#config.url, {
      open: () => {
        if (!current()) return;
        this.#everOpened = true;
        this.#reconnectingSince = undefined;
        this.#session.opened();
      },
      message: (text) => {
        if (current()) this.#session.onMessage(text);
      },
      closed: (reason, refused) => {
        if (!current()) return;
        this.#socket = undefined;
        this.#onClosed(reason, refused, delayMs);
      },
    });
  }

  #onClosed(reason: string, refused: boolean, delayMs: number): void {
    if (this.#detaching) return this.#reportGone();
    const retry = () => void this.#timer(() => this.#open(Math.min(delayMs * 2, MAX_RETRY_MS)), delayMs);
    if (!this.#everOpened) {
      // A daemon this run started is retried until the ready timeout; someone else's refusal is final.
      if (this.#config.ownsDaemon) return retry();
      const code = (refused ? 'connection-refused' : 'connection-lost') as OutcomeErrorCode;
      this.#context.sink.fatal(code, `could not connect to mew at ${this.#config.url}: ${reason}`);
      return this.#reportGone();
    }
    if (this.#reconnectingSince !== undefined) {
      if (Date.now() - this.#reconnectingSince + delayMs > this.#config.reconnectGraceMs) {
        return this.#session.reconnectFailed(`${reason} (gave up after ${this.#config.reconnectGraceMs} ms)`);
      }
      return retry();
    }
    this.#session.connectionLost(reason);
  }

  #io(): MewIo {
    return {
      send: (message) => {
        if (this.#socket === undefined) return false;
        this.#socket.send(encodeMessage(message, this.#config.wireCase));
        return true;
      },
      close: () => {
        this.#detaching = true;
        if (this.#socket === undefined) this.#reportGone();
        else this.#socket.close();
      },
      reconnect: () => {
        this.#reconnectingSince = Date.now();
        const stale = this.#socket;
        this.#socket = undefined;
        ++this.#generation;
        stale?.terminate();
        this.#open();
      },
      setTimer: (fn, ms) => this.#timer(fn, ms),
    };
  }

  #facts(): MewFacts {
    const sink = () => this.#context.sink;
    return {
      ready: () => sink().ready(),
      event: (draft) => sink().event(this.#stamp(draft)),
      rejected: (rejection) => {
        const event: RejectedEvent = { type: 'rejected', code: rejection.code, reason: rejection.reason, fatal: false };
        if (rejection.lineType !== undefined) event.lineType = rejection.lineType;
        if (rejection.errors !== undefined) event.errors = rejection.errors;
        sink().rejected(event);
      },
      ack: (ref, status, reason) => sink().ack(ref, status, reason),
      delivery: (ref, delivery) => sink().delivery(ref, delivery),
      turnStarted: (turn) => sink().turnStarted(turn),
      turnCompleted: (turn, stopReason, usage) => sink().turnCompleted({ turn, stopReason, ...(usage === undefined ? {} : { usage }) }),
      result: (report) =>
        sink().result({
          stopReason: report.stopReason,
          ...(report.usage === undefined ? {} : { usage: report.usage }),
          answer: Promise.resolve(toAnswer(report.answer, this.#context.options.maxFinalTextBytes)),
        }),
      exit: (end) => sink().exit(end),
      fatal: (code, error) => sink().fatal(code as OutcomeErrorCode, error),
    };
  }

  /** A run without a process ends when its connection is gone. */
  #reportGone(): void {
    if (this.#goneReported || this.#config.ownsDaemon) return;
    this.#goneReported = true;
    this.#context.sink.gone();
  }

  /** Adds the envelope. mew has no sequence numbers: `seq` counts the run's events. */
  #stamp(draft: EventDraft): RunEvent {
    return { ...draft, v: 1, seq: ++this.#seq, run: this.#context.runId } as RunEvent;
  }

  #timer(fn: () => void, ms: number): MewTimer {
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

function toAnswer(answer: SessionAnswer | undefined, maxChars: number): Answer {
  if (answer === undefined) return { truncated: false };
  if (!answer.truncated) return { finalText: answer.text, truncated: false };
  return { finalText: answer.text, truncated: true, truncationNote: `the answer was longer than ${maxChars} characters (maxFinalTextBytes) and was cut` };
}
