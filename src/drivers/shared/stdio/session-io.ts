// What a pure session on the stdio channel needs (its writes, its timers) and reports beyond the facts every session shares.
import type { OutcomeErrorCode } from '../../../protocol/outcome.js';
import type { RateLimitFields } from '../../../protocol/index.js';
import type { JsonObject } from '../../../wire/index.js';
import type { FrameRejection } from '../json-line.js';
import type { SetTimer } from '../pending-requests.js';
import type { SessionSink } from '../session.js';

/** What the session writes with. */
export interface StdioSessionIo {
  /** Writes one message as one JSON line on the child's stdin. */
  send(message: JsonObject): { ok: true } | { ok: false; reason: string };
  /**
   * Ends the child's stdin: the child then exits (Codex's app-server at once, Claude Code once it wrote its
   * session file, an ACP agent as its connection closes).
   */
  endInput(): void;
  setTimer: SetTimer;
}

/** The facts a stdio session (codex, claude-code, acp) reports beyond the shared ones. */
export interface StdioSessionFacts extends SessionSink {
  /** A line or message that was not (fully) accepted; the run goes on. */
  rejected(rejection: FrameRejection): void;
  /** Rate-limit news, as its line is read (its `rate-limit` event follows through `event`, with the same seq). */
  rateLimit(fields: RateLimitFields): void;
  /** A failure the run cannot survive (a refused handshake, another protocol version, no thread or session). */
  fatal(code: OutcomeErrorCode, error: string): void;
}
