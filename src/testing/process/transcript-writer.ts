// The program side of every fake's transcript: appends one JSON entry per line to a private file in the kit's directory.
import { openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The first line of every transcript file: who wrote it (and, per program, what it was started with). */
export interface TranscriptFileHeader {
  kind: 'header';
  pid: number;
  scenario: string;
  [extra: string]: unknown;
}

/** Writes `Entry` lines after a header; each program (Fen child, fa, fuseraft) has its own entry union. */
export class TranscriptWriter<Entry extends { kind: string }> {
  private fd: number | undefined;
  /** While paused (a flood), entries are dropped: a flood is recorded as one note, not one entry per event. */
  paused = false;

  /** `dir` undefined: no transcript, every write is a no-op. */
  constructor(dir: string | undefined, scenario: string, started: number, extra: Record<string, unknown> = {}) {
    if (dir === undefined) return;
    // Zero-padded start time first, so the kit can sort one fakeChild's transcripts by name.
    const name = `transcript-${String(started).padStart(15, '0')}-${process.pid}.jsonl`;
    this.fd = openSync(join(dir, name), 'wx', 0o600);
    this.writeLine({ ...extra, kind: 'header', pid: process.pid, scenario } satisfies TranscriptFileHeader);
  }

  get enabled(): boolean {
    return this.fd !== undefined && !this.paused;
  }

  write(entry: Entry): void {
    if (this.enabled) this.writeLine(entry);
  }

  private writeLine(entry: object): void {
    if (this.fd === undefined) return;
    try {
      writeSync(this.fd, `${JSON.stringify(entry)}\n`);
    } catch {
      // The kit removed the directory (cleanup ran early): the run goes on without a transcript.
      this.fd = undefined;
    }
  }
}
