// Tails an append-only file as whole lines: synchronous bounded reads, split into lines, checked against a rewrite of the file.
import { closeSync, fstatSync, readSync, statSync } from 'node:fs';
import { MAX_LINE_BYTES } from '../wire/index.js';
import { openQuietly } from './quiet-open.js';
import { TailWaker } from './tail-waker.js';
import type { PathCheck, WakeCounter } from './tail-waker.js';

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
  /**
   * How long a line may wait to be read once notifications come faster than this (default 0: every
   * notification reads at once). The first notification after a quiet spell still reads at once; while
   * they keep coming sooner, the tail stops watching and reads on a shared tick every this many ms,
   * until three ticks in a row find nothing new. `'auto'`: 0 until the whole process wakes for reads
   * faster than 500 a second (see wake-governor.ts), then 25 ms (30 ms from 1600 a second) until it
   * calms down again.
   */
  latencyBudgetMs?: number | 'auto';
  /** @internal The wake-up count `'auto'` follows (tests pass their own; default: the process's). */
  governor?: WakeCounter;
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
 * How many of the last bytes read are remembered and read again with each read (the read starts that
 * far before the offset): a file truncated and written again differs there (the last line's seq and
 * payload) unless rewritten identically, and one shorter than the offset returns fewer of them.
 */
const WITNESS_BYTES = 256;
/** Where lines start in the read buffer: the witness bytes are read into the room before. */
const LINE_START = WITNESS_BYTES;
/** The read buffer: witness room, a partial line carried over (under MAX_LINE_BYTES), one read. */
const BUFFER_BYTES = LINE_START + MAX_LINE_BYTES + CHUNK_BYTES;
/** A line of fewer UTF-16 units than this is surely under MAX_LINE_BYTES (at most 3 UTF-8 bytes per unit). */
const SURELY_SHORT_UNITS = Math.ceil(MAX_LINE_BYTES / 3);
/**
 * A notification that finds no new data checks the path (a rename or delete also notifies) at most this
 * often: under load one write is often notified twice, and the safety poll checks anyway.
 */
const NOTIFIED_PATH_CHECK_MS = 100;
/**
 * One read buffer for every tail: reads are synchronous, so a tail holds it only inside a drain and
 * keeps just its partial line between drains. A drain nested inside another tail's (a handler starting
 * one) takes a buffer of its own.
 */
let spareBuffer: Buffer | undefined;

/**
 * Reads a file that another process appends lines to. Every wake-up drains everything available
 * (no per-tick cap) in 64 KiB synchronous reads into a shared buffer; only whole lines are handed on
 * (the whole lines of a read decoded at once), a partial last line is kept for its newline. A wake-up
 * costs one read while data flows: the read starts at the remembered bytes before the offset (which
 * tells a truncated or rewritten file), and a short read is the end of the file. Memory stays bounded
 * whatever the writer does: an oversize line is never held, a pause leaves unread bytes in the file.
 */
export class LineTail {
  readonly #path: string;
  readonly #handlers: LineTailHandlers;
  readonly #shouldPause: () => boolean;
  /** When to read (watch, safety poll, busy tick). */
  readonly #waker: TailWaker;
  /** A partial line carried over between drains (its first `#partialLength` bytes). */
  #partial: Buffer | undefined;
  #partialLength = 0;
  #partialChanged = false;
  /** Inside an oversize line: discard until its newline. */
  #skipping = false;
  #offset = 0;
  #fd: number | undefined;
  /** The descriptor as a detached closer sees it (see {@link descriptorCloser}); cleared when this tail closes it. */
  #detached: { fd: number | undefined } | undefined;
  /** Device and inode of the open file: the path must keep naming it. */
  #identity: { dev: number; ino: number } | undefined;
  readonly #expectedIdentity: { dev: number; ino: number } | undefined;
  /** The last bytes read (file offsets `#offset - #witnessLength` to `#offset`). */
  readonly #witness = Buffer.alloc(WITNESS_BYTES);
  #witnessLength = 0;
  #pathCheckedAt = Number.NEGATIVE_INFINITY;
  #draining = false;
  #drainAgain = false;
  #finishAfterDrain = false;
  /** The writer is gone ({@link end}): no watching; close at end of file. */
  #ending = false;
  #stopped = false;

