// The one request desk of every driver: the peer's approvals and questions, keyed by request id, one caller callback at a time, exactly one response each (or none when withdrawn).

/** Who decided a response: the caller's callback, or one of the driver's safe defaults. */
export type DecidedBy =
  /** The callback's answer. */
  | 'callback'
  /** No callback was given: deny (approvals) or skip (questions). */
  | 'no-callback'
  /** The callback answered `true` for an unknown kind: denied (only 'approve-unknown-kind' approves one). */
  | 'unknown-kind'
  /** The callback threw, rejected, or returned something that is not an answer. */
  | 'callback-error'
  /** The line was unusable (no kind / no question): denied or skipped without asking. */
  | 'invalid-request'
  /** The run is being cancelled or ended: every waiting request is denied or skipped at once. */
  | 'shutdown';

/** What the callback's value means: an answer, or the safe default with why. */
export interface Accepted<Answer> {
  /** undefined: the safe default (deny, skip, cancel). */
  answer: Answer | undefined;
  /** Default `callback`. */
  decidedBy?: DecidedBy;
  /** Why the value was not an answer (reported, never thrown). */
  error?: unknown;
}

/** One request, as its protocol's adapter hands it to the desk. */
export interface DeskRequest<Answer> {
  /** The request's id as subvisor names it (a JSON-RPC id, mew's request_id quoted, a counter where the peer has none). */
  readonly key: string;
  /** Unreadable (no kind, no question): answered with the safe default without asking (`invalid-request`). */
  readonly invalid?: boolean;
  /**
   * Calls the caller's callback: its value, or a promise of it (a throw or a rejection is `callback-error`).
   * Absent: there is no callback (`no-callback`). `current()` turns false once the request is settled
   * otherwise (shut down, withdrawn): a callback asked several questions in turn stops asking.
   */
  readonly ask: ((current: () => boolean) => unknown) | undefined;
  /** The callback's value as an answer. */
  accept(value: unknown): Accepted<Answer>;
  /** Sends the request's one response (`answer` undefined: the safe default) and reports it. */
  respond(answer: Answer | undefined, decidedBy: DecidedBy, error?: unknown): void;
  /** The peer withdrew the request before it was answered: report it (no response is sent). */
  withdrawn?(): void;
}

/** What the desk tells its driver about requests it cannot answer (see {@link RequestDesk.block}). */
export interface DeskBlocking {
  /** The peer waits on a request subvisor has no answer for: the core bounds the wait (DriverSink.blocked). */
  blocked(key: string, what: string): void;
  unblocked(key: string): void;
}

interface Item<Answer> {
  request: DeskRequest<Answer>;
  settled: boolean;
}

/**
 * The caller's callbacks run one at a time, in arrival order (a peer without request ids, fuseraft, reads
 * its responses in order; a human answering on a terminal wants one question at a time). Every request
 * gets exactly one response whatever its callback does (throws, rejects, returns nonsense, never settles
 * before the run ends: then the safe default), unless the peer withdraws it first (mew's
 * `request_resolved`, a JSON-RPC cancel), when it gets none. A request whose key was seen before is the
 * same request sent again (a daemon's re-broadcast) and keeps its one answer. A callback that returns a
 * value is answered at once, before the next frame is read.
 */
export class RequestDesk<Answer> {
  readonly #blocking: DeskBlocking | undefined;
  readonly #queue: Array<Item<Answer>> = [];
  /** Every request not settled yet (queued or in flight), by key. */
  readonly #open = new Map<string, Item<Answer>>();
  readonly #seen = new Set<string>();
  readonly #blocked = new Set<string>();
  #inFlight: Item<Answer> | undefined;
  #shutDown = false;

  constructor(blocking?: DeskBlocking) {
    this.#blocking = blocking;
  }

  /** Requests received and not settled yet. */
  get waiting(): number {
    return this.#open.size;
  }

  /** Whether request `key` is open (received, not settled). */
  has(key: string): boolean {
    return this.#open.has(key);
  }

