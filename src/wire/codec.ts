// decode / encode / validate for single wire lines, following Fen's validation order; none of them ever throws.
import { MAX_LINE_BYTES, MAX_SEQ, WIRE_VERSION } from './constants.js';
import { CONTROL_SCHEMAS, EVENT_SCHEMAS } from './schema.js';
import type { TypeSpec } from './schema.js';
import type {
  DecodeResult,
  Direction,
  EncodeResult,
  JsonObject,
  JsonValue,
  MessageOf,
  Rejection,
  RejectionCode,
} from './types.js';

/** A UTF-16 unit is at most 3 UTF-8 bytes, so shorter strings cannot reach the limit: skip counting them. */
const SAFE_UNITS = Math.floor((MAX_LINE_BYTES - 1) / 3);

/** Whether a line (without its newline) is `MAX_LINE_BYTES` UTF-8 bytes or more. */
export function isTooLarge(line: string): boolean {
  if (line.length <= SAFE_UNITS) return false;
  if (line.length >= MAX_LINE_BYTES) return true;
  return Buffer.byteLength(line, 'utf8') >= MAX_LINE_BYTES;
}

/** Whether a value is a legal `seq`: an integer in 1..2^53-1. */
export function isSeq(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_SEQ;
}

type Failure = { ok: false; rejection: Rejection };

