// The process streams supervise talks through: injectable, so every command's wiring stays testable.
import type { Readable, Writable } from 'node:stream';
import type { OutputStream } from './output.js';

/** The process streams supervise talks through (injectable so the wiring stays testable). */
export interface CliStreams {
  /** Created on first use only: touching process.stdin opens a handle. */
  stdin: () => Readable;
  stdinIsTTY: boolean;
  stdout: OutputStream;
  stderr: Writable & { isTTY?: boolean };
}
