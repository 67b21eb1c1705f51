// Hands run events to the iterators: the backlog for the first one, one queue each, and backpressure.
import { EventQueue } from './event-queue.js';
import type { RunEvent } from './types/index.js';

/**
 * Fans published events out to every attached iterator. Until the first iterator exists, events are
 * kept (when `retain`) so it sees the run from its first event. `overHighWater()` tells the reader to
 * pause while an iterator has more than `highWaterMark` events waiting; `onDrained` is called once
 * every queue is back at half of it, so reading can resume.
 */
export class EventFanout {
  readonly #queues = new Set<EventQueue>();
  #backlog: RunEvent[] | undefined;
  #ended = false;
  #overHighWater = false;
  readonly #highWaterMark: number;
  readonly #onDrained: () => void;

  constructor(retain: boolean, highWaterMark: number, onDrained: () => void) {
    this.#backlog = retain ? [] : undefined;
    this.#highWaterMark = highWaterMark;
    this.#onDrained = onDrained;
  }

  /** True once the final event was published. */
  get ended(): boolean {
    return this.#ended;
  }

  publish(event: RunEvent): void {
    this.#backlog?.push(event);
    for (const queue of this.#queues) queue.push(event);
  }

  /** No more events: every queue finishes after what it holds. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const queue of this.#queues) queue.end();
  }

  /** A new iterator: the first one takes the backlog, later ones start now. */
  iterator(): EventQueue {
    const initial = this.#backlog ?? [];
    this.#backlog = undefined;
    const queue = new EventQueue(
      initial,
      this.#ended,
      () => this.#checkDrained(),
      (closed) => {
        this.#queues.delete(closed);
        this.#checkDrained();
      },
    );
    if (queue.active) this.#queues.add(queue);
    return queue;
  }

  /** Whether some iterator holds more than the high-water mark (remembered until it drains). */
  overHighWater(): boolean {
    let over = false;
    for (const queue of this.#queues) {
      if (queue.size > this.#highWaterMark) {
        over = true;
        break;
      }
    }
    this.#overHighWater = over;
    return over;
  }

  #checkDrained(): void {
    if (!this.#overHighWater) return;
    const low = this.#highWaterMark / 2;
    for (const queue of this.#queues) if (queue.size > low) return;
    this.#overHighWater = false;
    this.#onDrained();
  }
}
