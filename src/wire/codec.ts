// decode / encode / validate for single wire lines, following Fen's validation order; none of them ever throws.
import { MAX_LINE_BYTES, MAX_SEQ, WIRE_VERSION } from './constants.js';
import { payloadErrors, SCHEMAS } from './schema.js';
import type {
  DecodeResult,
  Direction,
  EncodeResult,
  MessageOf,
  Rejection,
  RejectionCode,
} from './types.js';

const OTHER_DIRECTION: Record<Direction, Direction> = { event: 'control', control: 'event' };

/** A UTF-16 unit is at most 3 UTF-8 bytes, so shorter strings cannot reach the limit: skip counting them. */
const SAFE_UNITS = Math.floor((MAX_LINE_BYTES - 1) / 3);

/** UTF-8 byte length of a string, counted only when it might matter. */
export function isTooLarge(line: string): boolean {
  if (line.length <= SAFE_UNITS) return false;
  if (line.length >= MAX_LINE_BYTES) return true;
  return Buffer.byteLength(line, 'utf8') >= MAX_LINE_BYTES;
}

/** Whether a value is a legal `seq`: an integer in 1..2^53-1. */
export function isSeq(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_SEQ;
}

function reject(code: RejectionCode, reason: string, source?: Record<string, unknown>, errors?: string[]): {
  ok: false;
  rejection: Rejection;
} {
  const rejection: Rejection = { code, reason, fatal: code === 'version-mismatch' };
  if (source !== undefined) {
    const { seq, type, run } = source;
    if (isSeq(seq)) rejection.seq = seq;
    if (typeof type === 'string') rejection.type = type;
    if (typeof run === 'string') rejection.run = run;
  }
  if (errors !== undefined) rejection.errors = errors;
  return { ok: false, rejection };
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Validates a parsed value as a message of `direction` (steps 4-9 of the validation order): object,
 * `v` present, `v` = 1 (checked before the envelope), envelope, known type, payload.
 */
export function validate<D extends Direction>(value: unknown, direction: D): DecodeResult<MessageOf<D>> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return reject('malformed', 'a wire line must be a JSON object');
  }
  const message = value as Record<string, unknown>;
  const v = message['v'];
  if (v === undefined || v === null) return reject('invalid', 'v is required', message, ['v is required']);
  if (v !== WIRE_VERSION) {
    return reject('version-mismatch', `unsupported protocol version ${describe(v)} (expected ${WIRE_VERSION})`, message);
  }
  const { seq, type, run } = message;
  if (!isSeq(seq) || typeof type !== 'string' || typeof run !== 'string') {
    const errors: string[] = [];
    if (!isSeq(seq)) errors.push(seq === undefined ? 'seq is required' : 'seq must be an integer from 1 to 2^53-1');
    if (typeof type !== 'string') errors.push(type === undefined ? 'type is required' : 'type must be a string');
    if (typeof run !== 'string') errors.push(run === undefined ? 'run is required' : 'run must be a string');
    return reject('invalid', `invalid envelope: ${errors.join('; ')}`, message, errors);
  }
  const spec = SCHEMAS[direction].get(type);
  if (spec === undefined) {
    const reason = SCHEMAS[OTHER_DIRECTION[direction]].has(type)
      ? `${type} is not ${direction === 'control' ? 'a control' : 'an event'} message`
      : `unknown ${direction} type: ${type}`;
    return reject('unknown-type', reason, message);
  }
  const errors = payloadErrors(spec, message);
  if (errors !== undefined) return reject('invalid-payload', `invalid ${type}: ${errors.join('; ')}`, message, errors);
  return { ok: true, message: message as MessageOf<D> };
}

/** Decodes one line (without its newline) travelling in `direction`. Never throws. */
export function decode<D extends Direction>(line: string, direction: D): DecodeResult<MessageOf<D>> {
  if (typeof line !== 'string') return reject('malformed', 'a wire line must be a string');
  if (isTooLarge(line)) return reject('too-large', `line is ${MAX_LINE_BYTES} bytes or more`);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return reject('malformed', `not JSON: ${(error as Error).message}`);
  }
  return validate(value, direction);
}

/**
 * Validates `message` and encodes it as one line (without its newline). Never throws: a value JSON
 * cannot carry (a BigInt, a cycle) is `malformed`, a line of 65536 bytes or more `too-large`.
 */
export function encode(message: unknown, direction: Direction): EncodeResult {
  const checked = validate(message, direction);
  if (!checked.ok) return checked;
  let line: string;
  try {
    line = JSON.stringify(message);
  } catch (error) {
    return reject('malformed', `cannot encode as JSON: ${(error as Error).message}`, message as Record<string, unknown>);
  }
  if (isTooLarge(line)) {
    return reject('too-large', `encoded line is ${MAX_LINE_BYTES} bytes or more`, message as Record<string, unknown>);
  }
  return { ok: true, line };
}
