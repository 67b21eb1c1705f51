// What an ACP session needs (its writes, its timers) and reports beyond the facts every session shares.
import type { OutcomeErrorCode } from '../../protocol/outcome.js';
import type { RateLimitFields } from '../../protocol/index.js';
import type { JsonObject } from '../../wire/index.js';
import type { FrameRejection } from '../shared/json-line.js';
import type { SetTimer } from '../shared/pending-requests.js';
import type { SessionSink } from '../shared/session.js';

/** What the session writes with. */
export interface AcpIo {
  /** Writes one JSON-RPC message as one line on the agent's stdin. */
  send(message: JsonObject): { ok: true } | { ok: false; reason: string };
  /** Ends the agent's stdin: an ACP agent's connection closes and it exits. */
  endInput(): void;
  setTimer: SetTimer;
}

/** The facts an ACP session reports beyond the shared ones. */
export interface AcpFacts extends SessionSink {
  /** A line or message that was not (fully) accepted; the run goes on. */
  rejected(rejection: FrameRejection): void;
  /** Rate-limit news, as its message is read (its `rate-limit` event follows through `event`, with the same seq). */
  rateLimit(fields: RateLimitFields): void;
  /** A failure the run cannot survive (another protocol version, no session). */
  fatal(code: OutcomeErrorCode, error: string): void;
}
