// What every daemon driver shares on top of one connection: the run's events and rejections, backpressure, re-attaching within a grace, and how the connection's end ends the run.
import type { DriverContext } from '../../../protocol/driver.js';
import type { RunEventDraft } from '../../../protocol/index.js';
import type { JsonObject } from '../../../wire/index.js';
import { EventStamper } from '../envelope.js';
import type { FrameRejection, TypedFrame } from '../json-line.js';
import { rejectedEvent } from '../rejected.js';
import { openConnection, safeTarget } from './connection.js';
import type { Connection, ConnectionEnd, ConnectionOptions } from './connection.js';

/** What the protocol's driver supplies. */
export interface DaemonProtocolHooks {
  /** Handshake headers (WebSocket only), e.g. Authorization. Never shown anywhere. */
  headers?: Readonly<Record<string, string>>;
  /** The protocol's own liveness message (see {@link ConnectionOptions.probe}). */
  probe?: () => JsonObject;
  /** A connection is open: send the greeting. `reattach` is true after a reconnect. */
  opened(reattach: boolean): void;
  /** One frame from the daemon. */
  frame(frame: TypedFrame): void;
  /**
   * The connection broke (`connection-lost` or `no-pong`) while the run was live: forget what was tied
   * to it (pending approvals: the daemon asks again) and say whether to re-attach (a client id that
   * the daemon keeps the work under; a session to attach to).
   */
  lost(end: ConnectionEnd): boolean;
}

/** A broken connection being repaired: the loss, when the grace ends, the attempts so far, the retry timer. */
interface Repair {
  end: ConnectionEnd;
  until: number;
  attempt: number;
  timer: NodeJS.Timeout | undefined;
}

/** Delay between re-attach attempts: doubling from the first, up to the last. */
const RETRY_DELAYS_MS = [100, 200, 400, 800, 1000] as const;

/**
 * One daemon run's connection, for its driver. It opens the connection from the run's options
 * (`url`/`socketPath`, `maxFrameBytes`, `pingIntervalMs`, `pongTimeoutMs`), stamps and publishes
 * events, turns rejected messages into `rejected` events, pauses reading under backpressure, and
 * decides how the connection's end ends the run:
 *
 * - refused before the first open: `fatal('connection-refused')`, then `gone()`;
 * - broken (`connection-lost`, `no-pong`) while the run is live: re-attach when the protocol says so
 *   (`hooks.lost`) and `reconnectGraceMs` allows, retrying until the grace is spent; otherwise, or when
 *   the grace runs out, `fatal(code)` then `gone()`;
 * - closed by {@link DaemonChannel.leave} (the run is over): `gone()`.
 */
export class DaemonChannel {
  readonly #context: DriverContext;
  readonly #hooks: DaemonProtocolHooks;
  #connection: Connection | undefined;
  #opened = false;
  #leaving = false;
  #disposed = false;
  readonly #stamper: EventStamper;
  /** Set from a loss until the protocol confirms it is re-attached ({@link DaemonChannel.attached}). */
  #repair: Repair | undefined;

  constructor(context: DriverContext, hooks: DaemonProtocolHooks) {
    this.#context = context;
    this.#hooks = hooks;
    this.#stamper = new EventStamper(context.runId);
  }

  /** The connection's target as it may be shown (no user info, query or token). */
  get where(): string {
    const connection = this.#context.options.connection!;
    return safeTarget(connection.url !== undefined ? { url: connection.url } : { socketPath: connection.socketPath! });
  }

  /** True between a loss and the protocol's {@link DaemonChannel.attached}. */
  get reattaching(): boolean {
    return this.#repair !== undefined;
  }

  /**
   * The protocol's greeting on a new connection went well (fuseraft serve's `hello`, mew's
   * `session_ready`): a repair is over. Until then a connection that ends again is one more failed
   * attempt within the same grace, so a daemon that accepts and drops at once cannot loop forever.
   */
  attached(): void {
    this.#stopRepair();
  }

  /** Opens the first connection (call from `Driver.launch`). */
  open(): void {
    this.#connect(false);
  }

