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
 * facts and publishes it, and pauses while the consumers are over their high-water mark. A consumer that
 * keeps pulling takes the events it was handed within the same turn of the event loop (a `for await`
 * loop runs on microtasks), and its pull resumes the events pass: that alone keeps the facts coming. Only
 * when the events pass is still held back once the event loop turns (the consumer stopped pulling: it
 * awaits a timer, I/O, or an ack it can only learn from the file) does a second reader (the facts pass)
 * start at its place and read on as the child writes, reporting facts and materialising no event: it
 * holds one read buffer, whatever the file holds. So the run never waits for a consumer to learn what
 * the child said: an ack awaited inside the consumer's own `for await` loop (`await run.steer()`), the
 * idle state that triggers the automatic close, the `result` and `exit` the outcome needs. The facts
 * pass reads only while the events pass stays held back; the events pass later publishes the lines it
 * already covered without reporting their facts again (both count lines from the same place), and takes
 * the facts back once it passes it. Lines the facts pass covers are decoded twice; nothing else is. A
 * fast writer's flood read by a consumer that keeps pulling is decoded once: forking the facts pass at
 * the first pause (as it did until issue 36) decoded every line of it twice, 1.97 `JSON.parse` calls per
 * event for 50 000 events written in 1 MB batches.
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
  /** A check that the events pass is still held back is due once the event loop turns. */
  #holdCheckScheduled = false;
  /**
   * The events pass was paused when the event loop turned, and has not read since: its consumers stopped
   * pulling. Kept apart from the consumers' mark, which moves with every event they take.
   */
  #heldBack = false;
  #ending = false;
  /** After `end()` until every fact of the file is reported: settles the promise `end()` returned. */
  #factsIn: (() => void) | undefined;
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

  /** Backpressure eased, or facts are needed now: read what is waiting (the facts pass, if still held back, once the loop turns). */
  drain(): void {
    this.#events.drain();
  }

  /**
   * The child is gone. The events pass reads the rest only as the consumers take it; the facts of
   * everything left are read once the event loop turns (the facts pass to the end of the file) unless
   * the events pass got there first, so the run can end. Returns undefined when every fact is in now,
   * else a promise that settles when it is.
   */
  end(): Promise<void> | undefined {
    if (this.#ending) return undefined;
    this.#ending = true;
    this.#events.end();
    if (this.#done) return undefined;
    const factsIn = new Promise<void>((resolve) => (this.#factsIn = resolve));
    this.#scheduleHoldCheck();
    return factsIn;
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
    if (paused) this.#scheduleHoldCheck();
    else this.#heldBack = false;
    return paused;
  }

  #scheduleHoldCheck(): void {
    if (this.#holdCheckScheduled) return;
    this.#holdCheckScheduled = true;
    setImmediate(() => {
      this.#holdCheckScheduled = false;
      this.#checkHeld();
    });
  }

  /**
   * The event loop turned since the events pass paused (or since `end()`). Consumers back under their
   * mark: the events pass reads on. Still over it: they stopped pulling, and the facts pass reads ahead.
   * After `end()` the facts pass reads to the end of the file in any case, so the run ends one turn of
   * the loop after its child however slowly the events are taken.
   */
  #checkHeld(): void {
    if (this.#done || this.#events.stopped) return;
    this.#heldBack = this.#control.backpressure();
    if (!this.#heldBack) this.#events.drain();
    if (this.#ending) {
      if (!this.#done) (this.#facts ?? this.#fork()).finish();
      this.#settleFactsIn();
    } else if (this.#heldBack) {
      (this.#facts ?? this.#fork()).drain();
    }
  }

  #fork(): EventReader {
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
        // Only while the events pass is held back: once the consumers pull again it catches up and takes over.
        shouldPause: () => !this.#heldBack,
        ...(identity === undefined ? {} : { identity }),
      },
    );
    this.#facts = facts;
    facts.start();
    return facts;
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
    this.#settleFactsIn();
    this.#handlers.eventsDone();
  }

  #settleFactsIn(): void {
    const factsIn = this.#factsIn;
    this.#factsIn = undefined;
    factsIn?.();
  }
}
