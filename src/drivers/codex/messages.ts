// Reading Codex app-server messages: the params fields the session relies on, per method, checked by the shared field rules.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { unwrapErrorBody } from '../shared/error-body.js';
import { checkTable, compileTable, fieldRejection, FieldRules, optional, required } from '../shared/field-rules.js';
import { isObject } from '../shared/json-kinds.js';
import type { FrameRejection } from '../shared/json-line.js';

/** A notification's params as checked: fields that failed their rule are removed (code reading it never sees a wrong type). */
export type Params = JsonObject;

/** What reading one notification's params gave. `usable` false: a field its meaning depends on failed (reported, not mapped). */
export interface ReadParams {
  params: Params;
  usable: boolean;
  rejection?: FrameRejection;
}

const TURN_STATUSES = ['completed', 'interrupted', 'failed', 'inProgress'];

/**
 * The fields read of each notification (app-server protocol v2 as 0.169.0's `generate-ts` gives it). Everything
 * else passes through unchecked under the events' `extra`: Codex adds fields in most releases.
 */
const RULES = new FieldRules({
  'item/started': { item: required('object'), threadId: optional('string'), turnId: optional('string') },
  'item/completed': { item: required('object'), threadId: optional('string'), turnId: optional('string') },
  'item/agentMessage/delta': { itemId: required('string'), delta: required('string'), threadId: optional('string') },
  'item/reasoning/summaryTextDelta': { itemId: required('string'), delta: required('string'), summaryIndex: optional('integer'), threadId: optional('string') },
  'item/reasoning/textDelta': { itemId: required('string'), delta: required('string'), contentIndex: optional('integer'), threadId: optional('string') },
  'turn/started': { turn: required('object'), threadId: optional('string') },
  'turn/completed': { turn: required('object'), threadId: optional('string') },
  'thread/tokenUsage/updated': { tokenUsage: required('object'), threadId: optional('string'), turnId: optional('string') },
  error: { error: required('object'), willRetry: optional('boolean'), threadId: optional('string'), turnId: optional('string') },
  'account/rateLimits/updated': { rateLimits: required('object') },
  'serverRequest/resolved': { requestId: required('any'), threadId: optional('string') },
  warning: { message: optional('string'), threadId: optional('string') },
  configWarning: { summary: optional('string') },
  deprecationNotice: { summary: optional('string') },
});

/** The fields read of a thread item (`item` of `item/started`, `item/completed`; `turn.items`). */
const ITEM_RULES = compileTable({ type: required('string'), id: required('string') }, 'item.');
/** The fields read of a turn (`turn` of `turn/started`, `turn/completed`, and of `turn/start`'s answer). */
const TURN_RULES = compileTable({ id: required('string'), status: optional('string', { oneOf: TURN_STATUSES }), error: optional('object'), items: optional('array') }, 'turn.');
/** A turn's or an `error` notification's error (`TurnError`). */
const ERROR_RULES = compileTable({ message: required('string'), additionalDetails: optional('string') }, 'error.');
/** `thread/tokenUsage/updated`'s counts: the thread's total so far, and the last model request's. */
const TOKEN_USAGE_RULES = compileTable({ total: required('object'), last: required('object') }, 'tokenUsage.');

/** Whether this driver reads `method`'s params (the notifications it maps rather than passes on). */
export function readsMethod(method: string): boolean {
  return RULES.has(method);
}

/**
 * Checks the params of `method` (a notification of Codex's). Params that are not an object are unusable for
 * a method the driver reads; for any other method they pass as they are.
 */
export function readParams(method: string, params: JsonValue | undefined): ReadParams {
  const where = 'a codex notification';
  if (!isObject(params)) {
    if (!RULES.has(method)) return { params: {}, usable: true };
    return { params: {}, usable: false, rejection: fieldRejection(where, method, ['params must be an object']) };
  }
  const check = RULES.check(params, method);
  const nested: Array<[string, typeof ITEM_RULES]> = [
    ['item', ITEM_RULES],
    ['turn', TURN_RULES],
    ['tokenUsage', TOKEN_USAGE_RULES],
  ];
  for (const [name, rules] of nested) {
    const value = params[name];
    if (isObject(value)) checkTable(value, rules, check);
  }
  if (method === 'error' && isObject(params['error'])) checkTable(params['error'], ERROR_RULES, check);
  const turn = params['turn'];
  if (isObject(turn) && isObject(turn['error'])) checkTable(turn['error'], ERROR_RULES, check);
  if (check.errors === undefined) return { params, usable: true };
  return { params, usable: check.usable, rejection: fieldRejection(where, method, check.errors) };
}

/** Checks a turn object of an answer (`turn/start`'s `{turn}`): its id, or why it has none. */
export function turnIdOf(result: JsonValue): string | undefined {
  const turn = isObject(result) ? result['turn'] : undefined;
  if (!isObject(turn)) return undefined;
  const id = turn['id'];
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** The thread id of `thread/start`'s or `thread/resume`'s answer (`{thread: {id}}`). */
export function threadIdOf(result: JsonValue): string | undefined {
  const thread = isObject(result) ? result['thread'] : undefined;
  const id = isObject(thread) ? thread['id'] : undefined;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * The message a person should read of a Codex error (`TurnError.message`): a provider's HTTP error body arrives
 * whole as the message (0.169.0: `{"error":{"message":"...","type":...}}` for a 400), so its own `error.message`
 * is taken out of it; any other text is kept as it is.
 */
export function errorMessageOf(message: string): string {
  return unwrapErrorBody(message, false);
}

/** The text of a `userMessage` item's content (its `text` inputs, joined). */
export function userTextOf(item: JsonObject): string | undefined {
  const content = item['content'];
  if (!Array.isArray(content)) return undefined;
  const texts = content.filter((part): part is JsonObject => isObject(part) && part['type'] === 'text' && typeof part['text'] === 'string');
  return texts.length === 0 ? undefined : texts.map((part) => part['text'] as string).join('\n');
}
