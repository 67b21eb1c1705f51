// Hands run events to the iterators: the backlog for the first one, one queue each, and backpressure.
import { EventQueue } from './event-queue.js';
import type { RunEvent } from '../protocol/index.js';

/** The two high-water marks: events waiting, and the bytes they took on the wire. */
export interface HighWater {
  events: number;
  bytes: number;
}

/**
 * Fans published events out to every attached iterator. Until the first iterator exists, events are
 * kept (when `retain`) so it sees the run from its first event. `overHighWater()` tells the reader to
 * pause while an iterator (or that kept backlog) holds more than `highWater.events` events or
 * `highWater.bytes` bytes; `onDrained` is called once every queue is back at half of both, so reading
 * can resume.
 */
export class EventFanout {
  readonly #queues = new Set<EventQueue>();
  #backlog: RunEvent[] | undefined;
  #backlogBytes: number[] | undefined;
  #backlogTotalBytes = 0;
  #ended = false;
  #overHighWater = false;
  readonly #highWater: HighWater;
  readonly #onDrained: () => void;

  constructor(retain: boolean, highWater: HighWater, onDrained: () => void) {
    this.#backlog = retain ? [] : undefined;
    this.#backlogBytes = retain ? [] : undefined;
    this.#highWater = highWater;
    this.#onDrained = onDrained;
  }

  /** True once the final event was published. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Publishes `event`, which took `bytes` on the wire (counted against the byte high-water mark). */
  publish(event: RunEvent, bytes = 0): void {
    this.#backlog?.push(event);
    if (this.#backlogBytes !== undefined) {
      this.#backlogBytes.push(bytes);
      this.#backlogTotalBytes += bytes;
    }
    for (const queue of this.#queues) queue.push(event, bytes);
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
    const initialBytes = this.#backlogBytes ?? [];
    this.#backlog = undefined;
    this.#backlogBytes = undefined;
    this.#backlogTotalBytes = 0;
    const queue = new EventQueue(
      initial,
      initialBytes,
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

  /**
   * Whether some iterator holds more than a high-water mark (remembered until it drains). The backlog
   * kept for the first iterator counts too unless `countBacklog` is false: a reader that can read facts
   * ahead leaves the rest in the file, but one that cannot (a pipe) would block the child until an
   * iterator that may never come.
   */
  overHighWater(countBacklog = true): boolean {
    const { events, bytes } = this.#highWater;
    const backlog = countBacklog ? this.#backlog : undefined;
    let over = backlog !== undefined && (backlog.length > events || this.#backlogTotalBytes > bytes);
    if (!over) for (const queue of this.#queues) {
      if (queue.size > events || queue.bytes > bytes) {
        over = true;
        break;
      }
    }
    this.#overHighWater = over;
    return over;
  }

  #checkDrained(): void {
    if (!this.#overHighWater) return;
    const { events, bytes } = this.#highWater;
    for (const queue of this.#queues) if (queue.size > events / 2 || queue.bytes > bytes / 2) return;
    this.#overHighWater = false;
    this.#onDrained();
  }
}