  /** Takes a request; false (and nothing happens) when its key was seen before. */
  add(request: DeskRequest<Answer>): boolean {
    if (this.#seen.has(request.key)) return false;
    this.#seen.add(request.key);
    const item = { request, settled: false };
    this.#open.set(request.key, item);
    this.#queue.push(item);
    this.#pump();
    return true;
  }

  /** The peer withdrew request `key`: settled without a response (a callback still running is ignored when it returns). False when it was not open. */
  withdraw(key: string): boolean {
    const item = this.#open.get(key);
    if (item === undefined) return false;
    this.#settle(item);
    const index = this.#queue.indexOf(item);
    if (index >= 0) this.#queue.splice(index, 1);
    item.request.withdrawn?.();
    if (this.#inFlight === item) {
      this.#inFlight = undefined;
      this.#pump();
    }
    return true;
  }

  /** The peer waits on request `key`, which subvisor cannot answer: reported blocked once. */
  block(key: string, what: string): void {
    if (this.#blocked.has(key)) return;
    this.#blocked.add(key);
    this.#blocking?.blocked(key, what);
  }

  /** Request `key` reported blocked was settled by someone else; false when it was not blocked. */
  unblock(key: string): boolean {
    if (!this.#blocked.delete(key)) return false;
    this.#blocking?.unblocked(key);
    return true;
  }

  /** The peer waits on none of the blocked requests any more (its turn ended). */
  unblockAll(): void {
    for (const key of [...this.#blocked]) this.unblock(key);
  }

  /** The run is ending: every open request gets its safe default now, as do later ones; late callback results are ignored. */
  shutDown(): void {
    this.#shutDown = true;
    const head = this.#inFlight;
    this.#inFlight = undefined;
    if (head !== undefined) this.#answer(head, { answer: undefined, decidedBy: 'shutdown' });
    this.#pump();
  }

  #pump(): void {
    while (this.#inFlight === undefined && this.#queue.length > 0) {
      const item = this.#queue.shift()!;
      if (this.#shutDown) this.#answer(item, { answer: undefined, decidedBy: 'shutdown' });
      else this.#ask(item);
    }
  }

  /** Calls the item's callback; answers at once when it returns a value, later when it returns a promise. */
  #ask(item: Item<Answer>): void {
    const { request } = item;
    if (request.invalid === true) return this.#answer(item, { answer: undefined, decidedBy: 'invalid-request' });
    if (request.ask === undefined) return this.#answer(item, { answer: undefined, decidedBy: 'no-callback' });
    let value: unknown;
    try {
      value = request.ask(() => !item.settled);
    } catch (error) {
      return this.#answer(item, { answer: undefined, decidedBy: 'callback-error', error });
    }
    if (!isThenable(value)) return this.#answer(item, this.#accept(item, value));
    this.#inFlight = item;
    // Promise.resolve adopts any thenable, and turns a throwing `then` into a rejection.
    Promise.resolve(value).then(
      (settled) => this.#late(item, () => this.#accept(item, settled)),
      (error: unknown) => this.#late(item, () => ({ answer: undefined, decidedBy: 'callback-error', error })),
    );
  }

  /** A callback's promise settled: answered unless the request was settled meanwhile (shut down, withdrawn). */
  #late(item: Item<Answer>, accepted: () => Accepted<Answer>): void {
    if (this.#inFlight !== item) return;
    this.#inFlight = undefined;
    this.#answer(item, accepted());
    this.#pump();
  }

  #accept(item: Item<Answer>, value: unknown): Accepted<Answer> {
    try {
      return item.request.accept(value);
    } catch (error) {
      return { answer: undefined, decidedBy: 'callback-error', error };
    }
  }

  #answer(item: Item<Answer>, accepted: Accepted<Answer>): void {
    if (item.settled) return;
    this.#settle(item);
    const decidedBy = accepted.decidedBy ?? (accepted.error === undefined ? 'callback' : 'callback-error');
    item.request.respond(accepted.answer, decidedBy, accepted.error);
  }

  #settle(item: Item<Answer>): void {
    item.settled = true;
    this.#open.delete(item.request.key);
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
