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
