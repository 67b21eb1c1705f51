// Decodes one message of a daemon connection (a WebSocket text message or one JSON line) into a typed frame or a typed rejection.
import type { JsonObject, JsonValue } from '../../../wire/index.js';

/** A decoded message: a JSON object with a string `type` (every daemon protocol tags its messages so); other fields untrusted. */
export interface DaemonFrame {
  type: string;
  [field: string]: JsonValue;
}

/** Why a message did not become a frame. The codes are the wire codec's, so callers handle one set. */
export interface FrameRejection {
  /** `malformed`: not JSON (or not UTF-8 text); `invalid`: JSON but not an object with a string `type`; `too-large`: over `maxFrameBytes`. */
  code: 'malformed' | 'invalid' | 'too-large';
  reason: string;
  /** The message's `type` when it could be read (for an overlong one: sniffed from its first bytes). */
  lineType?: string;
}

export type Decoded = { frame: DaemonFrame; rejection?: undefined } | { frame?: undefined; rejection: FrameRejection };

/**
 * Decodes `text`, the `number`th message of the connection. Never throws. The message text itself is
 * never repeated in a rejection: it is the daemon's (untrusted, possibly large, possibly secret).
 */
export function decodeFrame(text: string, number: number): Decoded {
  const body = text.endsWith('\r') ? text.slice(0, -1) : text;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    const what = body.trim() === '' ? 'empty' : `not JSON (${body.length} characters)`;
    return { rejection: { code: 'malformed', reason: `message ${number} from the daemon is ${what}` } };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || typeof (value as JsonObject)['type'] !== 'string') {
    return { rejection: { code: 'invalid', reason: `message ${number} from the daemon is JSON but not an object with a string type` } };
  }
  return { frame: value as DaemonFrame };
}

/** The rejection of a message longer than the bound; its type is sniffed from its first bytes when they show one. */
export function overlongFrame(prefix: string, number: number, limit: number): FrameRejection {
  const rejection: FrameRejection = {
    code: 'too-large',
    reason: `message ${number} from the daemon is larger than the ${limit}-byte bound (maxFrameBytes)`,
  };
  const type = /^\s*\{\s*"type"\s*:\s*"([A-Za-z0-9_]{1,64})"/.exec(prefix)?.[1];
  if (type !== undefined) rejection.lineType = type;
  return rejection;
}
