// The supervisor's events() iterators: one queue of { run, event } each, their backpressure, and when they end.
import type { HighWater } from '../run/event-fanout.js';
import type { RunEvent, StreamIterator } from '../api/types.js';
import type { PoolEvent, PoolRun } from './types.js';

/** Past this many consumed entries the array is compacted, so a long session does not keep its history. */
const COMPACT_AFTER = 1024;

/** One events() iterator: a single-consumer FIFO of pool events. */
export class PoolEventQueue implements StreamIterator<PoolEvent> {
  #items: PoolEvent[] = [];
  /** Wire bytes of each waiting entry's event (same indexes as `#items`), and their sum. */
  #sizes: number[] = [];
  #bytes = 0;
  #head = 0;
  #ended = false;
  #closed = false;
  #waiter: ((item: PoolEvent | undefined) => void) | undefined;
  readonly untilIdle: boolean;
  readonly #isOver: (queue: PoolEventQueue) => boolean;
  readonly #onTaken: () => void;
  readonly #onClosed: (queue: PoolEventQueue) => void;

  constructor(
    untilIdle: boolean,
    isOver: (queue: PoolEventQueue) => boolean,
    onTaken: () => void,
    onClosed: (queue: PoolEventQueue) => void,
  ) {
    this.untilIdle = untilIdle;
    this.#isOver = isOver;
    this.#onTaken = onTaken;
    this.#onClosed = onClosed;
  }

  get size(): number {
    return this.#items.length - this.#head;
  }

  get bytes(): number {
    return this.#bytes;
  }

  push(item: PoolEvent, bytes = 0): void {
    if (this.#closed || this.#ended) return;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter(item);
      return;
    }
    this.#items.push(item);
    this.#sizes.push(bytes);
    this.#bytes += bytes;
  }

  /** No more entries: the consumer finishes after the queued ones. */
  end(): void {
    this.#ended = true;
    if (this.size === 0) this.#finish();
  }

  next(): Promise<IteratorResult<PoolEvent, undefined>> {
    if (this.size > 0) {
      const items = this.#items;
      const value = items[this.#head]!;
      (items as Array<PoolEvent | undefined>)[this.#head] = undefined;
      this.#bytes -= this.#sizes[this.#head]!;
      this.#head++;
      if (this.#head === items.length) {
        this.#items = [];
        this.#sizes = [];
        this.#bytes = 0;
        this.#head = 0;
      } else if (this.#head >= COMPACT_AFTER && this.#head * 2 >= items.length) {
        this.#items = items.slice(this.#head);
        this.#sizes = this.#sizes.slice(this.#head);
        this.#head = 0;
      }
      this.#onTaken();
      if (this.#ended && this.size === 0) this.#finish();
      return Promise.resolve({ value, done: false });
    }
    // Nothing waiting: an idle pool (closed, or this iterator ends on idle) has nothing more to give.
    if (this.#closed || this.#ended || this.#isOver(this)) {
      this.#finish();
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve) => {
      this.#waiter = (item) => resolve(item === undefined ? { value: undefined, done: true } : { value: item, done: false });
    });
  }

  return(): Promise<IteratorResult<PoolEvent, undefined>> {
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
    waiter?.(undefined);
    this.#onClosed(this);
  }
}

/**
 * Every open events() iterator. Runs publish into all of them; while one holds more than
 * `highWaterMark` entries, `overHighWater()` is true and the runs' pumps wait on `whenDrained()`,
 * which resolves once every queue is back at half of it (or was closed). The iterators end once the
 * pool is idle and every run's pump has delivered its last event.
 */
export class PoolEventTaps {
  readonly #queues = new Set<PoolEventQueue>();
  readonly #highWater: HighWater;
  readonly #poolState: () => { idle: boolean; closed: boolean };
  #activePumps = 0;
  /** Pumps waiting for an events() iterator to be opened (see {@link wakeOnOpen}). */
  readonly #openWaiters = new Set<() => void>();
  #drained: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(highWater: HighWater, poolState: () => { idle: boolean; closed: boolean }) {
    this.#highWater = highWater;
    this.#poolState = poolState;
  }

  /** True while some events() iterator is open: runs must pump their events to it. */
  get active(): boolean {
    return this.#queues.size > 0;
  }

  open(untilIdle: boolean): PoolEventQueue {
    const queue = new PoolEventQueue(
      untilIdle,
      (asking) => this.#over(asking),
      () => this.#checkDrained(),
      (closed) => {
        this.#queues.delete(closed);
        this.#checkDrained();
      },
    );
    this.#queues.add(queue);
    const waiters = [...this.#openWaiters];
    this.#openWaiters.clear();
    for (const wake of waiters) wake();
    return queue;
  }

  /** Calls `wake` once, when the next events() iterator is opened; the returned function cancels that. */
  wakeOnOpen(wake: () => void): () => void {
    this.#openWaiters.add(wake);
    return () => this.#openWaiters.delete(wake);
  }

  publish(run: PoolRun, event: RunEvent, bytes = 0): void {
    if (this.#queues.size === 0) return;
    const item: PoolEvent = { run, event };
    for (const queue of this.#queues) queue.push(item, bytes);
  }

  /** A run started relaying its events. */
  pumpStarted(): void {
    this.#activePumps++;
  }

  /** A run relayed its last event. */
  pumpEnded(): void {
    this.#activePumps--;
    this.idle();
  }

  overHighWater(): boolean {
    const { events, bytes } = this.#highWater;
    for (const queue of this.#queues) if (queue.size > events || queue.bytes > bytes) return true;
    return false;
  }

  /** Resolves once no queue holds more than half the high-water mark. */
  whenDrained(): Promise<void> {
    if (this.#drained === undefined) {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      this.#drained = { promise, resolve };
      this.#checkDrained();
    }
    return this.#drained?.promise ?? Promise.resolve();
  }

  /** The pool may have gone idle or closed: end the iterators that have nothing more coming. */
  idle(): void {
    for (const queue of [...this.#queues]) if (this.#over(queue)) queue.end();
  }

  /** Whether nothing more can come to `queue`: the pool is idle (and closed, unless it ends on idle) and every pump is done. */
  #over(queue: PoolEventQueue): boolean {
    if (this.#activePumps > 0) return false;
    const { idle, closed } = this.#poolState();
    return idle && (closed || queue.untilIdle);
  }

  #checkDrained(): void {
    const drained = this.#drained;
    if (drained === undefined) return;
    const { events, bytes } = this.#highWater;
    for (const queue of this.#queues) if (queue.size > events / 2 || queue.bytes > bytes / 2) return;
    this.#drained = undefined;
    drained.resolve();
  }
}
