// The child side of the transcript: appends one JSON entry per line to a private file in the kit's directory.
import { openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { TranscriptEntry, TranscriptHeader } from '../transcript.js';

export class TranscriptWriter {
  private fd: number | undefined;
  /** While paused (a flood), entries are dropped: a flood is recorded as one note, not one entry per event. */
  paused = false;

  /** `dir` undefined: no transcript, every write is a no-op. */
  constructor(dir: string | undefined, scenario: string, started: number) {
    if (dir === undefined) return;
    // Zero-padded start time first, so the kit can sort one fakeChild's transcripts by name.
    const name = `transcript-${String(started).padStart(15, '0')}-${process.pid}.jsonl`;
    this.fd = openSync(join(dir, name), 'wx', 0o600);
    this.writeLine({ kind: 'header', pid: process.pid, scenario } satisfies TranscriptHeader);
  }

  get enabled(): boolean {
    return this.fd !== undefined && !this.paused;
  }

  write(entry: TranscriptEntry): void {
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