  /** Writes one message; false when no connection is open (nothing is written). */
  send(message: JsonObject): boolean {
    if (this.#leaving || !this.#opened) return false;
    return this.#connection?.send(message) ?? false;
  }

  /** Publishes an event (the envelope is added: `seq` counts the run's events). */
  event(draft: RunEventDraft): void {
    this.#context.sink.event(this.#stamper.next(draft));
  }

  /** Publishes a rejected message; a `fatal` one also ends the run `failed` with `code` (default `protocol-error`). */
  rejected(rejection: FrameRejection, fatal = false, code: Parameters<DriverContext['sink']['fatal']>[0] = 'protocol-error'): void {
    if (fatal) this.#context.sink.fatal(code, rejection.reason);
    this.#context.sink.rejected(rejectedEvent(rejection, fatal));
  }

  /** The core eased backpressure (Driver.resume). */
  resume(): void {
    this.#connection?.resume();
  }

  /**
   * The run is over by the daemon's account (its result, a detach): close the connection gracefully
   * (what was sent is flushed) and report `gone()` once it is closed (after `graceMs` at the latest).
   */
  leave(graceMs: number): void {
    if (this.#leaving || this.#disposed) return;
    this.#leaving = true;
    this.#stopRepair();
    if (this.#connection === undefined) {
      queueMicrotask(() => this.#context.sink.gone());
      return;
    }
    this.#connection.close(graceMs);
  }

  /** Drops the connection now (Driver.disconnect: the core reports the end itself). */
  disconnect(): void {
    this.#leaving = true;
    this.dispose();
  }

  /**
   * Settles once the last connection's socket has closed (bounded by `boundMs`): call from
   * `Driver.finish`, so the run's outcome comes after its socket is released.
   */
  async closed(boundMs = 1000): Promise<void> {
    const connection = this.#connection;
    if (connection === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([connection.closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs)))]);
    clearTimeout(timer);
  }

  /** Releases the connection and every timer, synchronously; idempotent. */
  dispose(): void {
    this.#disposed = true;
    this.#stopRepair();
    this.#connection?.dispose();
  }

  /* ---------------------------------------------------------------------------------------------- */

  #connect(reattach: boolean): void {
    const connection = this.#context.options.connection!;
    const headers = handshakeHeaders(this.#context.options.traceHeaders, this.#hooks.headers);
    const options: ConnectionOptions = {
      target: connection.url !== undefined ? { url: connection.url } : { socketPath: connection.socketPath! },
      maxFrameBytes: this.#context.options.maxFrameBytes,
      pingIntervalMs: connection.pingIntervalMs,
      pongTimeoutMs: connection.pongTimeoutMs,
      ...(headers === undefined ? {} : { headers }),
      ...(this.#hooks.probe === undefined ? {} : { probe: this.#hooks.probe }),
    };
    let live: Connection | undefined;
    live = openConnection(options, {
      open: () => {
        if (this.#connection !== live) return;
        this.#opened = true;
        this.#hooks.opened(reattach);
      },
      frame: (frame) => {
        if (this.#connection !== live) return;
        this.#hooks.frame(frame);
        if (this.#context.shouldPause()) live?.pause();
      },
      rejected: (rejection) => {
        if (this.#connection === live) this.rejected(rejection);
      },
      end: (end) => {
        if (this.#connection === live) this.#onEnd(end);
      },
    });
    this.#connection = live;
  }

  #onEnd(end: ConnectionEnd): void {
    if (this.#disposed) return;
    const sink = this.#context.sink;
    if (this.#leaving) {
      sink.gone();
      return;
    }
    this.#opened = false;
    const repair = this.#repair;
    if (repair !== undefined) {
      // One attempt failed (refused, or dropped before the greeting): try again while the grace lasts.
      this.#retry(repair);
      return;
    }
    if (end.code === 'connection-refused' || end.code === 'closed') {
      sink.fatal(end.code === 'closed' ? 'connection-lost' : 'connection-refused', end.reason);
      sink.gone();
      return;
    }
    const graceMs = this.#context.options.connection!.reconnectGraceMs;
    if (graceMs > 0 && this.#hooks.lost(end)) {
      this.event({ type: 'info', nativeType: 'connection-lost', summary: `${end.reason}; re-attaching within ${graceMs} ms`, code: end.code });
      this.#repair = { end, until: Date.now() + graceMs, attempt: 0, timer: undefined };
      this.#retry(this.#repair);
      return;
    }
    sink.fatal(end.code === 'no-pong' ? 'no-pong' : 'connection-lost', end.reason);
    sink.gone();
  }

  #retry(repair: Repair): void {
    const delay = RETRY_DELAYS_MS[Math.min(repair.attempt, RETRY_DELAYS_MS.length - 1)]!;
    repair.attempt++;
    if (Date.now() + delay > repair.until) {
      this.#repair = undefined;
      const ms = this.#context.options.connection!.reconnectGraceMs;
      this.#context.sink.fatal(repair.end.code === 'no-pong' ? 'no-pong' : 'connection-lost', `${repair.end.reason}; could not re-attach within ${ms} ms`);
      this.#context.sink.gone();
      return;
    }
    repair.timer = setTimeout(() => {
      repair.timer = undefined;
      if (this.#disposed || this.#leaving) return;
      this.#connect(true);
    }, delay);
  }

  #stopRepair(): void {
    if (this.#repair?.timer !== undefined) clearTimeout(this.#repair.timer);
    this.#repair = undefined;
  }
}

/**
 * The WebSocket handshake's headers: the run's trace context (`traceparent`, `tracestate`: the W3C place
 * for it in an HTTP request) under the protocol's own, which win (its Authorization above all).
 */
function handshakeHeaders(
  trace: Readonly<Record<string, string>> | undefined,
  own: Readonly<Record<string, string>> | undefined,
): Readonly<Record<string, string>> | undefined {
  if (trace === undefined) return own;
  return { ...trace, ...own };
}
