// What every driver with approvals shares: a request's fields copied for the caller, and whether an answer approves.
import type { ApprovalRequest } from '../../protocol/requests.js';
import type { JsonObject } from '../../wire/index.js';

/** The frame's fields without `type`, copied so the caller cannot change what the driver keeps. */
export function fieldsOf(frame: JsonObject): JsonObject {
  const fields: JsonObject = {};
  for (const key of Object.keys(frame)) {
    if (key === 'type') continue;
    Object.defineProperty(fields, key, { value: frame[key], enumerable: true, writable: true, configurable: true });
  }
  return structuredClone(fields);
}

/** Whether an `approve` answer approves `request` (see {@link ApprovalAnswer}). */
export function approves(request: ApprovalRequest, answer: unknown): boolean {
  if (answer === 'approve-unknown-kind') return true;
  return answer === true && request.known;
}

/** Who decided a response: the caller's callback, or one of the driver's safe defaults. */
export type DecidedBy =
  /** The callback's answer. */
  | 'callback'
  /** No callback was given: deny (approvals) or skip (questions). */
  | 'no-callback'
  /** The callback answered `true` for an unknown kind: denied (only 'approve-unknown-kind' approves one). */
  | 'unknown-kind'
  /** The callback threw, rejected, or returned something that is not an answer. */
  | 'callback-error'
  /** The line was unusable (no kind / no question): denied or skipped without asking. */
  | 'invalid-request'
  /** The run is being cancelled or ended: every waiting request is denied or skipped at once. */
  | 'shutdown';
