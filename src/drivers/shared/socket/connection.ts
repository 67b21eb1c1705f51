// One connection to a daemon: a ws:// or wss:// WebSocket, or a Unix socket carrying JSON lines; bounds, liveness, exactly one end.
import { createRequire } from 'node:module';
import { connect as connectNet, isIP } from 'node:net';
import type { NetConnectOpts, Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { ConnectionOptions as TlsConnectOptions } from 'node:tls';
import type WebSocket from 'ws';
import type { JsonObject } from '../../../wire/index.js';
import { LineSplitter } from '../../../text/line-splitter.js';
import { decodeTypedFrame, overlongRejection } from '../json-line.js';
import type { FrameRejection, TypedFrame } from '../json-line.js';

/**
 * ws (CommonJS) is loaded by the first WebSocket, synchronously: a program that never connects to a daemon
 * over a WebSocket does not pay for it when it imports subvisor.
 */
const loadLazily = createRequire(import.meta.url);

/** Where the daemon listens: a WebSocket URL (`ws://`, `wss://`) or the path of a Unix socket. */
export type ConnectionTarget = { url: string; socketPath?: undefined } | { socketPath: string; url?: undefined };

/** How a connection ended (reported once through {@link ConnectionHandlers.end}). */
export type ConnectionEndCode =
  /** It never opened: nothing listens (ECONNREFUSED, ENOENT), or the daemon refused the WebSocket handshake (HTTP 401...). */
  | 'connection-refused'
  /** It was open and broke, or the daemon closed it, or the daemon sent a WebSocket message over the bound. */
  | 'connection-lost'
  /** No answer to a liveness probe within `pongTimeoutMs`: the connection was dropped. */
  | 'no-pong'
  /** This side closed it ({@link Connection.close}). */
  | 'closed';

export interface ConnectionEnd {
  code: ConnectionEndCode;
  /** Human-readable; never carries a header value (the token) nor the daemon's message text. */
  reason: string;
}

export interface ConnectionOptions {
  target: ConnectionTarget;
  /** Headers of the WebSocket handshake (the caller's, e.g. Authorization). Never echoed in a reason. No Origin is ever sent. */
  headers?: Readonly<Record<string, string>>;
  /** Largest message accepted, in bytes: a longer line is skipped (Unix socket); a longer WebSocket message ends the connection. */
  maxFrameBytes: number;
  /** A liveness probe every this many ms (0: none). */
  pingIntervalMs: number;
  /** No message nor pong this long after a probe: the connection ends `no-pong`. */
  pongTimeoutMs: number;
  /**
   * The protocol's own probe message (mew's `ping`), answered by any message. Without it a WebSocket
   * is probed with ping frames (answered by pong frames) and a Unix socket is not probed at all
   * (a local peer that dies closes its socket, which the kernel reports at once).
   */
  probe?: () => JsonObject;
}

/** What a connection reports. No call comes after `end`, nor any after {@link Connection.dispose}. */
export interface ConnectionHandlers {
  /** The connection is open (the WebSocket handshake succeeded). */
  open(): void;
  /** One decoded message. */
  frame(frame: TypedFrame): void;
  /** One message that is not a frame (it is skipped; the connection goes on unless it was a too-large WebSocket message). */
  rejected(rejection: FrameRejection): void;
  /** The connection is over, exactly once. */
  end(end: ConnectionEnd): void;
}

/** A live connection. Every method is safe to call at any time, also after the end. */
export interface Connection {
  /** Writes one message; false when the connection is not open (nothing is written). */
  send(message: JsonObject): boolean;
  /** Stops reading (backpressure); the kernel buffers, then the daemon waits. */
  pause(): void;
  resume(): void;
  /**
   * Closes gracefully: what was sent is flushed, then the connection is closed (destroyed after
   * `graceMs` at the latest); `end` follows with `closed`.
   */
  close(graceMs: number): void;
  /** Destroys the connection and every timer now, synchronously; no handler is called afterwards. Idempotent. */
  dispose(): void;
  /** Settles once the socket itself has closed (its handle released), however the connection ended. */
  readonly closed: Promise<void>;
}

/** The transport below a {@link Connection}: one of the two kinds of socket. */
interface Carrier {
  write(text: string): void;
  pause(): void;
  resume(): void;
  /** Graceful close. */
  close(): void;
  destroy(): void;
  /** WebSocket only: sends a ping frame. */
  ping?: () => void;
}

/** Opens a connection. Failures (refused, lost) arrive through `handlers.end`, never as a throw. */
export function openConnection(options: ConnectionOptions, handlers: ConnectionHandlers): Connection {
  return new DaemonConnection(options, handlers);
}

class DaemonConnection implements Connection {
  readonly #options: ConnectionOptions;
  readonly #handlers: ConnectionHandlers;
  readonly #carrier: Carrier;
  #open = false;
  #ended = false;
  #messages = 0;
  #pingTimer: NodeJS.Timeout | undefined;
  #pongTimer: NodeJS.Timeout | undefined;
  #closeTimer: NodeJS.Timeout | undefined;
  readonly closed: Promise<void>;
  #socketClosed!: () => void;

  constructor(options: ConnectionOptions, handlers: ConnectionHandlers) {
    this.#options = options;
    this.#handlers = handlers;
    this.closed = new Promise((resolve) => (this.#socketClosed = resolve));
    this.#carrier = options.target.url !== undefined ? this.#webSocket(options.target.url) : this.#unixSocket(options.target.socketPath!);
  }

  send(message: JsonObject): boolean {
    if (!this.#open || this.#ended) return false;
    this.#carrier.write(JSON.stringify(message));
    return true;
  }

  pause(): void {
    if (!this.#ended) this.#carrier.pause();
  }

  resume(): void {
    if (!this.#ended) this.#carrier.resume();
  }

  close(graceMs: number): void {
    if (this.#ended || this.#closeTimer !== undefined) return;
    this.#stopLiveness();
    this.#carrier.close();
    this.#closeTimer = setTimeout(() => this.#finish({ code: 'closed', reason: 'the connection was closed by subvisor' }), graceMs);
  }

  dispose(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#clearTimers();
    this.#carrier.destroy();
  }

  /* ---------------------------------------------------------------------------------------------- */

  #webSocket(url: string): Carrier {
    let socket: WebSocket;
    let tracked = false;
    try {
      const WebSocketClass = loadLazily('ws') as typeof WebSocket;
      socket = new WebSocketClass(url, {
        headers: { ...this.#options.headers },
        maxPayload: this.#options.maxFrameBytes,
        // A redirect would carry the Authorization header to another place: refused.
        followRedirects: false,
        // No compression: a small compressed message must not become a large buffer before the bound applies.
        perMessageDeflate: false,
        // ws's own connectors, kept so `closed` can wait for the TCP socket itself (ws reports a refused
        // connection before the socket's handle is released).
        createConnection: ((options: TlsConnectOptions) => {
          const raw = url.startsWith('wss:')
            ? connectTls({ ...options, path: undefined, servername: options.servername ?? (isIP(String(options.host)) === 0 ? String(options.host) : '') } as TlsConnectOptions)
            : connectNet({ ...(options as NetConnectOpts), path: undefined } as NetConnectOpts);
          raw.once('close', () => this.#socketClosed());
          tracked = true;
          return raw;
        }) as unknown as WebSocket.ClientOptions['createConnection'],
      });
    } catch (error) {
      // An invalid URL or header: the error names the problem, never a header's value.
      const reason = `could not connect to ${safeTarget(this.#options.target)} (${(error as NodeJS.ErrnoException).code ?? 'invalid request'})`;
      queueMicrotask(() => this.#finish({ code: 'connection-refused', reason }));
      this.#socketClosed();
      return { write: () => undefined, pause: () => undefined, resume: () => undefined, close: () => undefined, destroy: () => undefined };
    }
    let refusal: string | undefined;
    let tooLarge = false;
    socket.on('open', () => this.#onOpen());
    socket.on('unexpected-response', (_request, response) => {
      refusal = `the daemon refused the WebSocket handshake with HTTP ${response.statusCode ?? '?'}`;
      response.resume();
      socket.terminate();
    });
    socket.on('message', (data, isBinary) => {
      if (this.#ended) return;
      this.#heard();
      const number = ++this.#messages;
      if (isBinary) {
        this.#handlers.rejected({ code: 'malformed', reason: `message ${number} from the daemon is binary, not text` });
        return;
      }
      this.#take(rawText(data), number);
    });
    socket.on('pong', () => this.#heard());
    socket.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
        tooLarge = true;
        this.#handlers.rejected(overlongRejection('', `message ${this.#messages + 1} from the daemon`, this.#options.maxFrameBytes, false));
      } else if (!this.#open) {
        refusal ??= `could not connect to ${safeTarget(this.#options.target)} (${error.code ?? error.message})`;
      }
    });
    socket.on('close', (code) => {
      if (!tracked) this.#socketClosed();
      if (this.#closeTimer !== undefined) {
        this.#finish({ code: 'closed', reason: 'the connection was closed by subvisor' });
      } else if (!this.#open) {
        this.#finish({ code: 'connection-refused', reason: refusal ?? `could not connect to ${safeTarget(this.#options.target)}` });
      } else if (tooLarge) {
        this.#finish({ code: 'connection-lost', reason: `the daemon sent a message larger than ${this.#options.maxFrameBytes} bytes (maxFrameBytes); the WebSocket was closed` });
      } else {
        this.#finish({ code: 'connection-lost', reason: `the daemon closed the WebSocket (code ${code})` });
      }
    });
    return {
      write: (text) => socket.send(text),
      pause: () => socket.pause(),
      resume: () => socket.resume(),
      close: () => socket.close(1000),
      destroy: () => socket.terminate(),
      ping: () => socket.ping(),
    };
  }

  #unixSocket(path: string): Carrier {
    const socket: Socket = connectNet({ path });
    const lines = new LineSplitter(this.#options.maxFrameBytes);
    let failure: string | undefined;
    socket.on('connect', () => this.#onOpen());
    socket.on('data', (chunk: Buffer) => {
      if (this.#ended) return;
      this.#heard();
      for (const line of lines.push(chunk)) {
        if (this.#ended) return;
        this.#messages = line.lineNumber;
        if (line.kind === 'line') this.#take(line.text, line.lineNumber);
        else this.#handlers.rejected(overlongRejection('', `message ${line.lineNumber} from the daemon`, line.limit));
      }
    });
    socket.on('end', () => {
      for (const line of lines.end()) {
        if (this.#ended) return;
        if (line.kind === 'line') this.#take(line.text, line.lineNumber);
        else this.#handlers.rejected(overlongRejection('', `message ${line.lineNumber} from the daemon`, line.limit));
      }
      socket.end();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      failure = error.code ?? error.message;
    });
    socket.on('close', () => {
      this.#socketClosed();
      if (this.#closeTimer !== undefined) {
        this.#finish({ code: 'closed', reason: 'the connection was closed by subvisor' });
      } else if (!this.#open) {
        this.#finish({ code: 'connection-refused', reason: `could not connect to ${safeTarget(this.#options.target)} (${failure ?? 'closed'})` });
      } else {
        this.#finish({ code: 'connection-lost', reason: `the daemon closed the socket${failure === undefined ? '' : ` (${failure})`}` });
      }
    });
    return {
      write: (text) => void socket.write(`${text}\n`),
      pause: () => socket.pause(),
      resume: () => socket.resume(),
      close: () => socket.end(),
      destroy: () => socket.destroy(),
    };
  }

  #onOpen(): void {
    if (this.#ended) return;
    this.#open = true;
    this.#startLiveness();
    this.#handlers.open();
  }

  #take(text: string, number: number): void {
    const decoded = decodeTypedFrame(text, `message ${number} from the daemon`);
    if (decoded.value !== undefined) this.#handlers.frame(decoded.value);
    else this.#handlers.rejected(decoded.rejection);
  }

  /* Liveness ------------------------------------------------------------------------------------- */

  #startLiveness(): void {
    const { pingIntervalMs, probe } = this.#options;
    if (pingIntervalMs <= 0) return;
    if (probe === undefined && this.#carrier.ping === undefined) return;
    this.#pingTimer = setInterval(() => this.#probe(), pingIntervalMs);
  }

  #probe(): void {
    if (this.#ended || this.#pongTimer !== undefined) return;
    const { probe, pongTimeoutMs } = this.#options;
    this.#pongTimer = setTimeout(() => {
      this.#pongTimer = undefined;
      this.#carrier.destroy();
      this.#finish({ code: 'no-pong', reason: `the daemon did not answer a liveness probe within ${pongTimeoutMs} ms` });
    }, pongTimeoutMs);
    if (probe !== undefined) this.send(probe());
    else this.#carrier.ping?.();
  }

  /** Anything from the daemon shows it is alive. */
  #heard(): void {
    if (this.#pongTimer !== undefined) clearTimeout(this.#pongTimer);
    this.#pongTimer = undefined;
  }

  #stopLiveness(): void {
    if (this.#pingTimer !== undefined) clearInterval(this.#pingTimer);
    this.#heard();
    this.#pingTimer = undefined;
  }

  #clearTimers(): void {
    this.#stopLiveness();
    if (this.#closeTimer !== undefined) clearTimeout(this.#closeTimer);
    this.#closeTimer = undefined;
  }

  #finish(end: ConnectionEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#clearTimers();
    this.#carrier.destroy();
    this.#handlers.end(end);
  }
}

/** The text of a WebSocket message (ws hands a Buffer, or Buffer[] for fragments). Invalid UTF-8 was already refused by ws. */
function rawText(data: WebSocket.RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

/** The target as it may be shown: a URL without user info, query or fragment (they can carry secrets). */
export function safeTarget(target: ConnectionTarget): string {
  if (target.socketPath !== undefined) return `unix:${target.socketPath}`;
  try {
    const url = new URL(target.url);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return 'the daemon';
  }
}
