// One iterator's queue: a single-consumer FIFO of events (a run's, or a pool's tagged ones) that ends after the last.
import type { RunEvent } from '../protocol/index.js';

/** Events taken at once, and what each took on the wire (same indexes). */
export interface SizedBatch<T = RunEvent> {
  events: T[];
  bytes: number[];
}

/** Past this many consumed entries the array is compacted, so a long run does not keep its history. */
const COMPACT_AFTER = 1024;

/**
 * The async iterator behind `for await (const event of run)` (and of a pool's `events()`). Pushed
 * events wait here until the consumer takes them; `end()` marks the last one. `return()` (a `break` out
 * of the loop) detaches the queue from its source, which goes on.
 */
export class EventQueue<T = RunEvent> implements AsyncIterator<T, undefined>, AsyncIterable<T> {
  #items: T[];
  /** What each waiting item took on the wire (same indexes as `#items`), and their sum. */
  #sizes: number[];
  #bytes = 0;
  #head = 0;
  #ended = false;
  #closed = false;
  /** A consumer waiting in `next()`: its promise's resolve (the common case: no closure per event). */
  #resolveNext: ((result: IteratorResult<T, undefined>) => void) | undefined;
  /** A consumer waiting in `nextSizedBatch()` (everything available). */
  #waiter: ((event: T | undefined, bytes: number) => void) | undefined;
  readonly #onTaken: (queue: EventQueue<T>) => void;
  readonly #onClosed: (queue: EventQueue<T>) => void;
  readonly #nothingMore: (() => boolean) | undefined;

  /**
   * `nothingMore`: asked when the consumer finds the queue empty; true ends it there although `end()`
   * never came (a pool's `events()` that ends once the pool is idle).
   */
  constructor(
    initial: T[],
    initialBytes: number[],
    ended: boolean,
    onTaken: (queue: EventQueue<T>) => void,
    onClosed: (queue: EventQueue<T>) => void,
    nothingMore?: () => boolean,
  ) {
    this.#items = initial;
    this.#sizes = initialBytes;
    for (const bytes of initialBytes) this.#bytes += bytes;
    this.#ended = ended;
    this.#onTaken = onTaken;
    this.#onClosed = onClosed;
    this.#nothingMore = nothingMore;
  }

  /** Events waiting for the consumer. */
  get size(): number {
    return this.#items.length - this.#head;
  }

  /** Bytes (on the wire) of the events waiting. */
  get bytes(): number {
    return this.#bytes;
  }

  /** True while the consumer is still attached (not broken out, not past the end). */
  get active(): boolean {
    return !this.#closed;
  }

  push(event: T, bytes = 0): void {
    if (this.#closed || this.#ended) return;
    const resolveNext = this.#resolveNext;
    if (resolveNext !== undefined) {
      this.#resolveNext = undefined;
      resolveNext({ value: event, done: false });
      return;
    }
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter(event, bytes);
      return;
    }
    this.#items.push(event);
    this.#sizes.push(bytes);
    this.#bytes += bytes;
  }

  /** No more events will come: the consumer finishes after the queued ones. */
  end(): void {
    this.#ended = true;
    if (this.size === 0) this.#finish();
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.size > 0) {
      const items = this.#items;
      const value = items[this.#head]!;
      // Drop the reference at once: a consumed event must not stay alive in the queue.
      (items as Array<T | undefined>)[this.#head] = undefined;
      this.#bytes -= this.#sizes[this.#head]!;
      this.#head++;
      if (this.#head === items.length) {
        // Empty again (the common case for a consumer that keeps up): start over.
        this.#items = [];
        this.#sizes = [];
        this.#bytes = 0;
        this.#head = 0;
      } else if (this.#head >= COMPACT_AFTER && this.#head * 2 >= items.length) {
        this.#items = items.slice(this.#head);
        this.#sizes = this.#sizes.slice(this.#head);
        this.#head = 0;
      }
      this.#onTaken(this);
      if (this.#ended && this.size === 0) this.#finish();
      return Promise.resolve({ value, done: false });
    }
    if (this.#closed || this.#ended || this.#nothingMore?.() === true) {
      this.#finish();
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve) => {
      this.#resolveNext = resolve;
    });
  }

  /** Everything waiting now as one array (at least one event), or done. One promise per batch, not per event. */
  async nextBatch(): Promise<IteratorResult<T[], undefined>> {
    const step = await this.nextSizedBatch();
    return step.done === true ? step : { value: step.value.events, done: false };
  }

  /** {@link nextBatch} with what each event took on the wire (for a stage that re-publishes them: the pool). */
  nextSizedBatch(): Promise<IteratorResult<SizedBatch<T>, undefined>> {
    if (this.size > 0) {
      const events = this.#head === 0 ? this.#items : this.#items.slice(this.#head);
      const bytes = this.#head === 0 ? this.#sizes : this.#sizes.slice(this.#head);
      this.#items = [];
      this.#sizes = [];
      this.#bytes = 0;
      this.#head = 0;
      this.#onTaken(this);
      if (this.#ended) this.#finish();
      return Promise.resolve({ value: { events, bytes }, done: false });
    }
    if (this.#closed || this.#ended || this.#nothingMore?.() === true) {
      this.#finish();
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve) => {
      this.#waiter = (event, bytes) =>
        resolve(event === undefined ? { value: undefined, done: true } : { value: { events: [event], bytes: [bytes] }, done: false });
    });
  }

  return(): Promise<IteratorResult<T, undefined>> {
    this.#finish();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#items = [];
    this.#sizes = [];
    this.#bytes = 0;
    this.#head = 0;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.(undefined, 0);
    const resolveNext = this.#resolveNext;
    this.#resolveNext = undefined;
    resolveNext?.({ value: undefined, done: true });
    this.#onClosed(this);
  }
}
