// What a Codex session needs (its writes) and reports beyond the facts every session shares.
import type { OutcomeErrorCode } from '../../protocol/outcome.js';
import type { RateLimitFields } from '../../protocol/index.js';
import type { JsonObject } from '../../wire/index.js';
import type { FrameRejection } from '../shared/json-line.js';
import type { SetTimer } from '../shared/pending-requests.js';
import type { SessionSink } from '../shared/session.js';

/** What the session writes with. */
export interface CodexIo {
  /** Writes one JSON-RPC message as one line on Codex's stdin. */
  send(message: JsonObject): { ok: true } | { ok: false; reason: string };
  /** Ends Codex's stdin: the app-server then exits. */
  endInput(): void;
  setTimer: SetTimer;
}

/** The facts a Codex session reports beyond the shared ones. */
export interface CodexFacts extends SessionSink {
  /** A line or message that was not (fully) accepted; the run goes on. */
  rejected(rejection: FrameRejection): void;
  /** Rate-limit news, as its frame is read (its `rate-limit` event follows through `event`). */
  rateLimit(fields: RateLimitFields): void;
  /** A failure the run cannot survive (no thread). */
  fatal(code: OutcomeErrorCode, error: string): void;
}
