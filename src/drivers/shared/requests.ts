// What every driver with approvals shares: a request's fields copied for the caller, and whether an answer approves.
import type { ApprovalRequest, ApproveCallback } from '../../protocol/requests.js';
import type { JsonObject } from '../../wire/index.js';
import type { Accepted } from './request-desk.js';

/** What a driver's approval requests are asked with. */
export interface ApprovalOptions {
  /** The protocol's registered name, which `approve` sees as `request.protocol`. */
  protocol: string;
  approve?: ApproveCallback | undefined;
}

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

/**
 * An `approve` callback's value as the desk's answer (approved or not): `true` approves a known kind only
 * (for an unknown kind it is a denial, `unknown-kind`); a value that is neither a boolean nor
 * `'approve-unknown-kind'` is a denial with the error why.
 */
export function acceptApproval(request: ApprovalRequest, value: unknown): Accepted<boolean> {
  if (value === true && !request.known) return { answer: false, decidedBy: 'unknown-kind' };
  if (typeof value !== 'boolean' && value !== 'approve-unknown-kind') {
    return { answer: false, error: new TypeError('approve returned neither a boolean nor "approve-unknown-kind"') };
  }
  return { answer: approves(request, value) };
}

/** An `answerQuestion` callback's value as the desk's answer: the text, or null to skip; anything else skips with the error why. */
export function acceptAnswer(value: unknown): Accepted<string | null> {
  if (typeof value === 'string' || value === null) return { answer: value };
  return { answer: undefined, error: new TypeError('answerQuestion returned neither a string nor null') };
}

/** The `callbackError` field of a response's report, when the callback failed. */
export function callbackError(error: unknown): { callbackError?: string } {
  return error === undefined ? {} : { callbackError: error instanceof Error ? error.message : String(error) };
}
