// The control file reader: one bounded read per call, whole lines only, over-long lines skipped, shrinking detected.
import { fstatSync, openSync, readSync } from 'node:fs';

/** Fen's child reads at most one 64 KiB chunk and 64 lines per read. */
const READ_CHUNK_BYTES = 65536;
const READ_MAX_LINES = 64;
/** How much of an over-long line the transcript keeps. */
const TOO_LONG_HEAD_BYTES = 200;

/** One item of a read: a whole line, or the head of a line too long for one read (reported once). */
export type ControlItem = { line: string } | { tooLong: string };

export type ReadOutcome = { ok: true } | { ok: false; reason: string };

export class ControlReader {
  private fd: number | undefined;
  private offset = 0;
  private skippingLongLine = false;

  constructor(private readonly path: string) {}

  /**
   * Reads once and hands each whole line to `take`, which returns false to stop consuming (the rest stays
   * unread). The file may not exist yet. A file shorter than the consumed offset is a fatal outcome.
   */
  read(take: (item: ControlItem) => boolean): ReadOutcome {
    if (this.fd === undefined) {
      try {
        this.fd = openSync(this.path, 'r');
      } catch {
        return { ok: true }; // not created yet
      }
    }
    const size = fstatSync(this.fd).size;
    if (size < this.offset) {
      return { ok: false, reason: `control file shrank below the consumed offset (${size} < ${this.offset})` };
    }
    if (size === this.offset) return { ok: true };
    const length = Math.min(READ_CHUNK_BYTES, size - this.offset);
    const chunk = Buffer.alloc(length);
    const got = readSync(this.fd, chunk, 0, length, this.offset);
    const base = this.offset;
    let start = 0;
    if (this.skippingLongLine) {
      const newline = chunk.indexOf(10);
      if (newline === -1 || newline >= got) {
        this.offset = base + got;
        return { ok: true };
      }
      this.skippingLongLine = false;
      start = newline + 1;
      this.offset = base + start;
    }
    for (let lines = 0; lines < READ_MAX_LINES && start < got; lines += 1) {
      const newline = chunk.indexOf(10, start);
      if (newline === -1 || newline >= got) {
        if (start === 0 && got === READ_CHUNK_BYTES) {
          // A line that does not fit one read: rejected once, then skipped up to its newline.
          this.skippingLongLine = true;
          this.offset = base + got;
          take({ tooLong: chunk.subarray(0, TOO_LONG_HEAD_BYTES).toString('utf8') });
        }
        return { ok: true };
      }
      const line = chunk.subarray(start, newline).toString('utf8');
      start = newline + 1;
      this.offset = base + start;
      if (!take({ line })) return { ok: true };
    }
    return { ok: true };
  }
}
