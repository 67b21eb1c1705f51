// What a fuseraft session needs from the process and reports beyond the shared facts: its I/O, its rejections, its end.
import type { JsonObject } from '../../wire/index.js';
import type { SessionSink } from '../shared/session.js';
import type { FrameRejection } from '../shared/json-line.js';

/** The process side of a session (the driver adapter implements it; tests record it). */
export interface FuseraftIo {
  /** Writes one JSON line to fuseraft's stdin; false when stdin is closed or broken. */
  write(line: JsonObject): boolean;
  /** Ends fuseraft's stdin (EOF); idempotent. */
  endInput(): void;
  /** Sends SIGINT to the fuseraft process: fuseraft's own "cancel the running turn" signal. */
  interrupt(): void;
  /** A timer (injectable for tests). */
  setTimer(fn: () => void, ms: number): { clear(): void };
}

/** The facts a fuseraft session reports: the shared ones, its line rejections, and that fuseraft is about to exit. */
export interface SessionFacts extends SessionSink {
  /** A line that was not (fully) accepted. `fatal` ones end the run `failed`. */
  rejected(rejection: FrameRejection, fatal: boolean): void;
  /** fuseraft said it is about to exit (`session_end`, `result`): `provisionalEnd()` says how the run ended. */
  ending(): void;
}

/** How the process ended. */
export interface ProcessEnd {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

/** Describes a process end for error texts. */
export function describeEnd(end: ProcessEnd): string {
  return end.signal !== null ? `was killed by ${end.signal}` : `exited with code ${end.exitCode}`;
}

