// What a Claude Code session needs (its writes and timers) and reports beyond the facts every session shares.
import type { OutcomeErrorCode } from '../../protocol/outcome.js';
import type { RateLimitFields } from '../../protocol/index.js';
import type { JsonObject } from '../../wire/index.js';
import type { FrameRejection } from '../shared/json-line.js';
import type { SetTimer } from '../shared/pending-requests.js';
import type { SessionSink } from '../shared/session.js';

/** What the session writes with. */
export interface ClaudeIo {
  /** Writes one message as one JSON line on Claude Code's stdin. */
  send(message: JsonObject): { ok: true } | { ok: false; reason: string };
  /** Ends Claude Code's stdin: it writes its session file, then exits. */
  endInput(): void;
  setTimer: SetTimer;
}

/** The facts a Claude Code session reports beyond the shared ones. */
export interface ClaudeFacts extends SessionSink {
  /** A line or message that was not (fully) accepted; the run goes on. */
  rejected(rejection: FrameRejection): void;
  /** Rate-limit news, as its line is read (its `rate-limit` event follows through `event`). */
  rateLimit(fields: RateLimitFields): void;
  /** A failure the run cannot survive (Claude Code refused the initialize request). */
  fatal(code: OutcomeErrorCode, error: string): void;
}
