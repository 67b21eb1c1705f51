// mew's wire messages: one WebSocket text message to a checked message with a snake_case tag, and back to text.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { fieldRejection, FieldRules, optional, required } from '../shared/field-rules.js';
import type { FieldCheck } from '../shared/field-rules.js';
import { isObject } from '../shared/json-kinds.js';
import type { FrameRejection } from '../shared/json-line.js';


/**
 * How outgoing tags are spelled. mew's daemon tags its serde enums in snake_case (`{"type":"submit_prompt"}`);
 * the example of its protocol page (seed 004) shows PascalCase (`{"type":"SubmitPrompt"}`). subvisor
 * reads both and writes `snake_case` unless told otherwise.
 */
export type MewWireCase = 'snake_case' | 'PascalCase';

/** The lowest wire revision this driver speaks: acknowledged submissions (`submit_prompt`, receipts) came with 3. */
export const MEW_MIN_PROTOCOL_VERSION = 3;

/** A decoded message: its tag in snake_case whatever the spelling on the wire; every other field as sent (untrusted). */
export interface MewMessage {
  type: string;
  [field: string]: JsonValue;
}

/**
 * One message read. `message` is set when the text is a JSON object with a readable tag; fields that
 * failed their check are removed from it and listed in `rejection.errors`. `usable` is false when a
 * field the message's meaning depends on failed: such a message is reported, not mapped.
 */
export type ReadMessage =
  | { message: MewMessage; usable: boolean; rejection?: FrameRejection }
  | { message?: undefined; usable: false; rejection: FrameRejection };

/**
 * The fields the driver reads, per server message. A null optional field counts as absent (serde writes
 * `None` as null). Everything else passes through unchecked, and unknown tags are delivered raw.
 */
const RULES = new FieldRules(
  {
    session_ready: { session_id: required('string'), model: optional('string'), provider: optional('string') },
    session_history: { messages: optional('array') },
    prompt_receipt: { request_id: required('string'), status: required('string'), session_id: optional('string'), message: optional('string') },
    provider: { event: required('object') },
    tool_start: { call_id: required('string'), name: optional('string'), tool_name: optional('string') },
    tool_progress: { call_id: required('string'), chunk: optional('string') },
    tool_end: { call_id: required('string'), success: optional('boolean') },
    // A request's request_id (a string, or an integer in older builds) is read by requests.ts.
    permission_request: { tool_name: optional('string') },
    ask_user_request: { call_id: optional('string'), questions: optional('array') },
    error: { message: optional('string') },
    error_event: { message: optional('string') },
    pong: { version: optional('string') },
    subagent_start: { parent_call_id: optional('string'), name: optional('string'), child_session_id: optional('string') },
    subagent_status: { parent_call_id: optional('string'), tool_name: optional('string'), message: optional('string') },
    subagent_end: { parent_call_id: optional('string'), child_session_id: optional('string') },
  },
  (tag) => `${tag}.`,
);

/** The fields of a `provider` message's `event` the driver reads, per event tag. */
const PROVIDER_RULES = new FieldRules(
  {
    part_start: { part: optional('object') },
    part_delta: { field: optional('string'), delta: required('string'), part_id: optional('string') },
    message_end: { finish: optional('string'), usage: optional('object'), cost: optional('number') },
    retry_wait: { attempt: optional('integer'), max_attempts: optional('integer'), delay_secs: optional('number'), delay_ms: optional('number'), reason: optional('string') },
    error: { message: optional('string') },
  },
  (tag) => `provider.${tag}.`,
);

/** Checks one decoded message: its tag (either spelling, normalized to snake_case) and the fields the driver reads. Never throws. */
export function checkMessage(value: unknown, number: number): ReadMessage {
  const tag = isObject(value) ? snakeTag(value['type']) : undefined;
  if (tag === undefined) {
    return { usable: false, rejection: { code: 'invalid', reason: `message ${number} is not an object with a snake_case or PascalCase type` } };
  }
  const message = { ...(value as JsonObject), type: tag } as MewMessage;
  const check = RULES.check(message, tag);
  if (tag === 'provider' && isObject(message['event'])) readProviderEvent(message, check);
  if (check.errors === undefined) return { message, usable: check.usable };
  return { message, usable: check.usable, rejection: fieldRejection(`message ${number}`, tag, check.errors) };
}

/** Normalizes the nested `event` of a `provider` message (its own tag, either spelling) and checks its fields. */
function readProviderEvent(message: MewMessage, check: FieldCheck): void {
  const event = { ...(message['event'] as JsonObject) };
  const tag = snakeTag(event['type']);
  if (tag === undefined) {
    (check.errors ??= []).push('provider.event has no snake_case or PascalCase type');
    check.usable = false;
    return;
  }
  event['type'] = tag;
  message['event'] = event;
  PROVIDER_RULES.check(event, tag, check);
}

/** A snake_case tag spelled as `wireCase` asks. */
export function spellTag(tag: string, wireCase: MewWireCase): string {
  if (wireCase === 'snake_case') return tag;
  return tag
    .split('_')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');
}

/** The snake_case form of a tag spelled either way (`SessionReady` / `session_ready`), or undefined when it is neither. */
export function snakeTag(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  if (/^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/.test(value)) return value;
  if (/^[A-Z][A-Za-z0-9]*$/.test(value)) return value.replace(/(?<=[a-z0-9])([A-Z])/g, '_$1').toLowerCase();
  return undefined;
}


