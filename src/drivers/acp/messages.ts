// What subvisor reads of an ACP agent's messages (Agent Client Protocol v1, schema/v1/schema.json): the fields each checked, the usage a prompt's answer carries, the model's message out of an error.
import type { RateLimitFields } from '../../protocol/index.js';
import type { JsonObject, JsonValue, Usage } from '../../wire/index.js';
import { toUsage } from '../../wire/index.js';
import { unwrapErrorBody } from '../shared/error-body.js';
import { checkTable, compileTable, fieldRejection, FieldRules, optional, required } from '../shared/field-rules.js';
import { isObject } from '../shared/json-kinds.js';
import type { FrameRejection } from '../shared/json-line.js';

/** The protocol version subvisor speaks: ACP's major version 1 (an agent answering another is refused). */
export const ACP_VERSION = 1;

/** The update kinds of `session/update` v1 the driver maps (any other passes through as a notice). */
const UPDATE_RULES = new FieldRules({
  agent_message_chunk: { content: required('object'), messageId: optional('string') },
  agent_thought_chunk: { content: required('object'), messageId: optional('string') },
  user_message_chunk: { content: required('object') },
  tool_call: { toolCallId: required('string'), title: optional('string'), name: optional('string'), kind: optional('string'), status: optional('string') },
  tool_call_update: { toolCallId: required('string'), title: optional('string'), name: optional('string'), kind: optional('string'), status: optional('string') },
  usage_update: { used: optional('number'), size: optional('number'), cost: optional('object') },
});

/** `session/update`'s params: the session and the update (its kind a string). */
const NOTIFICATION_RULES = compileTable({ sessionId: required('string'), update: required('object') });
const UPDATE_KIND = compileTable({ sessionUpdate: required('string') }, 'update.');

/** One `session/update` as read: its session, its kind and its fields (the failed ones removed), or why it is unusable. */
export interface ReadUpdate {
  sessionId: string;
  kind: string;
  update: JsonObject;
  usable: boolean;
  rejection?: FrameRejection;
}

/** Checks a `session/update`'s params; undefined (with its rejection) when neither its session nor its kind can be read. */
export function readUpdate(params: JsonValue | undefined): ReadUpdate | { rejection: FrameRejection; usable: false; kind?: undefined } {
  const where = 'an ACP session/update';
  if (!isObject(params)) return { usable: false, rejection: fieldRejection(where, 'session/update', ['params must be an object']) };
  const check = checkTable(params, NOTIFICATION_RULES);
  const update = params['update'];
  if (isObject(update)) checkTable(update, UPDATE_KIND, check);
  if (!check.usable) return { usable: false, rejection: fieldRejection(where, 'session/update', check.errors!) };
  const kind = (update as JsonObject)['sessionUpdate'] as string;
  UPDATE_RULES.check(update as JsonObject, kind, check);
  const read: ReadUpdate = { sessionId: params['sessionId'] as string, kind, update: update as JsonObject, usable: check.usable };
  if (check.errors !== undefined) read.rejection = fieldRejection(where, kind, check.errors);
  return read;
}

/** The text of a content block (`{type: "text", text}`), or undefined for another kind (an image, a resource). */
export function textOf(content: JsonValue | undefined): string | undefined {
  return isObject(content) && content['type'] === 'text' && typeof content['text'] === 'string' ? content['text'] : undefined;
}

/**
 * The usage of `session/prompt`'s answer: its `usage` (the unstable schema's `{inputTokens, outputTokens, ...}`), else
 * Gemini CLI's `_meta.quota.token_count {input_tokens, output_tokens}` (0.61.0). Undefined when it carries neither.
 */
export function promptUsage(result: JsonObject): Usage | undefined {
  const usage = result['usage'];
  if (isObject(usage)) return toUsage(usage);
  const meta = result['_meta'];
  const quota = isObject(meta) ? meta['quota'] : undefined;
  const counts = isObject(quota) ? quota['token_count'] : undefined;
  return isObject(counts) ? toUsage(counts) : undefined;
}

/** The model names of Gemini CLI's `_meta.quota.model_usage [{model, token_count}]`, when the answer has them. */
export function promptModels(result: JsonObject): string[] {
  const meta = result['_meta'];
  const quota = isObject(meta) ? meta['quota'] : undefined;
  const list = isObject(quota) ? quota['model_usage'] : undefined;
  if (!Array.isArray(list)) return [];
  return list.flatMap((entry) => (isObject(entry) && typeof entry['model'] === 'string' ? [entry['model']] : []));
}

/**
 * The message a person should read of an agent's error: a provider's JSON error body is unwrapped to its
 * `error.message` (or `message`); any other text is kept as it is.
 */
export function errorMessageOf(message: string): string {
  return unwrapErrorBody(message, true);
}

/**
 * The rate-limit news of a prompt's JSON-RPC error: its `code` is 429 (Gemini CLI 0.61.0 answers
 * `{code: 429, message: "Rate limit exceeded. Try again later."}` once its own retries are spent) or its message names
 * 429 or `RESOURCE_EXHAUSTED`; undefined for another error.
 */
export function promptRateLimit(code: number, message: string): RateLimitFields | undefined {
  if (code !== 429 && !/\b429\b|RESOURCE_EXHAUSTED/.test(message)) return undefined;
  return { status: 'limited', nativeType: 'session/prompt', httpStatus: 429, agentRetries: false, message: message.slice(0, 300) };
}

/** A JSON-RPC error as a person reads it: its message, and the `details` (or text) of its `data` when there are some (Gemini CLI 0.61.0 answers `Internal error` with the reason in `data.details`). */
export function rpcErrorText(error: { message: string; data?: JsonValue }): string {
  const data = error.data;
  const details = typeof data === 'string' ? data : isObject(data) && typeof data['details'] === 'string' ? data['details'] : undefined;
  return details === undefined || details === '' || details === error.message ? error.message : `${error.message}: ${details}`;
}
