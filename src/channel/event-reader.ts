// Reads the event file: whole lines from the tail, decoded and seq-checked by the wire receiver, run id checked.
import { createReceiver, MAX_LINE_BYTES } from '../wire/index.js';
import type { Rejection, RejectionCode, WireEvent } from '../wire/index.js';
import { LineTail } from './line-tail.js';
import type { TailPosition } from './line-tail.js';

/** Codes of a rejected event line: the codec's, plus the channel's own failures. */
export type ReaderRejectionCode = RejectionCode | 'foreign-run' | 'event-file-truncated' | 'event-file-replaced' | 'read-error';

/** A line (or the file) that did not yield an event: a wire rejection or one of the channel's own. Fatal ones stop the reader. */
export type ReaderRejection = Omit<Rejection, 'code'> & { code: ReaderRejectionCode };

export interface EventReaderHandlers {
  /** A valid event of this run, in order; `bytes` is about the size of its line (UTF-16 units). */
  event(event: WireEvent, bytes: number): void;
  /** A rejected line (`bytes`: about its size, 0 for a failure of the whole file); after a fatal one nothing more is read. */
  rejected(rejection: ReaderRejection, bytes: number): void;
  /** After {@link EventReader.end}: the last line was handed on and the reader closed. */
  ended?(): void;
}

/** Where a reader stands: its tail's place and the last seq it consumed (what a second reader needs to take over). */
export interface ReaderPosition extends TailPosition {
  lastSeq: number;
}

export interface EventReaderOptions {
  /** Safety poll period of the tail. Default 500 ms. */
  pollMs?: number;
  /** Coalesce reads of a busy file within this many ms, or `'auto'` (see LineTailOptions.latencyBudgetMs). Default 0. */
  latencyBudgetMs?: number | 'auto';
  /** While it returns true, reading pauses (backpressure). */
  shouldPause?: () => boolean;
  /** Start at another reader's place (see {@link EventReader.position}) on the same file (`identity`). */
  from?: ReaderPosition;
  identity?: { dev: number; ino: number };
}

/**
 * Decodes the child's event file for run `runId`. Every line ends up as exactly one `event` or one
 * `rejected` call; a version mismatch, an event for another run, a truncated or replaced file or a read
 * error is fatal and stops the reader (the protocol has no way to resynchronize).
 */
export class EventReader {
  readonly #tail: LineTail;
  readonly #receiver;
  /** Lines handed on so far (each one `event` or `rejected` call). */
  #lines = 0;
  readonly #handlers: EventReaderHandlers;
  readonly #runId: string;

  constructor(path: string, runId: string, handlers: EventReaderHandlers, options: EventReaderOptions = {}) {
    this.#runId = runId;
    this.#handlers = handlers;
    this.#receiver = createReceiver('event', options.from?.lastSeq ?? 0);
    this.#tail = new LineTail(
      path,
      {
        line: (text) => this.#line(text),
        oversize: () =>
          this.#rejectLine(
            {
              code: 'too-large',
              reason: `an event line reached ${MAX_LINE_BYTES} bytes before its newline; skipped`,
              fatal: false,
            },
            MAX_LINE_BYTES,
          ),
        incomplete: (bytes) =>
          this.#rejectLine(
            {
              code: 'malformed',
              reason: `the event file ends with an incomplete line (${bytes} bytes without a newline)`,
              fatal: false,
            },
            bytes,
          ),
        truncated: (size, offset) =>
          this.#reject({
            code: 'event-file-truncated',
            reason: `event file truncated: its size ${size} is below the read offset ${offset}`,
            fatal: true,
          }),
        replaced: (reason) => this.#reject({ code: 'event-file-replaced', reason, fatal: true }),
        failed: (error) =>
          this.#reject({ code: 'read-error', reason: `reading the event file failed: ${error.message}`, fatal: true }),
        ended: () => handlers.ended?.(),
      },
      {
        ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
        ...(options.latencyBudgetMs === undefined ? {} : { latencyBudgetMs: options.latencyBudgetMs }),
        ...(options.shouldPause === undefined ? {} : { shouldPause: options.shouldPause }),
        ...(options.from === undefined ? {} : { from: { offset: options.from.offset, skipping: options.from.skipping } }),
        ...(options.identity === undefined ? {} : { identity: options.identity }),
      },
    );
  }

  /** Lines handed on so far. */
  get lines(): number {
    return this.#lines;
  }

  /** Where the next line starts, and the last seq consumed. */
  get position(): ReaderPosition {
    return { ...this.#tail.position, lastSeq: this.#receiver.lastSeq };
  }

  /** The open file's device and inode. */
  get identity(): { dev: number; ino: number } | undefined {
    return this.#tail.identity;
  }

  /** The writer is gone: the rest is read as the pause allows, then `ended` (see LineTail.end). */
  end(): void {
    this.#tail.end();
  }

  /** True once the reader stopped (finished, closed, or after a fatal rejection). */
  get stopped(): boolean {
    return this.#tail.stopped;
  }

  /** Starts tailing. Throws when the event file cannot be opened. */
  start(): void {
    this.#tail.start();
  }

  /** Reads what is available now (e.g. after backpressure eased). */
  drain(): void {
    this.#tail.drain();
  }

  /** The final drain after the child exited; then closes. */
  finish(): void {
    this.#tail.finish();
  }

  /** Stops reading and releases every handle. Idempotent. */
  close(): void {
    this.#tail.close();
  }

  /** Closes the descriptor without a reference to this reader (see {@link LineTail.descriptorCloser}). */
  descriptorCloser(): () => void {
    return this.#tail.descriptorCloser();
  }

  #line(text: string): void {
    this.#lines++;
    const result = this.#receiver.receive(text);
    if (!result.ok) {
      this.#reject({ ...result.rejection }, text.length);
      return;
    }
    const event = result.message;
    if (event.run !== this.#runId) {
      this.#reject({
        code: 'foreign-run',
        reason: `event for run ${JSON.stringify(event.run)} in the channel of run ${JSON.stringify(this.#runId)}`,
        fatal: true,
        seq: event.seq,
        type: event.type,
        run: event.run,
      }, text.length);
      return;
    }
    this.#handlers.event(event, text.length);
  }

  /** A line the tail itself rejected (oversize, incomplete): it counts as a line like a decoded one. */
  #rejectLine(rejection: ReaderRejection, bytes: number): void {
    this.#lines++;
    this.#reject(rejection, bytes);
  }

  #reject(rejection: ReaderRejection, bytes = 0): void {
    if (rejection.fatal) this.#tail.close();
    this.#handlers.rejected(rejection, bytes);
  }
}
