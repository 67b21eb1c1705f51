// One JSON line (or one daemon message) to a JSON object, a tagged frame, or a typed rejection: the one decoder of every driver.
import type { RejectedCode } from '../../protocol/index.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { isObject } from './json-kinds.js';

/** A frame of any JSON protocol tagged by a string `type`; every other field as sent (untrusted). */
export interface TypedFrame {
  type: string;
  [field: string]: JsonValue;
}

/** Why a line or a message was not (fully) accepted: the fields of the `rejected` event it becomes. */
export interface FrameRejection {
  /** `malformed`: not JSON; `invalid`: JSON of the wrong shape; `invalid-payload`: a field the driver reads has the wrong type; `too-large`: over the bound. */
  code: RejectedCode;
  /** Never repeats the line itself: it is the peer's (untrusted, possibly large, possibly secret). */
  reason: string;
  /** The frame's `type` (or a JSON-RPC method) when it could be read; for an overlong line, sniffed from its first bytes. */
  lineType?: string;
  /** One entry per field that failed its check. */
  errors?: string[];
}

/** A decoded line: its value, or why it is none. */
export type Decoded<T> = { value: T; rejection?: undefined } | { value?: undefined; rejection: FrameRejection };

/**
 * Decodes `text` (one line without its newline, or one message) into a JSON object. `where` names it in
 * the reasons (`stdout line 3`, `message 3 from the daemon`). Never throws. A trailing `\r` (a Windows
 * build's line end) is not part of the JSON.
 */
export function decodeJsonObject(text: string, where: string): Decoded<JsonObject> {
  const body = text.endsWith('\r') ? text.slice(0, -1) : text;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    const what = body.trim() === '' ? 'empty' : `not JSON (${body.length} characters)`;
    return { rejection: { code: 'malformed', reason: `${where} is ${what}` } };
  }
  if (!isObject(value)) return { rejection: { code: 'invalid', reason: `${where} is JSON but not an object` } };
  return { value };
}

/** {@link decodeJsonObject} for a protocol whose every frame has a string `type`. */
export function decodeTypedFrame(text: string, where: string): Decoded<TypedFrame> {
  const decoded = decodeJsonObject(text, where);
  if (decoded.rejection !== undefined) return decoded;
  if (typeof decoded.value['type'] !== 'string') {
    return { rejection: { code: 'invalid', reason: `${where} is JSON but not an object with a string type` } };
  }
  return { value: decoded.value as TypedFrame };
}

/**
 * The rejection of a line longer than the bound (`limit` bytes), which is skipped (`skipped`: false for a
 * message whose size ends its connection). Its `type` is sniffed from its first bytes when they start with one.
 */
export function overlongRejection(head: string, where: string, limit: number, skipped = true): FrameRejection {
  const rejection: FrameRejection = {
    code: 'too-large',
    reason: skipped ? `${where} is longer than the ${limit}-byte line bound (maxFrameBytes); skipped` : `${where} is larger than the ${limit}-byte bound (maxFrameBytes)`,
  };
  const type = /^\s*\{\s*"type"\s*:\s*"([A-Za-z0-9_]{1,64})"/.exec(head)?.[1];
  if (type !== undefined) rejection.lineType = type;
  return rejection;
}
