// Tails an append-only file as whole lines: fs.watch wake-ups, a slow safety poll, synchronous bounded reads.
import { closeSync, fstatSync, openSync, readSync, statSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { MAX_LINE_BYTES } from '../wire/index.js';

/** What a {@link LineTail} reports. Handlers run synchronously inside a drain and must not throw. */
export interface LineTailHandlers {
  /** One whole line (without its newline), shorter than `MAX_LINE_BYTES` bytes. */
  line(text: string): void;
  /** A line reached `MAX_LINE_BYTES` bytes before its newline: reported once, then skipped to its newline. */
  oversize(): void;
  /** The file ended with bytes after the last newline when the tail finished (a line cut short). */
  incomplete(bytes: number): void;
  /** The file shrank below the read offset. Fatal: the tail stops. */
  truncated(size: number, offset: number): void;
  /**
   * The path no longer names the file being read (renamed over, deleted, deleted and re-created), or the
   * bytes just before the read offset changed (truncated and written again). Fatal: the tail stops.
   */
  replaced(reason: string): void;
  /** Reading failed. Fatal: the tail stops. */
  failed(error: Error): void;
  /** After {@link LineTail.end}: the last line was handed on and the tail closed. */
  ended?(): void;
}

/** Where a tail stands: the first byte of the next line (or, inside an oversize line, the next byte to skip). */
export interface TailPosition {
  offset: number;
  skipping: boolean;
}

export interface LineTailOptions {
  /**
   * Safety poll period: catches any wake-up fs.watch missed. Default 500 ms. While polls find nothing
   * new the period doubles, up to 8 times this (4 s by default), and drops back as soon as data arrives.
   */
  pollMs?: number;
  /** Asked before each chunk: while it returns true, reading pauses (the file is the buffer). */
  shouldPause?: () => boolean;
  /** Start here instead of at the beginning (a second tail taking over another's place). */
  from?: TailPosition;
  /** The file must be this one (device and inode): otherwise `replaced` is reported at start. */
  identity?: { dev: number; ino: number };
}

const NEWLINE = 0x0a;
const CHUNK_BYTES = 64 * 1024;
/**
 * How many of the last bytes read are remembered and compared with the file before each drain: a file
 * truncated and written again differs there (the last line's seq and payload) unless rewritten identically.
 */
const WITNESS_BYTES = 256;
/** A line of fewer UTF-16 units than this is surely under MAX_LINE_BYTES (at most 3 UTF-8 bytes per unit). */
const SURELY_SHORT_UNITS = Math.ceil(MAX_LINE_BYTES / 3);
/** An idle tail's safety poll slows down to this many times its base period. */
const MAX_POLL_BACKOFF = 8;
/** Period of the one timer that runs every tail's safety poll. */
const POLL_TICK_MS = 100;

/**
 * All open tails share one unref'd timer (hundreds of idle runs must not mean hundreds of timers);
 * each tail decides on each tick whether its own poll is due.
 */
const polledTails = new Set<LineTail>();
let pollTicker: NodeJS.Timeout | undefined;

function startPolling(tail: LineTail): void {
  polledTails.add(tail);
  if (pollTicker === undefined) {
    pollTicker = setInterval(() => {
      const now = Date.now();
      for (const each of polledTails) each.pollIfDue(now);
    }, POLL_TICK_MS);
    pollTicker.unref();
  }
}

function stopPolling(tail: LineTail): void {
  polledTails.delete(tail);
  if (polledTails.size === 0 && pollTicker !== undefined) {
    clearInterval(pollTicker);
    pollTicker = undefined;
  }
}

/**
 * Reads a file that another process appends lines to. Every wake-up drains everything available
 * (no per-tick cap) in 64 KiB synchronous reads into one reused buffer; only whole lines are handed
 * on (the whole lines of a read decoded at once), a partial last line waits at the front of that
 * buffer for its newline. Memory stays bounded whatever the writer does: an oversize line is never
 * held, a pause leaves unread bytes in the file.
 */
export class LineTail {
  readonly #path: string;
  readonly #handlers: LineTailHandlers;
  readonly #pollMs: number;
  readonly #shouldPause: () => boolean;
  /** A partial line carried over from the last read (its first `#partialLength` bytes), then the next read. */
  readonly #chunk = Buffer.allocUnsafe(MAX_LINE_BYTES + CHUNK_BYTES);
  #partialLength = 0;
  /** Inside an oversize line: discard until its newline. */
  #skipping = false;
  #offset = 0;
  #fd: number | undefined;
  /** The descriptor as a detached closer sees it (see {@link descriptorCloser}); cleared when this tail closes it. */
  #detached: { fd: number | undefined } | undefined;
  /** Device and inode of the open file: the path must keep naming it. */
  #identity: { dev: number; ino: number } | undefined;
  /** The last bytes read (file offsets `#offset - #witnessLength` to `#offset`), and a buffer to re-read them. */
  readonly #witness = Buffer.alloc(WITNESS_BYTES);
  readonly #witnessCheck = Buffer.alloc(WITNESS_BYTES);
  #witnessLength = 0;
  #watcher: FSWatcher | undefined;
  /** Current safety poll period (backs off while idle) and when the next poll is due. */
  #pollEvery: number;
  #nextPollAt = 0;
  #draining = false;
  #drainAgain = false;
  #finishAfterDrain = false;
  /** The writer is gone ({@link end}): no watching; close at end of file. */
  #ending = false;
  #stopped = false;

  constructor(path: string, handlers: LineTailHandlers, options: LineTailOptions = {}) {
    this.#path = path;
    this.#handlers = handlers;
    this.#pollMs = options.pollMs ?? 500;
    this.#pollEvery = this.#pollMs;
    this.#shouldPause = options.shouldPause ?? (() => false);
    if (options.from !== undefined) {
      this.#offset = options.from.offset;
      this.#skipping = options.from.skipping;
    }
    this.#expectedIdentity = options.identity;
  }

  readonly #expectedIdentity: { dev: number; ino: number } | undefined;

  /** Where the next line starts (the partial line held is not consumed yet). */
  get position(): TailPosition {
    return { offset: this.#offset - this.#partialLength, skipping: this.#skipping };
  }

  /** Device and inode of the open file (undefined before start). */
  get identity(): { dev: number; ino: number } | undefined {
    return this.#identity;
  }

  /** Bytes consumed so far (the read offset). */
  get offset(): number {
    return this.#offset;
  }

  /** True once the tail stopped (finished, closed, or failed). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Opens the file (which must exist), starts the watcher and the poll, and drains once. Throws on open errors. */
  start(): void {
    this.#fd = openSync(this.#path, 'r');
    const opened = fstatSync(this.#fd);
    this.#identity = { dev: opened.dev, ino: opened.ino };
    const expected = this.#expectedIdentity;
    if (expected !== undefined && (expected.dev !== opened.dev || expected.ino !== opened.ino)) {
      this.close();
      this.#handlers.replaced('the event file was replaced by another file (renamed over, or removed and created again)');
      return;
    }
    try {
      this.#watcher = watch(this.#path, { persistent: false }, () => this.drain());
      this.#watcher.on('error', () => {
        // The safety poll keeps reading; a broken watcher only costs latency.
        this.#watcher?.close();
        this.#watcher = undefined;
      });
    } catch {
      this.#watcher = undefined;
    }
    this.#nextPollAt = Date.now() + this.#pollEvery;
    startPolling(this);
    this.drain();
  }

  /** @internal The shared poll timer's tick: drains when this tail's safety poll is due, backing off while idle. */
  pollIfDue(now: number): void {
    if (now < this.#nextPollAt) return;
    // Also while paused: a swapped file is found within one poll period, not when the consumer catches up.
    if (!this.#sameFile()) return;
    const before = this.#offset;
    this.drain();
    if (this.#offset === before) this.#pollEvery = Math.min(this.#pollEvery * 2, this.#pollMs * MAX_POLL_BACKOFF);
    this.#nextPollAt = now + this.#pollEvery;
  }

  /** Reads everything available now, unless paused. Safe to call at any time, also re-entrantly. */
  drain(): void {
    this.#run(false);
  }

  /**
   * The last drain, after the writer is gone: reads everything left (ignoring the pause), reports an
   * unterminated last line as `incomplete`, then closes.
   */
  finish(): void {
    if (this.#stopped) return;
    if (this.#draining) {
      // Called from a handler: finish once the running drain returns.
      this.#finishAfterDrain = true;
      return;
    }
    this.#run(true);
    if (!this.#stopped) {
      const leftover = this.#skipping ? 0 : this.#partialLength;
      if (leftover > 0) this.#handlers.incomplete(leftover);
    }
    this.close();
  }

  /**
   * The writer is gone, but the rest is read only as fast as the pause allows: no more watching or
   * polling; each drain (`drain()`, e.g. when backpressure eases) reads on, and at end of file an
   * unterminated last line is reported as `incomplete`, the tail closes and `ended` is called.
   */
  end(): void {
    if (this.#stopped || this.#ending) return;
    this.#ending = true;
    stopPolling(this);
    this.#watcher?.close();
    this.#watcher = undefined;
    this.drain();
  }

  /**
   * A function that closes the open descriptor while holding no reference to this tail or its handlers:
   * for a finalizer that runs once the tail itself is garbage. It does nothing once the tail closed it.
   */
  descriptorCloser(): () => void {
    const detached = (this.#detached ??= { fd: this.#fd });
    return () => {
      if (detached.fd === undefined) return;
      try {
        closeSync(detached.fd);
      } catch {
        // Already closed: nothing leaks.
      }
      detached.fd = undefined;
    };
  }

  /** Stops reading and releases the fd, the watcher and the timer. Idempotent. */
  close(): void {
    this.#stopped = true;
    stopPolling(this);
    this.#watcher?.close();
    this.#watcher = undefined;
    if (this.#detached !== undefined) this.#detached.fd = undefined;
    if (this.#fd !== undefined) {
      try {
        closeSync(this.#fd);
      } catch {
        // Already closed: nothing leaks.
      }
      this.#fd = undefined;
    }
    this.#partialLength = 0;
  }

  #run(ignorePause: boolean): void {
    if (this.#stopped || this.#fd === undefined) return;
    if (this.#draining) {
      // A handler asked for a drain (e.g. a resume): the running loop picks it up.
      this.#drainAgain = true;
      return;
    }
    this.#draining = true;
    let atEnd = false;
    try {
      do {
        this.#drainAgain = false;
        atEnd = this.#readAvailable(ignorePause);
      } while (this.#drainAgain && !this.#stopped);
    } finally {
      this.#draining = false;
    }
    if (atEnd && this.#ending && !this.#stopped) {
      const leftover = this.#skipping ? 0 : this.#partialLength;
      if (leftover > 0) this.#handlers.incomplete(leftover);
      this.close();
      this.#handlers.ended?.();
      return;
    }
    if (this.#finishAfterDrain) {
      this.#finishAfterDrain = false;
      this.finish();
    }
  }

  /** Reads until end of file (true), a pause or a stop (false). */
  #readAvailable(ignorePause: boolean): boolean {
    const fd = this.#fd;
    if (fd === undefined) return false;
    // Paused: not even an fstat (a slow consumer must not cost a syscall per wake-up).
    if (!ignorePause && this.#shouldPause()) return false;
    let size: number;
    try {
      size = fstatSync(fd).size;
    } catch (error) {
      this.#fail(error as Error);
      return false;
    }
    if (size < this.#offset) {
      // Reads at the old offset would silently return nothing: the lines in between are lost.
      const offset = this.#offset;
      this.close();
      this.#handlers.truncated(size, offset);
      return false;
    }
    if (!this.#sameFile()) return false;
    for (;;) {
      if (this.#stopped) return false;
      if (!ignorePause && this.#shouldPause()) return false;
      let bytes: number;
      try {
        bytes = readSync(fd, this.#chunk, this.#partialLength, CHUNK_BYTES, this.#offset);
      } catch (error) {
        this.#fail(error as Error);
        return false;
      }
      if (bytes === 0) return true;
      this.#offset += bytes;
      this.#remember(this.#partialLength, bytes);
      if (this.#pollEvery !== this.#pollMs) {
        // Data flows again: back to the base safety poll.
        this.#pollEvery = this.#pollMs;
        this.#nextPollAt = Math.min(this.#nextPollAt, Date.now() + this.#pollMs);
      }
      this.#split(this.#partialLength + bytes);
    }
  }

  /**
   * Hands on every whole line of the first `length` bytes of the chunk (the carried partial line, then
   * what was just read); keeps (or skips) the bytes after the last newline. The whole lines are decoded
   * as one string, split at '\n' (a newline byte is never part of a multi-byte character, and stays a
   * newline when the bytes around it are invalid UTF-8); a partial line stays bytes, so a character cut
   * by the end of a read is never decoded in halves.
   */
  #split(length: number): void {
    const chunk = this.#chunk;
    let start = 0;
    if (this.#skipping) {
      const newline = chunk.indexOf(NEWLINE, 0);
      if (newline === -1 || newline >= length) return;
      this.#skipping = false;
      start = newline + 1;
    }
    const last = length > start ? chunk.lastIndexOf(NEWLINE, length - 1) : -1;
    if (last >= start) {
      const text = chunk.toString('utf8', start, last);
      // U+FFFD may stand for 1 to 3 invalid bytes: only byte positions give such a line's exact size.
      if (text.includes('\uFFFD')) this.#splitBytes(start, last);
      else this.#splitText(text);
      if (this.#stopped) return;
      start = last + 1;
    }
    this.#keepPartial(start, length);
  }

  /** The lines of `text` (valid UTF-8 decoded, so `Buffer.byteLength` of a line is its exact size in the file). */
  #splitText(text: string): void {
    const end = text.length;
    let from = 0;
    while (from <= end && !this.#stopped) {
      let newline = text.indexOf('\n', from);
      if (newline === -1) newline = end;
      const units = newline - from;
      // A UTF-16 unit is 1 to 3 UTF-8 bytes: only a line between the two bounds needs counting.
      if (units >= MAX_LINE_BYTES) {
        this.#handlers.oversize();
      } else if (units < SURELY_SHORT_UNITS) {
        this.#handlers.line(text.slice(from, newline));
      } else {
        const line = text.slice(from, newline);
        if (Buffer.byteLength(line, 'utf8') >= MAX_LINE_BYTES) this.#handlers.oversize();
        else this.#handlers.line(line);
      }
      from = newline + 1;
    }
  }

  /** The lines of chunk bytes `start` to the newline at `last`, sized and decoded one by one. */
  #splitBytes(start: number, last: number): void {
    const chunk = this.#chunk;
    while (start <= last && !this.#stopped) {
      const newline = chunk.indexOf(NEWLINE, start);
      if (newline - start >= MAX_LINE_BYTES) this.#handlers.oversize();
      else this.#handlers.line(chunk.toString('utf8', start, newline));
      start = newline + 1;
    }
  }

  /** Keeps chunk bytes `start` to `end` (a line without its newline yet) at the front of the chunk, or skips an oversize one. */
  #keepPartial(start: number, end: number): void {
    const length = end - start;
    if (length >= MAX_LINE_BYTES) {
      // Report now and drop what we hold: the rest of this line is skipped as it arrives.
      this.#partialLength = 0;
      this.#skipping = true;
      this.#handlers.oversize();
      return;
    }
    if (start > 0 && length > 0) this.#chunk.copyWithin(0, start, end);
    this.#partialLength = length;
  }

  /**
   * Whether the path still names the open file and the bytes before the read offset are the ones read.
   * When not, the tail stops and reports `replaced` (one stat and one small pread per drain).
   */
  #sameFile(): boolean {
    const fd = this.#fd;
    if (fd === undefined || this.#stopped) return false;
    let reason: string | undefined;
    try {
      // After end() the writer is gone and the file may be removed under the open descriptor (the run
      // ended, its directory went): only the bytes read so far are checked then.
      const named = this.#ending ? undefined : statSync(this.#path, { throwIfNoEntry: false });
      if (named === undefined && !this.#ending) reason = 'the event file was removed';
      else if (named !== undefined && (named.ino !== this.#identity?.ino || named.dev !== this.#identity.dev)) {
        reason = 'the event file was replaced by another file (renamed over, or removed and created again)';
      } else if (this.#witnessLength > 0) {
        const length = this.#witnessLength;
        const read = readSync(fd, this.#witnessCheck, 0, length, this.#offset - length);
        if (read !== length || this.#witnessCheck.compare(this.#witness, 0, length, 0, length) !== 0) {
          reason = `the event file was rewritten: the ${length} bytes before offset ${this.#offset} changed (truncated and written again)`;
        }
      }
    } catch (error) {
      this.#fail(error as Error);
      return false;
    }
    if (reason === undefined) return true;
    this.close();
    this.#handlers.replaced(reason);
    return false;
  }

  /** Remembers the last bytes of a read (chunk bytes `start` to `start + length`) as the witness of what was read. */
  #remember(start: number, length: number): void {
    if (length >= WITNESS_BYTES) {
      this.#chunk.copy(this.#witness, 0, start + length - WITNESS_BYTES, start + length);
      this.#witnessLength = WITNESS_BYTES;
      return;
    }
    const keep = Math.min(this.#witnessLength, WITNESS_BYTES - length);
    this.#witness.copy(this.#witness, 0, this.#witnessLength - keep, this.#witnessLength);
    this.#chunk.copy(this.#witness, keep, start, start + length);
    this.#witnessLength = keep + length;
  }

  #fail(error: Error): void {
    this.close();
    this.#handlers.failed(error);
  }
}
