// mew's wire messages: one WebSocket text message to a checked message with a snake_case tag, and back to text.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { isKind, isObject, withArticle } from '../shared/json-kinds.js';
import type { JsonKind } from '../shared/json-kinds.js';


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

/** Why a message did not become a (fully) usable one. Codes are the wire codec's, so callers handle one set. */
export interface MessageRejection {
  /** `malformed`: not JSON; `invalid`: JSON but no object with a tag; `invalid-payload`: a field the driver reads has the wrong type. */
  code: 'malformed' | 'invalid' | 'invalid-payload' | 'too-large' | 'out-of-order' | 'version-mismatch';
  reason: string;
  /** The message's tag (snake_case), when readable. */
  lineType?: string;
  errors?: string[];
}

/**
 * One message read. `message` is set when the text is a JSON object with a readable tag; fields that
 * failed their check are removed from it and listed in `rejection.errors`. `usable` is false when a
 * field the message's meaning depends on failed: such a message is reported, not mapped.
 */
export type ReadMessage =
  | { message: MewMessage; usable: boolean; rejection?: MessageRejection }
  | { message?: undefined; usable: false; rejection: MessageRejection };

type Kind = JsonKind;

interface FieldRule {
  kind: Kind;
  required?: boolean;
}

const req = (kind: Kind): FieldRule => ({ kind, required: true });
const opt = (kind: Kind): FieldRule => ({ kind });

/**
 * The fields the driver reads, per server message. A null optional field counts as absent (serde writes
 * `None` as null). Everything else passes through unchecked, and unknown tags are delivered raw.
 */
const RULES: Readonly<Record<string, Readonly<Record<string, FieldRule>>>> = {
  session_ready: { session_id: req('string'), model: opt('string'), provider: opt('string') },
  session_history: { messages: opt('array') },
  prompt_receipt: { request_id: req('string'), status: req('string'), session_id: opt('string'), message: opt('string') },
  provider: { event: req('object') },
  tool_start: { call_id: req('string'), name: opt('string'), tool_name: opt('string') },
  tool_progress: { call_id: req('string'), chunk: opt('string') },
  tool_end: { call_id: req('string'), success: opt('boolean') },
  // A request's request_id (a string, or an integer in older builds) is read by requests.ts.
  permission_request: { tool_name: opt('string') },
  ask_user_request: { call_id: opt('string'), questions: opt('array') },
  error: { message: opt('string') },
  error_event: { message: opt('string') },
  pong: { version: opt('string') },
  subagent_start: { parent_call_id: opt('string'), name: opt('string'), child_session_id: opt('string') },
  subagent_status: { parent_call_id: opt('string'), tool_name: opt('string'), message: opt('string') },
  subagent_end: { parent_call_id: opt('string'), child_session_id: opt('string') },
};

/** The fields of a `provider` message's `event` the driver reads, per event tag. */
const PROVIDER_RULES: Readonly<Record<string, Readonly<Record<string, FieldRule>>>> = {
  part_start: { part: opt('object') },
  part_delta: { field: opt('string'), delta: req('string'), part_id: opt('string') },
  message_end: { finish: opt('string'), usage: opt('object'), cost: opt('number') },
  retry_wait: { attempt: opt('integer'), max_attempts: opt('integer'), delay_secs: opt('number'), delay_ms: opt('number'), reason: opt('string') },
  error: { message: opt('string') },
};

/** Checks one decoded message: its tag (either spelling, normalized to snake_case) and the fields the driver reads. Never throws. */
export function checkMessage(value: unknown, number: number): ReadMessage {
  const tag = isObject(value) ? snakeTag(value['type']) : undefined;
  if (tag === undefined) {
    return { usable: false, rejection: { code: 'invalid', reason: `message ${number} is not an object with a snake_case or PascalCase type` } };
  }
  const message = { ...(value as JsonObject), type: tag } as MewMessage;
  const errors: string[] = [];
  let usable = checkFields(message, RULES[tag], tag, errors);
  if (tag === 'provider' && isObject(message['event'])) usable = readProviderEvent(message, errors) && usable;
  if (errors.length === 0) return { message, usable };
  return {
    message,
    usable,
    rejection: { code: 'invalid-payload', reason: `message ${number} (${tag}): ${errors.join('; ')}`, lineType: tag, errors },
  };
}

/** Normalizes the nested `event` of a `provider` message (its own tag, either spelling) and checks its fields. */
function readProviderEvent(message: MewMessage, errors: string[]): boolean {
  const event = { ...(message['event'] as JsonObject) };
  const tag = snakeTag(event['type']);
  if (tag === undefined) {
    errors.push('provider.event has no snake_case or PascalCase type');
    return false;
  }
  event['type'] = tag;
  message['event'] = event;
  return checkFields(event, PROVIDER_RULES[tag], `provider.${tag}`, errors);
}

/** Removes fields that fail their rule (recording why); false when a required one failed. */
function checkFields(target: JsonObject, rules: Readonly<Record<string, FieldRule>> | undefined, where: string, errors: string[]): boolean {
  if (rules === undefined) return true;
  let usable = true;
  for (const [name, rule] of Object.entries(rules)) {
    const value = target[name];
    if (value === undefined || value === null) {
      if (rule.required === true) {
        errors.push(`${where}.${name} is missing`);
        usable = false;
      }
      continue;
    }
    if (isKind(value, rule.kind)) continue;
    errors.push(`${where}.${name} must be ${withArticle(rule.kind)}`);
    delete target[name];
    if (rule.required === true) usable = false;
  }
  return usable;
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


