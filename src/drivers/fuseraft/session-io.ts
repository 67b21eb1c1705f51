// What a fuseraft session needs from the process and reports beyond the shared facts: its I/O, its rejections, its end.
import type { JsonObject } from '../../wire/index.js';
import { withExtras } from '../shared/event-drafts.js';
import { stringField } from '../shared/json-kinds.js';
import type { SessionSink } from '../shared/session.js';
import type { FrameRejection } from '../shared/json-line.js';
import { FUSERAFT_PROTOCOL_VERSION } from './frames.js';
import type { Frame } from './frames.js';

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

/**
 * Checks a `ready` frame of a repl or bridge session (`seen`: one came before): a second one is reported
 * out of order, another protocol version is reported fatal (the session must stop). True when it is the
 * session's ready: the caller moves its state, then {@link announceReady}.
 */
export function readyAccepted(frame: Frame, seen: boolean, facts: SessionFacts): 'ready' | 'repeated' | 'version-mismatch' {
  if (seen) {
    facts.rejected({ code: 'out-of-order', reason: 'a second ready frame', lineType: 'ready' }, false);
    return 'repeated';
  }
  const version = frame['protocolVersion'];
  if (version === FUSERAFT_PROTOCOL_VERSION) return 'ready';
  const reason = `fuseraft speaks live-session protocol version ${JSON.stringify(version ?? null)}; this driver speaks ${FUSERAFT_PROTOCOL_VERSION}`;
  facts.rejected({ code: 'version-mismatch', reason, lineType: 'ready' }, true);
  return 'version-mismatch';
}

/** Reports an accepted `ready`: its session id, ready, and its event. */
export function announceReady(frame: Frame, facts: SessionFacts): void {
  const sessionId = stringField(frame, 'sessionId');
  if (sessionId !== undefined) facts.session(sessionId);
  facts.ready();
  facts.event(withExtras({ type: 'ready' }, frame, []));
}