  constructor(path: string, handlers: LineTailHandlers, options: LineTailOptions = {}) {
    this.#path = path;
    this.#handlers = handlers;
    this.#shouldPause = options.shouldPause ?? (() => false);
    this.#waker = new TailWaker(
      path,
      {
        read: (pathCheck) => {
          const before = this.#offset;
          this.#run(false, pathCheck);
          return this.#offset !== before;
        },
        paused: () => this.#shouldPause(),
        samePath: () => this.#samePath(),
        sameWitness: () => this.#sameWitness(),
      },
      {
        pollMs: options.pollMs ?? 500,
        latencyBudgetMs: options.latencyBudgetMs ?? 0,
        governor: options.governor,
      },
    );
    if (options.from !== undefined) {
      this.#offset = options.from.offset;
      this.#skipping = options.from.skipping;
    }
    this.#expectedIdentity = options.identity;
  }

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
    this.#fd = openQuietly(this.#path);
    const opened = fstatSync(this.#fd);
    this.#identity = { dev: opened.dev, ino: opened.ino };
    const expected = this.#expectedIdentity;
    if (expected !== undefined && (expected.dev !== opened.dev || expected.ino !== opened.ino)) {
      this.close();
      this.#handlers.replaced('the event file was replaced by another file (renamed over, or removed and created again)');
      return;
    }
    if (!this.#primeWitness()) return;
    this.#waker.start();
    this.drain();
  }

  /** @internal The safety poll as its shared timer runs it at `now` (tests give the time). */
  pollIfDue(now: number): void {
    this.#waker.pollIfDue(now);
  }

  /** Reads everything available now, unless paused. Safe to call at any time, also re-entrantly. */
  drain(): void {
    this.#run(false, 'always');
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
    this.#run(true, 'always');
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
    this.#waker.stop();
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

  /** Stops reading and releases the fd, the watcher and the timers. Idempotent. */
  close(): void {
    this.#stopped = true;
    this.#waker.stop();
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
    this.#partial = undefined;
  }

  /**
   * `pathCheck`: whether a drain that finds no new data checks the path ('done': the caller just did;
   * 'throttled': a notification's drain, see NOTIFIED_PATH_CHECK_MS).
   */
  #run(ignorePause: boolean, pathCheck: PathCheck): void {
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
        atEnd = this.#readAvailable(ignorePause, pathCheck);
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

  /** Reads until end of file (true), a pause or a stop (false), holding the shared read buffer meanwhile. */
  #readAvailable(ignorePause: boolean, pathCheck: PathCheck): boolean {
    const fd = this.#fd;
    if (fd === undefined) return false;
    // Paused: not even a read (a slow consumer must not cost a syscall per wake-up).
    if (!ignorePause && this.#shouldPause()) return false;
    const buffer = spareBuffer ?? Buffer.allocUnsafeSlow(BUFFER_BYTES);
    spareBuffer = undefined;
    if (this.#partialLength > 0) this.#partial?.copy(buffer, LINE_START, 0, this.#partialLength);
    try {
      return this.#readInto(fd, buffer, ignorePause, pathCheck);
    } finally {
      if (this.#partialChanged && !this.#stopped) {
        this.#partial = this.#partialLength === 0 ? undefined : Buffer.from(buffer.subarray(LINE_START, LINE_START + this.#partialLength));
      }
      this.#partialChanged = false;
      spareBuffer = buffer;
    }
  }

  #readInto(fd: number, buffer: Buffer, ignorePause: boolean, pathCheck: PathCheck): boolean {
    let foundData = false;
    for (;;) {
      if (this.#stopped) return false;
      if (foundData && !ignorePause && this.#shouldPause()) return false;
      const at = LINE_START + this.#partialLength;
      const witness = this.#witnessLength;
      let bytes: number;
      try {
        bytes = readSync(fd, buffer, at - witness, witness + CHUNK_BYTES, this.#offset - witness);
      } catch (error) {
        this.#fail(error as Error);
        return false;
      }
      if (!this.#witnessHolds(bytes, buffer, at - witness)) return false;
      const fresh = bytes - witness;
      // Nothing new: a notification without data may be a rename or delete, so the path is checked.
      if (fresh === 0) return foundData || this.#pathHoldsAfterEmptyRead(pathCheck);
      foundData = true;
      this.#offset += fresh;
      const keep = Math.min(WITNESS_BYTES, witness + fresh);
      buffer.copy(this.#witness, 0, at + fresh - keep, at + fresh);
      this.#witnessLength = keep;
      this.#waker.dataFlowed();
      this.#split(buffer, at + fresh);
      // A short read is the end of the file (a line appended since wakes the tail again).
      if (fresh < CHUNK_BYTES) return !this.#stopped;
    }
  }

  /**
   * Whether a read of `bytes` bytes from `#witnessLength` bytes before the offset, landed at `from`,
   * shows the same file: fewer bytes than the witness means the file shrank below the offset, other
   * bytes that it was rewritten. Reports and stops when not.
   */
  #witnessHolds(bytes: number, buffer: Buffer, from: number): boolean {
    const witness = this.#witnessLength;
    if (bytes < witness) {
      // Reads at the old offset would silently return nothing: the lines in between are lost.
      const offset = this.#offset;
      this.close();
      this.#handlers.truncated(offset - witness + bytes, offset);
      return false;
    }
    if (witness === 0 || buffer.compare(this.#witness, 0, witness, from, from + witness) === 0) return true;
    this.close();
    this.#handlers.replaced(
      `the event file was rewritten: the ${witness} bytes before offset ${this.#offset} changed (truncated and written again)`,
    );
    return false;
  }

  /** A tail starting at another's place reads the bytes before it first, so a rewrite from then on is told. */
  #primeWitness(): boolean {
    const fd = this.#fd;
    if (fd === undefined || this.#offset === 0) return true;
    const length = Math.min(WITNESS_BYTES, this.#offset);
    let bytes: number;
    try {
      bytes = readSync(fd, this.#witness, 0, length, this.#offset - length);
    } catch (error) {
      this.#fail(error as Error);
      return false;
    }
    if (bytes < length) {
      const offset = this.#offset;
      this.close();
      this.#handlers.truncated(offset - length + bytes, offset);
      return false;
    }
    this.#witnessLength = length;
    return true;
  }

  /**
   * Hands on every whole line of buffer bytes `LINE_START` to `end` (the carried partial line, then what
   * was just read); keeps (or skips) the bytes after the last newline. The whole lines are decoded as
   * one string, split at '\n' (a newline byte is never part of a multi-byte character, and stays a
   * newline when the bytes around it are invalid UTF-8); a partial line stays bytes, so a character cut
   * by the end of a read is never decoded in halves.
   */
  #split(buffer: Buffer, end: number): void {
    let start = LINE_START;
    if (this.#skipping) {
      const newline = buffer.indexOf(NEWLINE, start);
      if (newline === -1 || newline >= end) return;
      this.#skipping = false;
      start = newline + 1;
    }
    const last = end > start ? buffer.lastIndexOf(NEWLINE, end - 1) : -1;
    if (last >= start) {
      const text = buffer.toString('utf8', start, last);
      // U+FFFD may stand for 1 to 3 invalid bytes: only byte positions give such a line's exact size.
      if (text.includes('\uFFFD')) this.#splitBytes(buffer, start, last);
      else this.#splitText(text);
      if (this.#stopped) return;
      start = last + 1;
    }
    this.#keepPartial(buffer, start, end);
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

  /** The lines of buffer bytes `start` to the newline at `last`, sized and decoded one by one. */
  #splitBytes(buffer: Buffer, start: number, last: number): void {
    while (start <= last && !this.#stopped) {
      const newline = buffer.indexOf(NEWLINE, start);
      if (newline - start >= MAX_LINE_BYTES) this.#handlers.oversize();
      else this.#handlers.line(buffer.toString('utf8', start, newline));
      start = newline + 1;
    }
  }

  /** Keeps buffer bytes `start` to `end` (a line without its newline yet) at `LINE_START`, or skips an oversize one. */
  #keepPartial(buffer: Buffer, start: number, end: number): void {
    const length = end - start;
    if (length >= MAX_LINE_BYTES) {
      // Report now and drop what we hold: the rest of this line is skipped as it arrives.
      this.#setPartial(0);
      this.#skipping = true;
      this.#handlers.oversize();
      return;
    }
    if (start > LINE_START && length > 0) buffer.copyWithin(LINE_START, start, end);
    this.#setPartial(length);
  }

  #setPartial(length: number): void {
    if (length === 0 && this.#partialLength === 0) return;
    this.#partialLength = length;
    this.#partialChanged = true;
  }

  #pathHoldsAfterEmptyRead(pathCheck: PathCheck): boolean {
    if (pathCheck === 'done') return true;
    if (pathCheck === 'throttled') {
      const now = Date.now();
      if (now - this.#pathCheckedAt < NOTIFIED_PATH_CHECK_MS) return true;
      this.#pathCheckedAt = now;
    }
    return this.#samePath();
  }

  /**
   * Whether the path still names the open file (a rename over it, or a delete, changes that); reports
   * `replaced` and stops when not. After end() the writer is gone and the file may be removed under the
   * open descriptor (the run ended, its directory went): the path is not checked then.
   */
  #samePath(): boolean {
    if (this.#ending) return true;
    let reason: string | undefined;
    try {
      const named = statSync(this.#path, { throwIfNoEntry: false });
      if (named === undefined) reason = 'the event file was removed';
      else if (named.ino !== this.#identity?.ino || named.dev !== this.#identity.dev) {
        reason = 'the event file was replaced by another file (renamed over, or removed and created again)';
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

  /** Whether the bytes before the offset are still the ones read (a paused tail's check, without reading on). */
  #sameWitness(): boolean {
    const fd = this.#fd;
    if (fd === undefined) return false;
    const witness = this.#witnessLength;
    if (witness === 0) return true;
    const check = Buffer.allocUnsafe(witness);
    let bytes: number;
    try {
      bytes = readSync(fd, check, 0, witness, this.#offset - witness);
    } catch (error) {
      this.#fail(error as Error);
      return false;
    }
    if (bytes < witness) {
      const offset = this.#offset;
      this.close();
      this.#handlers.truncated(offset - witness + bytes, offset);
      return false;
    }
    return this.#witnessHolds(bytes, check, 0);
  }

  #fail(error: Error): void {
    this.close();
    this.#handlers.failed(error);
  }
}
