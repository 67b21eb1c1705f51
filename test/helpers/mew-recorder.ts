// A recording MewIo + MewFacts pair for the mew session unit tests, with hand-fired timers that know their delays.
import type { EventDraft } from '../../src/drivers/shared/event-drafts.js';
import type { FrameRejection } from '../../src/drivers/shared/json-line.js';
import type { MewMessage } from '../../src/drivers/mew/messages.js';
import { MewSession } from '../../src/drivers/mew/mew-session.js';
import type { MewFacts, MewIo, MewSessionOptions } from '../../src/drivers/mew/session-types.js';

export interface MewRecorder {
  io: MewIo;
  facts: MewFacts;
  /** Messages sent, in order. */
  sent: MewMessage[];
  /** Every fact and connection call, in order, as [name, ...args]. */
  log: unknown[][];
  events: EventDraft[];
  rejections: FrameRejection[];
  /** Whether sends succeed (the connection is up). */
  connected: boolean;
  sentOf(type: string): MewMessage[];
  facts_(name: string): unknown[][];
}

export function mewRecorder(): MewRecorder {
  const sent: MewMessage[] = [];
  const log: unknown[][] = [];
  const events: EventDraft[] = [];
  const rejections: FrameRejection[] = [];
  const rec: MewRecorder = {
    sent,
    log,
    events,
    rejections,
    connected: true,
    io: {
      send(message) {
        if (!rec.connected) return false;
        sent.push(JSON.parse(JSON.stringify(message)) as MewMessage);
        return true;
      },
      leave: () => void log.push(['leave']),
      attached: () => void log.push(['attached']),
    },
    facts: {
      ready: () => void log.push(['ready']),
      session: () => undefined,
      event: (draft) => {
        events.push(draft);
        log.push(['event', draft.type]);
      },
      rejected: (rejection) => {
        rejections.push(rejection);
        log.push(['rejected', rejection.code]);
      },
      ack: (ref, status, reason) => void log.push(['ack', ref, status, reason]),
      delivery: (ref, delivery) => void log.push(['delivery', ref, delivery]),
      turnStarted: (turn) => void log.push(['turnStarted', turn]),
      turnCompleted: (turn, stopReason, usage) => void log.push(['turnCompleted', turn, stopReason, usage]),
      result: (report) => void log.push(['result', report]),
      exit: (end) => void log.push(['exit', end]),
      fatal: (code, error) => void log.push(['fatal', code, error]),
      blocked: (id, what) => void log.push(['blocked', id, what]),
      unblocked: (id) => void log.push(['unblocked', id]),
    },
    sentOf: (type) => sent.filter((message) => message.type === type),
    facts_: (name) => log.filter((entry) => entry[0] === name),
  };
  return rec;
}

export const PONG = { type: 'pong', version: '0.9.0', protocol_version: 3 };
export const READY = { type: 'session_ready', session_id: 'sess_1', model: 'fake-model', provider: 'fake' };

/** A session over a recorder, with `feed(...)` (objects are JSON-encoded) and `handshake()` (open, pong, ready). */
export function mewSession(options: Partial<MewSessionOptions> = {}) {
  const rec = mewRecorder();
  const session = new MewSession(rec.io, rec.facts, {
    protocol: 'mew',
    requestIdPrefix: 'r',
    maxAnswerChars: 1_000_000,
    ...options,
  });
  /** Feeds decoded messages, as the transport hands them over (a copy: the session may not keep the caller's object). */
  const feed = (...messages: object[]) => {
    for (const message of messages) session.onFrame(JSON.parse(JSON.stringify(message)));
  };
  const handshake = () => {
    session.opened();
    feed(PONG, READY);
  };
  /** Answers the last submit_prompt with a receipt. */
  const receipt = (status: string, extra: object = {}) => {
    const last = rec.sentOf('submit_prompt').at(-1)!;
    feed({ type: 'prompt_receipt', session_id: 'sess_1', request_id: last['request_id'], status, ...extra });
  };
  return { rec, session, feed, handshake, receipt };
}

/** `part_start` of a part as mew's providers announce it (`mew_message::Part`: its type, ids, and empty text). */
export const partStart = (partType: string, id: string) => ({
  type: 'provider',
  event: { type: 'part_start', part: { type: partType, id, message_id: 'msg_1', session_id: 'sess_1', ...(partType === 'tool_call' ? {} : { text: '' }) } },
});
/** The text part most tests stream their answer in (`p1`). */
export const TEXT_START = partStart('text', 'p1');
/** A `part_delta` (the field is `text` for text and reasoning parts alike). */
export const delta = (text: string, partId = 'p1', field = 'text') => ({ type: 'provider', event: { type: 'part_delta', part_id: partId, field, delta: text } });
export const messageEnd = (usage: object, cost?: number, finish = 'stop') => ({
  type: 'provider',
  event: { type: 'message_end', finish, usage, ...(cost === undefined ? {} : { cost }) },
});
export const IDLE = { type: 'session_activity_changed', session_id: 'sess_1', idle: true };
export const TURN_COMPLETE = { type: 'session_alert', session_id: 'sess_1', alert: 'turn_complete' };
export const TURN_FAILED = { type: 'session_alert', session_id: 'sess_1', alert: 'turn_failed' };