/** Builds a rejection; `source` (a plain object) supplies seq/type/run when they are usable. */
function reject(code: RejectionCode, reason: string, source?: Record<string, unknown>, errors?: string[]): Failure {
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

/** A short, never-throwing description of a parsed `v` for the version-mismatch reason. */
function describeVersion(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}

/** The message of anything thrown, without trusting it (a hostile value may throw again when read). */
function describeThrown(thrown: unknown): string {
  try {
    if (thrown instanceof Error) return String(thrown.message);
    if (typeof thrown === 'string') return thrown;
  } catch {
    // fall through: the thrown value itself is hostile
  }
  return 'a non-Error value was thrown';
}

function schemasOf(direction: unknown): ReadonlyMap<string, TypeSpec> | undefined {
  if (direction === 'event') return EVENT_SCHEMAS;
  if (direction === 'control') return CONTROL_SCHEMAS;
  return undefined;
}

/**
 * Steps 5-9 of the validation order on a parsed JSON object: `v` present, `v` = 1 (before the envelope,
 * so `{"v":2}` alone is a version mismatch), envelope, known type, payload. Returns the first failure,
 * or undefined for a valid message. decode reaches it only when the compiled fast path said no.
 */
function check(message: Record<string, unknown>, direction: Direction): Failure | undefined {
  const schemas = schemasOf(direction);
  if (schemas === undefined) {
    return reject('invalid', `unknown direction: ${typeof direction === 'string' ? direction : typeof direction}`);
  }
  const v = message['v'];
  if (v === undefined || v === null) return reject('invalid', 'v is required', message, ['v is required']);
  if (v !== WIRE_VERSION) {
    return reject(
      'version-mismatch',
      `wire version ${describeVersion(v)} is not supported; expected ${WIRE_VERSION}`,
      message,
    );
  }
  const seq = message['seq'];
  const type = message['type'];
  const run = message['run'];
  if (!isSeq(seq) || typeof type !== 'string' || typeof run !== 'string') {
    const errors: string[] = [];
    if (!isSeq(seq)) errors.push(seq === undefined ? 'seq is required' : 'seq must be an integer from 1 to 2^53-1');
    if (typeof type !== 'string') errors.push(type === undefined ? 'type is required' : 'type must be a string');
    if (typeof run !== 'string') errors.push(run === undefined ? 'run is required' : 'run must be a string');
    return reject('invalid', `invalid envelope: ${errors.join('; ')}`, message, errors);
  }
  const spec = schemas.get(type);
  if (spec === undefined) {
    const other = direction === 'event' ? CONTROL_SCHEMAS : EVENT_SCHEMAS;
    const reason = other.has(type)
      ? `${type} is not ${direction === 'control' ? 'a control' : 'an event'} message`
      : `unknown ${direction} type: ${type}`;
    return reject('unknown-type', reason, message);
  }
  const errors = spec.errors(message);
  if (errors !== undefined) return reject('invalid-payload', `invalid ${type}: ${errors.join('; ')}`, message, errors);
  return undefined;
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Validates an already-parsed value as a message of `direction` (steps 5-9 of the validation order;
 * a value that is not an object is `invalid`, as in Fen's validate). Never throws, even on hostile
 * objects: a value that cannot be read is `invalid`.
 */
export function validate<D extends Direction>(value: unknown, direction: D): DecodeResult<MessageOf<D>> {
  try {
    if (!isPlainRecord(value)) return reject('invalid', 'message must be a JSON object');
    return check(value, direction) ?? { ok: true, message: value as MessageOf<D> };
  } catch (thrown) {
    return reject('invalid', `message cannot be read: ${describeThrown(thrown)}`);
  }
}

/** Decodes one line (without its newline) travelling in `direction`. Never throws. */
export function decode<D extends Direction>(line: string, direction: D): DecodeResult<MessageOf<D>> {
  if (typeof line !== 'string') return reject('malformed', 'line must be a string');
  if (isTooLarge(line)) return reject('too-large', `line is ${MAX_LINE_BYTES} bytes or more`);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (thrown) {
    return reject('malformed', `not JSON: ${describeThrown(thrown)}`);
  }
  if (!isPlainRecord(value)) return reject('malformed', 'decoded JSON is not an object');
  const type = value['type'];
  if (typeof type === 'string') {
    const spec = schemasOf(direction)?.get(type);
    if (spec !== undefined && spec.accepts(value)) return { ok: true, message: value as MessageOf<D> };
  }
  return check(value, direction) ?? { ok: true, message: value as MessageOf<D> };
}

/** Why a value cannot travel as JSON; carries the path of the offending field. */
class Unencodable extends Error {}

/**
 * Copies a value into plain JSON data, reading every property exactly once, so that what is validated
 * is exactly what gets written. Rejects what JSON cannot carry faithfully instead of letting
 * JSON.stringify silently change it: BigInt, functions, symbols, NaN/Infinity, `undefined` in arrays,
 * cycles, and objects that are not plain (Date, Map, class instances). An object property set to
 * `undefined` counts as omitted.
 */
function toJson(value: unknown, path: string, ancestors: Set<object>): JsonValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new Unencodable(`${path} is ${value}, which JSON cannot carry`);
      return value === 0 ? 0 : value;
    case 'object':
      break;
    default:
      throw new Unencodable(`${path} is a ${typeof value}, which JSON cannot carry`);
  }
  if (value === null) return null;
  if (ancestors.has(value)) throw new Unencodable(`${path} refers back to itself (a cycle)`);
  ancestors.add(value);
  let copy: JsonValue;
  if (Array.isArray(value)) {
    const length = value.length;
    const items: JsonValue[] = new Array<JsonValue>(length);
    for (let i = 0; i < length; i++) {
      const item: unknown = value[i];
      if (item === undefined) throw new Unencodable(`${path}[${i}] is undefined, which JSON cannot carry`);
      items[i] = toJson(item, `${path}[${i}]`, ancestors);
    }
    copy = items;
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== null && Object.getPrototypeOf(proto) !== null) {
      throw new Unencodable(`${path} is not a plain object`);
    }
    const fields: JsonObject = {};
    for (const key of Object.keys(value)) {
      const field: unknown = (value as Record<string, unknown>)[key];
      if (field === undefined) continue;
      // defineProperty, because a plain assignment to "__proto__" would set the prototype instead.
      Object.defineProperty(fields, key, {
        value: toJson(field, `${path}.${key}`, ancestors),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    copy = fields;
  }
  ancestors.delete(value);
  return copy;
}

/** Says why copying a message failed, without trusting what was thrown. */
function whyUnencodable(thrown: unknown): string {
  try {
    if (thrown instanceof Unencodable) return thrown.message;
    if (thrown instanceof RangeError) return 'the message is nested too deeply';
  } catch {
    // a hostile thrown value: describe it generically below
  }
  return `reading the message threw: ${describeThrown(thrown)}`;
}

/** Snapshots `value` as plain JSON data, or says why it cannot be encoded. Never throws. */
export function snapshot(value: unknown): { ok: true; value: JsonValue } | Failure {
  try {
    return { ok: true, value: toJson(value, 'message', new Set()) };
  } catch (thrown) {
    return reject('invalid', `cannot encode: ${whyUnencodable(thrown)}`);
  }
}

/** Validates and serializes a plain JSON snapshot; the line is checked for size after encoding. */
export function encodeSnapshot(value: JsonValue, direction: Direction): EncodeResult {
  if (!isPlainRecord(value)) return reject('invalid', 'message must be a JSON object');
  const failure = check(value, direction);
  if (failure !== undefined) return failure;
  let line: string;
  try {
    line = JSON.stringify(value);
  } catch {
    return reject('invalid', 'cannot encode: the message is nested too deeply', value);
  }
  if (isTooLarge(line)) return reject('too-large', `encoded line is ${MAX_LINE_BYTES} bytes or more`, value);
  return { ok: true, line };
}

/**
 * Validates `message` and encodes it as one line (without its newline). Never throws: a value JSON
 * cannot carry faithfully (BigInt, NaN, a cycle, a Date, a throwing getter) is `invalid`, a valid
 * message whose line is 65536 UTF-8 bytes or more `too-large`.
 */
export function encode(message: unknown, direction: Direction): EncodeResult {
  const copied = snapshot(message);
  if (!copied.ok) return copied;
  return encodeSnapshot(copied.value, direction);
}
