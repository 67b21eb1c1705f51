// Sequence numbers: a sender that stamps increasing seq values and a receiver that enforces them.
import { decode, encodeSnapshot, snapshot } from './codec.js';
import { WIRE_VERSION } from './constants.js';
import type { DecodeResult, Direction, EncodeResult, JsonObject, MessageOf, PayloadOf, Rejection } from './types.js';

export interface Sender<D extends Direction> {
  /**
   * Stamps the next seq onto a message of `type` and encodes it. The counter advances only when a
   * line was produced; envelope keys win over payload keys of the same name.
   */
  next<T extends MessageOf<D>['type']>(
    type: T,
    payload?: PayloadOf<Extract<MessageOf<D>, { type: T }>> | Record<string, unknown>,
  ): EncodeResult;
  /** The seq of the last line produced, 0 before the first. */
  readonly lastSeq: number;
}

const ENVELOPE_KEYS: ReadonlySet<string> = new Set(['v', 'seq', 'type', 'run']);

/**
 * Creates the seq-stamping side of one direction for `run`. The first line gets `startAfter + 1`.
 * `next` never throws: a payload that cannot be read or encoded is rejected (`invalid`) and the seq is
 * not used up; once the counter reaches 2^53-1, every further line is rejected as `invalid`.
 */
export function createSender<D extends Direction>(direction: D, run: string, startAfter = 0): Sender<D> {
  let lastSeq = startAfter;
  return {
    next(type, payload) {
      const copied = snapshot(payload ?? {});
      if (!copied.ok) return copied;
      const fields = copied.value;
      if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
        return { ok: false, rejection: { code: 'invalid', reason: 'payload must be an object', fatal: false } };
      }
      const message: JsonObject = { v: WIRE_VERSION, seq: lastSeq + 1, type, run };
      for (const key of Object.keys(fields)) {
        if (ENVELOPE_KEYS.has(key)) continue;
        const value = fields[key];
        Object.defineProperty(message, key, { value, enumerable: true, writable: true, configurable: true });
      }
      const result = encodeSnapshot(message, direction);
      if (result.ok) lastSeq += 1;
      return result;
    },
    get lastSeq() {
      return lastSeq;
    },
  };
}

export interface Receiver<D extends Direction> {
  /**
   * Decodes a line and enforces increasing seq values. A fatal rejection is returned without consuming
   * its seq; otherwise a seq at or below the last consumed one is `out-of-order` (carrying no seq), and
   * any readable increasing seq is consumed even when the rest of the line is rejected.
   */
  receive(line: string): DecodeResult<MessageOf<D>>;
  /** The last consumed seq, 0 before the first. */
  readonly lastSeq: number;
}

/** A receiver of `direction` lines; `after` is the last seq already consumed (a second reader resuming another's place). */
export function createReceiver<D extends Direction>(direction: D, after = 0): Receiver<D> {
  let lastSeq = after;
  const outOfOrder = (seq: number, source: { type?: unknown; run?: unknown }) => {
    const rejection: Rejection = {
      code: 'out-of-order',
      reason: `seq ${seq} does not follow ${lastSeq}`,
      fatal: false,
    };
    if (typeof source.type === 'string') rejection.type = source.type;
    if (typeof source.run === 'string') rejection.run = source.run;
    return { ok: false as const, rejection };
  };
  return {
    receive(line) {
      const result = decode(line, direction);
      if (result.ok) {
        const { seq } = result.message;
        if (seq <= lastSeq) return outOfOrder(seq, result.message);
        lastSeq = seq;
        return result;
      }
      const { rejection } = result;
      if (rejection.fatal || rejection.seq === undefined) return result;
      if (rejection.seq <= lastSeq) return outOfOrder(rejection.seq, rejection);
      lastSeq = rejection.seq;
      return result;
    },
    get lastSeq() {
      return lastSeq;
    },
  };
}

/** The control-ack payload a child sends for a rejected control line (ref only when the line had a usable seq). */
export function rejectionAck(rejection: Rejection): { status: 'rejected'; reason: string; ref?: number } {
  const ack: { status: 'rejected'; reason: string; ref?: number } = { status: 'rejected', reason: rejection.reason };
  if (rejection.seq !== undefined) ack.ref = rejection.seq;
  return ack;
}
