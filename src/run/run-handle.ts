// The handle surface every run shares: its events fanned out to iterators (events, batches, text, sized batches), and its one outcome.
import type { RunEvent } from '../protocol/index.js';
import { EventFanout } from './event-fanout.js';
import type { HighWater } from './event-fanout.js';
import type { SizedBatch } from './event-queue.js';
import { GuardedEmitter } from './guarded-emitter.js';
import type { Outcome } from '../protocol/outcome.js';
import type { RunEvents, StreamIterator } from './handle.js';
import { textOf } from './text-stream.js';

/** An iterator of sized batches (see {@link RunHandle.sizedBatches}). */
export interface SizedBatches {
  next(): Promise<IteratorResult<SizedBatch, undefined>>;
  return(): Promise<unknown>;
  /**
   * Whether the run reads facts ahead of the events it holds back (Fen), so a stage downstream may stop
   * pulling while nobody iterates it: the run still ends. A run that cannot (a pipe) would block its child.
   */
  readonly readsAhead: boolean;
}

/** How a handle's events are kept and bounded (the run's `retainEvents` and high-water marks). */
export interface HandleStreams {
  retain: boolean;
  highWater: HighWater;
  /** Every iterator is back under half the marks: the source may read again. */
  onDrained: () => void;
}

/**
 * What every run handle is, written once: the supervised run of the core, and the pool's handle that
 * relays the run it started into the same surface. It owns the events' fan-out (iterators, batches,
 * text, sized batches) and the outcome promise; a subclass publishes into it and settles it once.
 */
export abstract class RunHandle extends GuardedEmitter<RunEvents> {
  readonly outcome: Promise<Outcome>;
  readonly #fanout: EventFanout;
  #settle!: (outcome: Outcome) => void;

  constructor(streams: HandleStreams) {
    super();
    this.#fanout = new EventFanout(streams.retain, streams.highWater, streams.onDrained);
    this.outcome = new Promise((resolve) => (this.#settle = resolve));
  }

  [Symbol.asyncIterator](): AsyncIterator<RunEvent, undefined> {
    this.iterating();
    return this.#fanout.iterator();
  }

  text(): StreamIterator<string> {
    return textOf(this, this.outcome);
  }

  batches(): StreamIterator<RunEvent[]> {
    this.iterating();
    const queue = this.#fanout.iterator();
    return {
      next: () => queue.nextBatch(),
      return: async () => {
        await queue.return();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  /** @internal {@link batches} with what each event took on the wire: for a stage that re-publishes them under the same byte mark (the pool). */
  sizedBatches(): SizedBatches {
    this.iterating();
    const queue = this.#fanout.iterator();
    return { next: () => queue.nextSizedBatch(), return: () => queue.return(), readsAhead: this.readsAhead };
  }

  /** Whether the source reads facts ahead of the events held back (see {@link SizedBatches.readsAhead}). */
  protected get readsAhead(): boolean {
    return false;
  }

  /** An iterator is being created (the pool's handle starts relaying then). */
  protected iterating(): void {
    // Nothing by default: the events are already published into the fan-out.
  }

  /** Hands `event` to every iterator (and the backlog for the first); `bytes` counts against the byte mark. */
  protected toIterators(event: RunEvent, bytes = 0): void {
    this.#fanout.publish(event, bytes);
  }

  /** No more events: every iterator ends after what it holds. */
  protected endIterators(): void {
    this.#fanout.end();
  }

  /** Whether an iterator (or, with `countBacklog`, the backlog kept for the first) is over a high-water mark. */
  protected overHighWater(countBacklog = true): boolean {
    return this.#fanout.overHighWater(countBacklog);
  }

  /** The run's one outcome: emitted and resolved (call once). */
  protected settle(outcome: Outcome): void {
    this.emit('outcome', outcome);
    this.#settle(outcome);
  }
}

/** The sized batches of any run: a handle of this core knows its events' sizes; another run counts them as 0. */
export function sizedBatchesOf(run: { batches(): StreamIterator<RunEvent[]> }): SizedBatches {
  if (run instanceof RunHandle) return run.sizedBatches();
  const batches = run.batches();
  return {
    next: async () => {
      const step = await batches.next();
      return step.done === true ? step : { value: { events: step.value, bytes: step.value.map(() => 0) }, done: false };
    },
    return: () => batches.return?.() ?? Promise.resolve(),
    readsAhead: false,
  };
}
