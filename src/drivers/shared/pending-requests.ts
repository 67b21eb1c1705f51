// The pending-request correlator of every driver: requests sent to the peer, settled once by id through callbacks (never promise continuations), failed on close or timeout.
/** A request id: JSON-RPC's number or string (`1` and `"1"` are different requests). */
export type RequestKey = string | number;

/** Why a pending request failed without its answer. */
export type PendingFailure =
  /** The channel closed (the peer exited, the run ended): nothing will answer it. */
  | { kind: 'closed'; reason: string }
  /** No answer within its bound. */
  | { kind: 'timeout'; ms: number; reason: string }
  /** The driver failed it (an answer that could not be read, a write that failed...). */
  | { kind: 'failed'; reason: string };

/** Where a pending request's end goes: exactly one of the two, exactly once. */
export interface PendingHandlers<Result> {
  settled(result: Result): void;
  failed(failure: PendingFailure): void;
}

/** What {@link PendingRequests.settle} did. */
export type SettleOutcome = { ok: true } | { ok: false; kind: 'unknown-id'; id: RequestKey; reason: string };

/** A timer the correlator can clear (injectable, so tests control time). */
export type SetTimer = (fn: () => void, ms: number) => { clear(): void };

/** Node's timers, unref'd: a pending request never keeps the process alive by itself. */
export const nodeTimer: SetTimer = (fn, ms) => {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return { clear: () => clearTimeout(timer) };
};

interface Entry<Result> {
  handlers: PendingHandlers<Result>;
  timer: { clear(): void } | undefined;
}

/**
 * The requests this side sent and awaits, by id. Every one ends exactly once: settled by its answer, or
 * failed (closed, timed out, failed by the driver); an answer for an id not pending (never sent, already
 * settled, timed out) is a typed `unknown-id`, for the driver to report. The handlers are called
 * synchronously, from the call that settles them, so a driver reports the fact an answer carries before it
 * publishes the event that carries it (a promise continuation would run after that event).
 */
export class PendingRequests<Result> {
  readonly #entries = new Map<string, Entry<Result>>();
  readonly #setTimer: SetTimer;
  #closed: string | undefined;

  constructor(setTimer: SetTimer = nodeTimer) {
    this.#setTimer = setTimer;
  }

  /** Requests still awaiting their answer. */
  get size(): number {
    return this.#entries.size;
  }

  /** Whether `id` awaits its answer. */
  has(id: RequestKey): boolean {
    return this.#entries.has(keyOf(id));
  }

  /**
   * Awaits the answer to `id`, failing it after `timeoutMs` when given. Once closed, it fails at once
   * (`closed`); an id already pending is a driver's bug: refused with a TypeError.
   */
  add(id: RequestKey, handlers: PendingHandlers<Result>, timeoutMs?: number): void {
    const key = keyOf(id);
    if (this.#entries.has(key)) throw new TypeError(`request ${JSON.stringify(id)} is already pending`);
    if (this.#closed !== undefined) {
      handlers.failed({ kind: 'closed', reason: this.#closed });
      return;
    }
    const entry: Entry<Result> = { handlers, timer: undefined };
    if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
      entry.timer = this.#setTimer(() => {
        entry.timer = undefined;
        this.#end(key)?.failed({ kind: 'timeout', ms: timeoutMs, reason: `no answer to request ${JSON.stringify(id)} within ${timeoutMs} ms` });
      }, timeoutMs);
    }
    this.#entries.set(key, entry);
  }

  /** The answer to `id` came: its handler is called now. */
  settle(id: RequestKey, result: Result): SettleOutcome {
    const handlers = this.#end(keyOf(id));
    if (handlers === undefined) return { ok: false, kind: 'unknown-id', id, reason: `an answer to request ${JSON.stringify(id)}, which is not pending` };
    handlers.settled(result);
    return { ok: true };
  }

  /** Fails `id` now (the driver's reason); false when it is not pending. */
  fail(id: RequestKey, reason: string): boolean {
    const handlers = this.#end(keyOf(id));
    handlers?.failed({ kind: 'failed', reason });
    return handlers !== undefined;
  }

  /** Forgets `id` without calling its handlers (a request that could not be sent after all). */
  forget(id: RequestKey): void {
    this.#end(keyOf(id));
  }

  /** The channel is closed: every pending request fails (`closed`, `reason`), in the order they were sent, as will any added later. */
  close(reason: string): void {
    if (this.#closed !== undefined) return;
    this.#closed = reason;
    for (const key of [...this.#entries.keys()]) this.#end(key)?.failed({ kind: 'closed', reason });
  }

  #end(key: string): PendingHandlers<Result> | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    entry.timer?.clear();
    return entry.handlers;
  }
}

/** The map key of an id: its kind and value, so `1` and `"1"` differ. */
function keyOf(id: RequestKey): string {
  return typeof id === 'number' ? `n${id}` : `s${id}`;
}
