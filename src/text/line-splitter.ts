// Splits a byte stream into UTF-8 text lines, bounded: an overlong line is reported once and skipped to its newline (pure, no I/O).

export type SplitLine = { kind: 'line'; text: string; lineNumber: number } | { kind: 'too-long'; lineNumber: number; limit: number };

/**
 * Where {@link LineSplitter.write} hands the lines of a chunk, one call each (no object per line). `text`
 * may be a slice of the chunk's decoded text, so it shares memory with the other lines of that chunk:
 * fine to parse, wasteful to keep one line of a chunk for long.
 */
export interface LineReceiver {
  line(text: string, lineNumber: number): void;
  /** A line passed `limit` bytes before its newline; `head` is its first bytes, decoded, to sniff what it was. */
  tooLong(lineNumber: number, limit: number, head: string): void;
}

const NEWLINE = 0x0a;
/** Bytes of an overlong line kept in its report. */
const HEAD_BYTES = 256;

/**
 * Feed chunks with `write()` (or `push()` for an array), call `finish()` (or `end()`) at end of input to
 * get a last line that had no newline. An overlong line is reported once, when it passes the bound, and
 * its rest is skipped up to its newline. Memory stays within `maxLineBytes` plus one chunk.
 */
export class LineSplitter {
  /** The start of a line an earlier chunk left unfinished (copies: a stream may reuse its chunks). */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** Inside an overlong line, already reported: its bytes are dropped up to its newline. */
  #skipping = false;
  #lineNumber = 0;

  constructor(readonly maxLineBytes: number) {}

  /** Hands every line `chunk` completes to `receiver`, in order. */
  write(chunk: Buffer, receiver: LineReceiver): void {
    let start = 0;
    if (this.#pendingBytes > 0 || this.#skipping) {
      const newline = chunk.indexOf(NEWLINE);
      if (newline === -1) {
        this.#keep(chunk, 0, chunk.length, receiver);
        return;
      }
      this.#keep(chunk, 0, newline, receiver);
      this.#endPending(receiver);
      start = newline + 1;
    }
    const last = chunk.lastIndexOf(NEWLINE);
    if (last >= start) {
      // When the whole lines together fit the bound, none can pass it: one decode for all of them.
      if (last - start <= this.maxLineBytes) this.#decodedLines(chunk.toString('utf8', start, last), receiver);
      else this.#boundedLines(chunk, start, last, receiver);
      start = last + 1;
    }
    if (start < chunk.length) this.#keep(chunk, start, chunk.length, receiver);
  }

  /** End of input: the last line when it had no newline (it counts as a line), else undefined. */
  finish(): string | undefined {
    this.#skipping = false;
    if (this.#pendingBytes === 0) return undefined;
    this.#lineNumber++;
    return this.#takePending();
  }

  /** {@link write} as an array (for a reader that awaits between lines). */
  push(chunk: Buffer): SplitLine[] {
    const lines: SplitLine[] = [];
    this.write(chunk, collector(lines));
    return lines;
  }

  /** {@link finish} as an array. */
  end(): SplitLine[] {
    const text = this.finish();
    return text === undefined ? [] : [{ kind: 'line', text, lineNumber: this.#lineNumber }];
  }

  /** `text`: whole lines joined by newlines, without the last newline. */
  #decodedLines(text: string, receiver: LineReceiver): void {
    let from = 0;
    for (;;) {
      const newline = text.indexOf('\n', from);
      if (newline === -1) {
        receiver.line(from === 0 ? text : text.slice(from), ++this.#lineNumber);
        return;
      }
      receiver.line(text.slice(from, newline), ++this.#lineNumber);
      from = newline + 1;
    }
  }

  /** Whole lines from `start` to the newline at `last`, each checked against the bound. */
  #boundedLines(chunk: Buffer, start: number, last: number, receiver: LineReceiver): void {
    let from = start;
    while (from <= last) {
      const newline = chunk.indexOf(NEWLINE, from);
      if (newline - from > this.maxLineBytes) {
        const head = chunk.toString('utf8', from, Math.min(newline, from + HEAD_BYTES));
        receiver.tooLong(++this.#lineNumber, this.maxLineBytes, head);
      } else {
        receiver.line(chunk.toString('utf8', from, newline), ++this.#lineNumber);
      }
      from = newline + 1;
    }
  }

  /** Bytes of a line that goes on in a later chunk. */
  #keep(chunk: Buffer, from: number, to: number, receiver: LineReceiver): void {
    if (this.#skipping || to === from) return;
    if (this.#pendingBytes + (to - from) > this.maxLineBytes) {
      const head = Buffer.concat([...this.#pending, chunk.subarray(from, Math.min(to, from + HEAD_BYTES))]).toString('utf8', 0, HEAD_BYTES);
      receiver.tooLong(++this.#lineNumber, this.maxLineBytes, head);
      this.#pending = [];
      this.#pendingBytes = 0;
      this.#skipping = true;
      return;
    }
    const copy = Buffer.allocUnsafe(to - from);
    chunk.copy(copy, 0, from, to);
    this.#pending.push(copy);
    this.#pendingBytes += copy.length;
  }

  #endPending(receiver: LineReceiver): void {
    if (this.#skipping) {
      // Its report went out when it passed the bound.
      this.#skipping = false;
      return;
    }
    receiver.line(this.#takePending(), ++this.#lineNumber);
  }

  #takePending(): string {
    const text = Buffer.concat(this.#pending, this.#pendingBytes).toString('utf8');
    this.#pending = [];
    this.#pendingBytes = 0;
    return text;
  }
}

function collector(lines: SplitLine[]): LineReceiver {
  return {
    line: (text, lineNumber) => lines.push({ kind: 'line', text, lineNumber }),
    tooLong: (lineNumber, limit) => lines.push({ kind: 'too-long', lineNumber, limit }),
  };
}
