// Fen's event file read in one pass, or in two while backpressure holds events back: facts ahead, events behind.
import { EventReader } from '../../channel/index.js';
import type { ReaderRejection } from '../../channel/index.js';
import type { WireEvent } from '../../wire/index.js';

/** Rejections of the whole file rather than of one line. */
export const FILE_FAILURES: ReadonlySet<string> = new Set(['event-file-truncated', 'event-file-replaced', 'read-error']);

/** What the reader hands on: the facts of each line once, and each line as an event once, in file order. */
export interface TwoPassHandlers {
  /** The facts a valid event carries (ready, acks, turns, result, exit). Called before or with its `publish`. */
  facts(event: WireEvent, ahead: boolean): void;
  /** Publishes a valid event (after its facts). */
  publish(event: WireEvent, bytes: number): void;
  /**
   * The facts of a rejection: a fatal one ends the run. `ahead`: found by the facts pass, so its event is
   * published later (a rejected line counts now) or never (a failure of the whole file, which the events
   * pass finds and publishes on its own when it gets there).
   */
  rejectedFacts(rejection: ReaderRejection, ahead: boolean): void;
  /** Publishes a rejected line; `factsAhead`: its facts were reported earlier by `rejectedFacts`, not now. */
  publishRejected(rejection: ReaderRejection, bytes: number, factsAhead: boolean): void;
  /** Nothing more will be published: the events pass reached the end of the file after `end()`, an `exit`, a fatal line, or was closed. */
  eventsDone(): void;
}

export interface TwoPassControl {
  /** The consumers are over their high-water mark: events wait (in the file). */
  backpressure(): boolean;
  /** Both passes coalesce reads of a busy file within this many ms (0: read on every notification; `'auto'`: see RunOptions). */
  latencyBudgetMs?: number | 'auto';
}

/**
 * The event file is the buffer. Normally one reader (the events pass) decodes each line once, reports its
 * facts and publishes it, and pauses while the consumers are over their high-water mark. While it is
 * paused, a second reader (the facts pass) starts at its place and reads on as the child writes,
 * reporting facts and materialising no event: it holds one read buffer, whatever the file holds. So the
 * run never waits for a consumer to learn what the child said: an ack awaited inside the consumer's own
 * `for await` loop (`await run.steer()`), the idle state that triggers the automatic close, the
 * `result` and `exit` the outcome needs. The events pass later
 * publishes the lines the facts pass already covered without reporting their facts again (both count
 * lines from the same place), and takes the facts back once it passes it. Lines the facts pass covers
 * are decoded twice; nothing else is.
 */
export class TwoPassReader {
  readonly #path: string;
  readonly #runId: string;
  readonly #handlers: TwoPassHandlers;
  readonly #control: TwoPassControl;
  readonly #events: EventReader;
  /** The facts pass, while it is ahead of the events pass (kept after it stopped, for its line count). */
  #facts: EventReader | undefined;
  /** The events pass's line count when the facts pass started at its place. */
  #forkedAt = 0;
  #forkScheduled = false;
  #ending = false;
  #done = false;

  constructor(path: string, runId: string, handlers: TwoPassHandlers, control: TwoPassControl) {
    this.#path = path;
    this.#runId = runId;
    this.#handlers = handlers;
    this.#control = control;
    this.#events = new EventReader(
      path,
      runId,
      {
        event: (event, bytes) => this.#onEvent(event, bytes),
        rejected: (rejection, bytes) => this.#onRejected(rejection, bytes),
        ended: () => this.#finishEvents(),
      },
      { shouldPause: () => this.#eventsShouldPause(), latencyBudgetMs: control.latencyBudgetMs ?? 0 },
    );
  }

  /** True while events are still to be published (the events pass has not stopped). */
  get eventsPending(): boolean {
    return !this.#done;
  }

  /** Opens the file and starts reading. Throws when it cannot be opened. */
  start(): void {
    this.#events.start();
  }

  /** Backpressure eased, or facts are needed now: read what is waiting. */
  drain(): void {
    this.#events.drain();
    this.#advanceFacts();
  }

  /**
   * The child is gone. The events pass reads the rest only as the consumers take it; the facts of
   * everything left are read now (the facts pass to the end of the file) so the run can end.
   */
  end(): void {
    if (this.#ending) return;
    this.#ending = true;
    this.#events.end();
    if (this.#events.stopped) return;
    if (this.#facts === undefined) this.#fork();
    this.#facts?.finish();
  }

  /** Stops both passes; what was not published is dropped. Idempotent. */
  close(): void {
    this.#facts?.close();
    this.#events.close();
    this.#finishEvents();
  }

  /** Closes the events pass's descriptor without a reference to this reader (for a finalizer). */
  eventsCloser(): () => void {
    return this.#events.descriptorCloser();
  }

  /** Stops the facts pass only (the run ended: no fact matters any more); the events pass goes on. */
  closeFacts(): void {
    this.#facts?.close();
  }

  #eventsShouldPause(): boolean {
    const paused = this.#control.backpressure();
    if (paused && this.#facts === undefined && !this.#forkScheduled) {
      // Not from inside the events pass's own read: start the facts pass once it returned.
      this.#forkScheduled = true;
      queueMicrotask(() => {
        this.#forkScheduled = false;
        this.#advanceFacts();
      });
    }
    return paused;
  }

  /** Starts (or wakes) the facts pass when the events pass is held back. */
  #advanceFacts(): void {
    if (this.#done || this.#events.stopped) return;
    if (this.#facts === undefined) {
      if (!this.#control.backpressure()) return;
      this.#fork();
    }
    this.#facts?.drain();
  }

  #fork(): void {
    const identity = this.#events.identity;
    this.#forkedAt = this.#events.lines;
    const facts = new EventReader(
      this.#path,
      this.#runId,
      {
        event: (event) => {
          this.#handlers.facts(event, true);
          // Nothing may follow `exit`.
          if (event.type === 'exit') facts.close();
        },
        rejected: (rejection) => this.#handlers.rejectedFacts(rejection, true),
      },
      {
        from: this.#events.position,
        latencyBudgetMs: this.#control.latencyBudgetMs ?? 0,
        ...(identity === undefined ? {} : { identity }),
      },
    );
    this.#facts = facts;
    facts.start();
  }

  /**
   * Whether the events pass's current line was already covered by the facts pass. Once it is past the
   * facts pass, that pass is closed and the events pass reports facts again.
   */
  #behind(): boolean {
    const facts = this.#facts;
    if (facts === undefined) return false;
    if (this.#events.lines - this.#forkedAt <= facts.lines) return true;
    facts.close();
    this.#facts = undefined;
    return false;
  }

  #onEvent(event: WireEvent, bytes: number): void {
    if (!this.#behind()) this.#handlers.facts(event, false);
    this.#handlers.publish(event, bytes);
    if (event.type === 'exit') {
      // Nothing may follow `exit`.
      this.#events.close();
      this.#finishEvents();
    }
  }

  #onRejected(rejection: ReaderRejection, bytes: number): void {
    // A failure of the whole file is no line of the facts pass's count: its facts are reported now.
    const behind = !FILE_FAILURES.has(rejection.code) && this.#behind();
    if (!behind) this.#handlers.rejectedFacts(rejection, false);
    this.#handlers.publishRejected(rejection, bytes, behind);
    if (this.#events.stopped) this.#finishEvents();
  }

  #finishEvents(): void {
    if (this.#done) return;
    this.#done = true;
    this.#facts?.close();
    this.#handlers.eventsDone();
  }
}
