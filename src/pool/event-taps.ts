// The supervisor's events() iterators: one queue of { run, event } each, their backpressure, and when they end.
import type { HighWater } from '../run/event-fanout.js';
import { EventQueue } from '../run/event-queue.js';
import type { RunEvent } from '../api/types.js';
import type { PoolEvent, PoolRun } from './types.js';

/**
 * Every open events() iterator. Runs publish into all of them; while one holds more than
 * `highWaterMark` entries, `overHighWater()` is true and the runs' pumps wait on `whenDrained()`,
 * which resolves once every queue is back at half of it (or was closed). The iterators end once the
 * pool is idle and every run's pump has delivered its last event.
 */
export class PoolEventTaps {
  /** Each open iterator, and whether it ends once the pool is idle (else only once it is closed too). */
  readonly #queues = new Map<EventQueue<PoolEvent>, boolean>();
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

  open(untilIdle: boolean): EventQueue<PoolEvent> {
    const queue: EventQueue<PoolEvent> = new EventQueue<PoolEvent>(
      [],
      [],
      false,
      () => this.#checkDrained(),
      (closed) => {
        this.#queues.delete(closed);
        this.#checkDrained();
      },
      // Nothing waiting: an idle pool (closed, or this iterator ends on idle) has nothing more to give.
      () => this.#over(untilIdle),
    );
    this.#queues.set(queue, untilIdle);
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
    for (const queue of this.#queues.keys()) queue.push(item, bytes);
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
    for (const queue of this.#queues.keys()) if (queue.size > events || queue.bytes > bytes) return true;
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
    for (const [queue, untilIdle] of [...this.#queues]) if (this.#over(untilIdle)) queue.end();
  }

  /** Whether nothing more can come to an iterator: the pool is idle (and closed, unless it ends on idle) and every pump is done. */
  #over(untilIdle: boolean): boolean {
    if (this.#activePumps > 0) return false;
    const { idle, closed } = this.#poolState();
    return idle && (closed || untilIdle);
  }

  #checkDrained(): void {
    const drained = this.#drained;
    if (drained === undefined) return;
    const { events, bytes } = this.#highWater;
    for (const queue of this.#queues.keys()) if (queue.size > events / 2 || queue.bytes > bytes / 2) return;
    this.#drained = undefined;
    drained.resolve();
  }
}
