// The fake mew daemon's message parts: ULID-shaped ids, and the provider events that stream a part, recorded into the session's history.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import type { FakeMewMessage } from './wire-tags.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
let idCount = 0;

/** A fresh id shaped like mew's (a ULID: 26 Crockford base32 characters, the time first). */
export function fakeUlid(): string {
  let time = Date.now();
  let head = '';
  for (let i = 0; i < 10; i++, time = Math.floor(time / 32)) head = CROCKFORD[time % 32] + head;
  let count = ++idCount;
  let tail = '';
  for (let i = 0; i < 16; i++, count = Math.floor(count / 32)) tail = CROCKFORD[count % 32] + tail;
  return head + tail;
}

/** The part types mew's providers stream (`mew_message::Part`, tagged `type`, snake_case). */
export type PartType = 'text' | 'reasoning' | 'tool_call';

/**
 * One assistant message as mew's providers stream it: each part is announced by `part_start` (its
 * type and ids, its text empty), grown by `part_delta {part_id, field, delta}` and closed by
 * `part_end`. Text and reasoning deltas both have the field `text`: only the part's type tells them
 * apart. Each part is also recorded into the assistant message kept in the session's history, so a
 * client that attaches later gets it in `session_history`, as mew's `agent.messages` holds it.
 */
export class AssistantMessage {
  readonly #send: (message: FakeMewMessage) => void;
  readonly #record: JsonObject;
  readonly #sessionId: string;

  constructor(send: (message: FakeMewMessage) => void, sessionId: string, history: JsonValue[]) {
    this.#send = send;
    this.#sessionId = sessionId;
    this.#record = { id: fakeUlid(), session_id: sessionId, role: 'assistant', parts: [], time: { created: Date.now() } };
    history.push(this.#record);
  }

  /** Sends `part_start` for a new part of `type` (extra fields: a tool call's name, call id and state); returns its id. */
  start(type: PartType, fields: JsonObject = {}): string {
    const id = fakeUlid();
    const text: JsonObject = type === 'tool_call' ? {} : { text: '' };
    const part: JsonObject = { type, id, message_id: this.#record['id'] as string, session_id: this.#sessionId, ...text, ...fields };
    this.#send({ type: 'provider', event: { type: 'part_start', part } });
    (this.#record['parts'] as JsonObject[]).push(structuredClone(part));
    return id;
  }

  /** Sends one `part_delta` of the part (`field`: `text` for text and reasoning, `arguments` for a tool call's input). */
  delta(partId: string, delta: string, field = 'text'): void {
    this.#send({ type: 'provider', event: { type: 'part_delta', part_id: partId, field, delta } });
    const part = (this.#record['parts'] as JsonObject[]).find((entry) => entry['id'] === partId);
    if (part !== undefined && typeof part[field] === 'string') part[field] = `${part[field] as string}${delta}`;
  }

  /** Sends `part_end` of the part. */
  end(partId: string): void {
    this.#send({ type: 'provider', event: { type: 'part_end', part_id: partId } });
  }
}

/** A user message as mew keeps it in a session's history (`mew_message::Message`: one text part). */
export function userMessage(sessionId: string, text: string): JsonObject {
  const id = fakeUlid();
  return { id, session_id: sessionId, role: 'user', parts: [{ type: 'text', id: fakeUlid(), message_id: id, session_id: sessionId, text }], time: { created: Date.now() } };
}
