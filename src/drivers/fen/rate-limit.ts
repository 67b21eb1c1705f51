// Fen's provider refusals as rate-limit news: the `error` event a Fen child writes once its own retries of a 429 or 529 are spent.
import type { RateLimitFields } from '../../protocol/index.js';

/**
 * Fen's agent loop emits `{type: error, error: "HTTP <status>: <body>"}` when its provider's call failed with
 * that status after its retries (`provider-retry` events, which the wire does not carry); the rpc presenter
 * forwards it as the display event `error`.
 */
const PROVIDER_REFUSAL = /^HTTP (429|529)\b/;
/** `message` is at most this many characters (RateLimitFields). */
const MESSAGE_CHARS = 300;

/** The rate-limit news an `error` event's text carries, or undefined for any other error. */
export function rateLimitOfError(error: unknown): RateLimitFields | undefined {
  if (typeof error !== 'string') return undefined;
  const refusal = PROVIDER_REFUSAL.exec(error);
  if (refusal === null) return undefined;
  // Cut by characters, never inside a surrogate pair.
  const message = error.length <= MESSAGE_CHARS ? error : Array.from(error.slice(0, MESSAGE_CHARS * 2)).slice(0, MESSAGE_CHARS).join('');
  return { status: 'limited', httpStatus: Number(refusal[1]), agentRetries: false, nativeType: 'error', message };
}
