// Splits a byte stream into UTF-8 text lines, bounded: an overlong line is reported once and skipped to its newline (pure, no I/O).

export type SplitLine = { kind: 'line'; text: string; lineNumber: number } | { kind: 'too-long'; lineNumber: number; limit: number };

const NEWLINE = 0x0a;

/** Feed chunks with push(); call end() at end of input to get a last line that had no newline. */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skipping = false;
  private lineNumber = 0;

  constructor(private readonly maxLineBytes: number) {}

  push(chunk: Buffer): SplitLine[] {
    const lines: SplitLine[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      this.take(chunk.subarray(start, end), lines);
      if (newline === -1) break;
      this.finishLine(lines);
      start = newline + 1;
    }
    return lines;
  }

  end(): SplitLine[] {
    const lines: SplitLine[] = [];
    if (this.pendingBytes > 0 || this.skipping) this.finishLine(lines);
    return lines;
  }

  private take(piece: Buffer, lines: SplitLine[]): void {
    if (this.skipping || piece.length === 0) return;
    if (this.pendingBytes + piece.length > this.maxLineBytes) {
      this.lineNumber += 1;
      lines.push({ kind: 'too-long', lineNumber: this.lineNumber, limit: this.maxLineBytes });
      this.pending = [];
      this.pendingBytes = 0;
      this.skipping = true;
      return;
    }
    this.pending.push(Buffer.from(piece));
    this.pendingBytes += piece.length;
  }

  private finishLine(lines: SplitLine[]): void {
    if (this.skipping) {
      this.skipping = false;
      return;
    }
    this.lineNumber += 1;
    const text = Buffer.concat(this.pending, this.pendingBytes).toString('utf8');
    this.pending = [];
    this.pendingBytes = 0;
    lines.push({ kind: 'line', text, lineNumber: this.lineNumber });
  }
}
