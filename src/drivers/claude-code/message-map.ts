// Claude Code's stream-json output as run events: streamed deltas, whole assistant blocks, tool results, system notices and rate-limit news (the turn's end, replays and control messages are the session's).
import type { RateLimitFields, RunEventDraftOf } from '../../protocol/index.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { putExtra } from '../shared/extra-fields.js';
import { passthrough } from '../shared/event-drafts.js';
import { countField, isObject, stringField } from '../shared/json-kinds.js';
import type { TypedFrame } from '../shared/json-line.js';
import { readUsage } from '../shared/usage-reader.js';
import type { StdioSessionFacts } from '../shared/stdio/session-io.js';

/** The token counts of an Anthropic usage object (its other members are the CLI's bookkeeping). */
export const TOKEN_COUNTS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;

/** The longest provider text a rate-limit event repeats (RateLimitFields.message). */
const MAX_MESSAGE = 300;

/**
 * Maps each output message that is not the session's:
 * - `stream_event` (with `--include-partial-messages`): `message_start` -> `llm-start` (the model),
 *   `text_delta` / `thinking_delta` -> `assistant-text-delta` / `assistant-thinking-delta`, `message_delta` ->
 *   `llm-end` (stop reason, the call's usage). A block's start and stop, a tool's argument pieces
 *   (`input_json_delta`) and a thinking block's `signature_delta` are no events: the whole block follows in the
 *   `assistant` message;
 * - `assistant`: each content block whole: `text` -> `assistant-text`, `thinking` / `redacted_thinking` ->
 *   `assistant-thinking` (never the answer), `tool_use` -> `tool-call`;
 * - `user` (not a replay): `tool_result` blocks -> `tool-result` (named after their call), text -> `user`;
 * - `system`: `init` -> `agent-started` the first time (the session id is reported by every one), `api_retry` ->
 *   `error` (and `rate-limit` for a 429, a 529 or `error: "rate_limit"`), any other subtype -> `info` (`nativeType` `system/<subtype>`);
 * - `rate_limit_event` -> `rate-limit`; any other type -> `info`, its fields under `extra`.
 */
export class MessageMap {
  readonly #facts: StdioSessionFacts;
  /** Tool names by `tool_use` id: a tool result names only its call. */
  readonly #tools = new Map<string, string>();
  /** The next block index of each assistant message (one content block per `assistant` line when streaming). */
  readonly #blocks = new Map<string, number>();
  /** The input tokens of the model call streaming (`message_start`), for its `llm-end`. */
  #callUsage: JsonObject | undefined;
  #started = false;

  constructor(facts: StdioSessionFacts) {
    this.#facts = facts;
  }

  take(frame: TypedFrame): void {
    switch (frame.type) {
      case 'stream_event':
        return this.#streamEvent(frame);
      case 'assistant':
        return this.#assistant(frame);
      case 'user':
        return this.#user(frame);
      case 'system':
        return this.#system(frame);
      case 'rate_limit_event':
        return this.#rateLimitEvent(frame);
      default:
        return this.#facts.event(passthrough(frame));
    }
  }

  #streamEvent(frame: TypedFrame): void {
    const event = frame['event'];
    if (!isObject(event)) return this.#invalid(frame, 'event is not an object');
    switch (event['type']) {
      case 'message_start': {
        const message = isObject(event['message']) ? event['message'] : {};
        this.#callUsage = isObject(message['usage']) ? message['usage'] : undefined;
        const draft: RunEventDraftOf<'llm-start'> = { type: 'llm-start' };
        const model = stringField(message, 'model');
        if (model !== undefined) draft.model = model;
        return this.#facts.event(draft);
      }
      case 'content_block_delta': {
        const delta = isObject(event['delta']) ? event['delta'] : {};
        const contentIndex = countField(event, 'index') ?? 0;
        if (delta['type'] === 'text_delta' && typeof delta['text'] === 'string') return this.#facts.event({ type: 'assistant-text-delta', delta: delta['text'], contentIndex });
        if (delta['type'] === 'thinking_delta' && typeof delta['thinking'] === 'string') return this.#facts.event({ type: 'assistant-thinking-delta', delta: delta['thinking'], contentIndex });
        return;
      }
      case 'message_delta': {
        const delta = isObject(event['delta']) ? event['delta'] : {};
        const draft: RunEventDraftOf<'llm-end'> = { type: 'llm-end' };
        const stopReason = stringField(delta, 'stop_reason');
        if (stopReason !== undefined) draft.stopReason = stopReason;
        const counts: JsonObject = { ...this.#callUsage, ...(isObject(event['usage']) ? event['usage'] : {}) };
        const usage = readUsage(counts, { counts: TOKEN_COUNTS });
        if (usage !== undefined) draft.usage = usage;
        this.#callUsage = undefined;
        return this.#facts.event(draft);
      }
      default:
        return;
    }
  }

