// Splits fuseraft's stdout bytes into UTF-8 lines, bounded: an overlong line is skipped and reported with its first bytes.

/** One piece of output: a whole line (without its newline), or a line that passed the bound. */
export type StdoutLine = { kind: 'line'; text: string } | { kind: 'overlong'; prefix: string; limit: number };

const NEWLINE = 0x0a;
/** Bytes of an overlong line kept so its frame type can be sniffed. */
const PREFIX_BYTES = 256;

/**
 * Feed chunks with `push()`, call `end()` at end of input (a last line without a newline still
 * counts). Memory stays within `maxLineBytes` plus one chunk: an overlong line is reported once, when
 * it passes the bound, and its rest is skipped up to the next newline.
 */
export class StdoutLines {
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #skipping = false;

  constructor(readonly maxLineBytes: number) {}

  push(chunk: Buffer): StdoutLine[] {
    const lines: StdoutLine[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      this.#take(chunk.subarray(start, end), lines);
      if (newline === -1) break;
      this.#finishLine(lines);
      start = newline + 1;
    }
    return lines;
  }

  end(): StdoutLine[] {
    const lines: StdoutLine[] = [];
    if (this.#pendingBytes > 0) this.#finishLine(lines);
    this.#skipping = false;
    return lines;
  }

  #take(piece: Buffer, lines: StdoutLine[]): void {
    if (this.#skipping || piece.length === 0) return;
    if (this.#pendingBytes + piece.length > this.maxLineBytes) {
      const head = Buffer.concat([...this.#pending, piece.subarray(0, PREFIX_BYTES)]).subarray(0, PREFIX_BYTES);
      lines.push({ kind: 'overlong', prefix: head.toString('utf8'), limit: this.maxLineBytes });
      this.#pending = [];
      this.#pendingBytes = 0;
      this.#skipping = true;
      return;
    }
    // Copied: the chunk's buffer may be reused by the stream.
    this.#pending.push(Buffer.from(piece));
    this.#pendingBytes += piece.length;
  }

  #finishLine(lines: StdoutLine[]): void {
    if (this.#skipping) {
      this.#skipping = false;
      return;
    }
    const text = Buffer.concat(this.#pending, this.#pendingBytes).toString('utf8');
    this.#pending = [];
    this.#pendingBytes = 0;
    lines.push({ kind: 'line', text });
  }
}