  #assistant(frame: TypedFrame): void {
    const message = frame['message'];
    if (!isObject(message) || !Array.isArray(message['content'])) return this.#invalid(frame, 'message.content is not an array');
    const messageId = stringField(message, 'id') ?? '';
    const parent = stringField(frame, 'parent_tool_use_id');
    for (const block of message['content']) {
      if (!isObject(block)) continue;
      const contentIndex = this.#blocks.get(messageId) ?? 0;
      this.#blocks.set(messageId, contentIndex + 1);
      const extra = parent === undefined ? undefined : { parentToolUseId: parent };
      switch (block['type']) {
        case 'text':
          this.#facts.event(withExtra({ type: 'assistant-text', final: false, contentIndex, text: stringField(block, 'text') ?? '' }, extra));
          break;
        case 'thinking':
          this.#facts.event(withExtra({ type: 'assistant-thinking', final: false, contentIndex, text: stringField(block, 'thinking') ?? '' }, extra));
          break;
        case 'redacted_thinking':
          this.#facts.event(withExtra({ type: 'assistant-thinking', final: false, contentIndex }, extra));
          break;
        case 'tool_use':
        case 'server_tool_use': {
          const id = stringField(block, 'id');
          const name = stringField(block, 'name') ?? 'unknown';
          if (id !== undefined) this.#tools.set(id, name);
          const draft: RunEventDraftOf<'tool-call'> = { type: 'tool-call', name, arguments: block['input'] ?? null };
          if (id !== undefined) draft.id = id;
          this.#facts.event(withExtra(draft, extra));
          break;
        }
        default:
          this.#facts.event({ type: 'info', nativeType: `assistant/${String(block['type'])}`, extra: { block } });
      }
    }
  }

  #user(frame: TypedFrame): void {
    const message = frame['message'];
    if (!isObject(message)) return this.#invalid(frame, 'message is not an object');
    const content = message['content'];
    if (typeof content === 'string') return this.#facts.event({ type: 'user', text: content });
    if (!Array.isArray(content)) return this.#invalid(frame, 'message.content is neither a string nor an array');
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block['type'] === 'tool_result') {
        const callId = stringField(block, 'tool_use_id');
        const draft: RunEventDraftOf<'tool-result'> = { type: 'tool-result', name: (callId === undefined ? undefined : this.#tools.get(callId)) ?? 'unknown', isError: block['is_error'] === true, result: block['content'] ?? null };
        if (callId !== undefined) draft.toolCallId = draft.id = callId;
        this.#facts.event(draft);
      } else if (block['type'] === 'text') {
        this.#facts.event({ type: 'user', text: stringField(block, 'text') ?? '' });
      } else {
        this.#facts.event({ type: 'info', nativeType: `user/${String(block['type'])}`, extra: { block } });
      }
    }
  }

  #system(frame: TypedFrame): void {
    const subtype = stringField(frame, 'subtype') ?? 'unknown';
    if (subtype === 'init') {
      const sessionId = stringField(frame, 'session_id');
      if (sessionId !== undefined) this.#facts.session(sessionId);
      const settings = pick(frame, ['session_id', 'model', 'cwd', 'permissionMode', 'claude_code_version', 'apiKeySource']);
      if (this.#started) return this.#facts.event({ type: 'info', nativeType: 'system/init', extra: settings });
      this.#started = true;
      const draft: RunEventDraftOf<'agent-started'> = { type: 'agent-started', extra: settings };
      const model = stringField(frame, 'model');
      if (model !== undefined) draft.model = model;
      return this.#facts.event(draft);
    }
    if (subtype === 'api_retry') return this.#apiRetry(frame);
    const draft = passthrough(frame);
    draft.nativeType = `system/${subtype}`;
    this.#facts.event(draft);
  }

  /** `system/api_retry {attempt, max_retries, retry_delay_ms, error_status, error}`: Claude Code retries a failed model request; a refusal (429, 529, `rate_limit`) is rate-limit news. */
  #apiRetry(frame: TypedFrame): void {
    const status = countField(frame, 'error_status');
    const error = stringField(frame, 'error') ?? 'the model request failed';
    const attempt = countField(frame, 'attempt');
    const draft = passthrough(frame);
    const retry: RunEventDraftOf<'error'> = { type: 'error', error: `claude retries the model request${attempt === undefined ? '' : ` (attempt ${attempt})`}: ${status === undefined ? '' : `HTTP ${status} `}${error}`, source: 'claude-code' };
    if (draft.extra !== undefined) retry.extra = draft.extra;
    if (status !== 429 && status !== 529 && error !== 'rate_limit') return this.#facts.event(retry);
    const news: RateLimitFields = { status: 'limited', agentRetries: true, nativeType: 'system/api_retry', message: error.slice(0, MAX_MESSAGE) };
    if (status !== undefined) news.httpStatus = status;
    const delay = countField(frame, 'retry_delay_ms');
    if (delay !== undefined) news.retryAfterMs = delay;
    if (attempt !== undefined) news.attempt = attempt;
    const maxAttempts = countField(frame, 'max_retries');
    if (maxAttempts !== undefined) news.maxAttempts = maxAttempts;
    this.#facts.rateLimit(news);
    this.#facts.event(retry);
    this.#facts.event({ type: 'rate-limit', ...news });
  }

  /** `rate_limit_event {rate_limit_info: {status, resetsAt, rateLimitType}}`: the account's limits as the API's headers said. */
  #rateLimitEvent(frame: TypedFrame): void {
    const info = frame['rate_limit_info'];
    const status = isObject(info) ? stringField(info, 'status') : undefined;
    if (!isObject(info) || status === undefined) return this.#facts.event(passthrough(frame));
    const news: RateLimitFields = { status: status === 'rejected' ? 'limited' : status === 'allowed' ? 'allowed' : 'warning', nativeType: 'rate_limit_event' };
    const resetsAt = countField(info, 'resetsAt');
    if (resetsAt !== undefined) news.resetsAt = resetsAt * 1000;
    const limitType = stringField(info, 'rateLimitType');
    if (limitType !== undefined) news.limitType = limitType;
    this.#facts.rateLimit(news);
    const draft: RunEventDraftOf<'rate-limit'> = { type: 'rate-limit', ...news, extra: {} };
    putExtra(draft.extra!, 'rate_limit_info', info);
    this.#facts.event(draft);
  }

  #invalid(frame: TypedFrame, why: string): void {
    this.#facts.rejected({ code: 'invalid-payload', reason: `a ${frame.type} line's ${why}`, lineType: frame.type });
  }
}

function withExtra<D extends RunEventDraftOf<'assistant-text' | 'assistant-thinking' | 'tool-call'>>(draft: D, extra: JsonObject | undefined): D {
  if (extra !== undefined) draft.extra = extra;
  return draft;
}

/** The members of `object` named (those it has). */
function pick(object: JsonObject, names: readonly string[]): JsonObject {
  const picked: JsonObject = {};
  for (const name of names) if (object[name] !== undefined) picked[name] = object[name] as JsonValue;
  return picked;
}
