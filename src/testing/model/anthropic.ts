// The Anthropic Messages API as Claude Code 2.1 uses it: POST /v1/messages (SSE `message_start`, content blocks of
// thinking with a `signature_delta`, text and `tool_use` with `input_json_delta`, `message_delta`, `message_stop`),
// its non-streaming fallback, /v1/messages/count_tokens, and Anthropic's error bodies.
import { type Entry, isObject, outputText } from './conversation.js';
import { type Dialect, type TurnPlan, readRequest, sse, splitIn } from './dialect.js';
import type { Piece } from './paced-stream.js';
import { valueFor } from './schema-value.js';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

function entriesOf(messages: unknown[]): Entry[] {
  return messages.map((message) => {
    const role = isObject(message) ? message['role'] : undefined;
    const content = isObject(message) ? message['content'] : undefined;
    const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];
    const entry: Entry = { from: role === 'user' ? 'user' : role === 'assistant' ? 'model' : 'other', texts: [], toolResults: [] };
    for (const block of blocks) {
      if (!isObject(block)) continue;
      if (block['type'] === 'text' && typeof block['text'] === 'string') entry.texts.push(block['text']);
      if (block['type'] === 'tool_result') {
        entry.toolResults.push({
          callId: String(block['tool_use_id']),
          output: outputText(block['content'] ?? ''),
          ...(block['is_error'] === true ? { isError: true } : {}),
        });
      }
    }
    return entry;
  });
}

const stopReason = (plan: TurnPlan): string => (plan.calls.length > 0 ? 'tool_use' : 'end_turn');
const signature = (plan: TurnPlan): string => Buffer.from(`fake-model:${plan.id}`).toString('base64');

function usage(plan: TurnPlan, outputTokens: number): Record<string, number> {
  return { input_tokens: plan.usage.inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: outputTokens };
}

export const anthropic: Dialect = {
  api: 'anthropic',

  endpoint(path) {
    const pathname = path.split('?')[0];
    if (pathname === '/v1/messages') return 'messages';
    if (pathname === '/v1/messages/count_tokens') return 'count_tokens';
    return undefined;
  },

  read(endpoint, body) {
    if (!Array.isArray(body['messages'])) throw 'the body has no messages array';
    const tools = Array.isArray(body['tools']) ? body['tools'].flatMap((tool) => (isObject(tool) && typeof tool['name'] === 'string' ? [tool['name']] : [])) : [];
    return readRequest(body, { counts: endpoint === 'count_tokens', tools, entries: entriesOf(body['messages']) });
  },

  stream(plan) {
    const pieces: Piece[] = [];
    const frame = (data: Record<string, unknown>, delayMs = 0): void => {
      pieces.push({ data: sse(data, String(data['type'])), delayMs });
    };
    frame({
      type: 'message_start',
      message: { id: plan.id, type: 'message', role: 'assistant', model: plan.model, content: [], stop_reason: null, stop_sequence: null, usage: usage(plan, 1) },
    });
    frame({ type: 'ping' });
    let index = 0;
    const block = (start: Record<string, unknown>, deltas: Array<Record<string, unknown>>): void => {
      frame({ type: 'content_block_start', index, content_block: start });
      for (const delta of deltas) frame({ type: 'content_block_delta', index, delta }, delta['type'] === 'signature_delta' ? 0 : plan.delayMs);
      frame({ type: 'content_block_stop', index });
      index++;
    };
    if (plan.thinking.length > 0) {
      block({ type: 'thinking', thinking: '', signature: '' }, [
        ...plan.thinking.map((thinking) => ({ type: 'thinking_delta', thinking })),
        { type: 'signature_delta', signature: signature(plan) },
      ]);
    }
    if (plan.text.length > 0) block({ type: 'text', text: '' }, plan.text.map((text) => ({ type: 'text_delta', text })));
    for (const call of plan.calls) {
      // The arguments arrive in two pieces, as a long call's do: the client must join them.
      const deltas = splitIn(JSON.stringify(call.input), 2).map((partial_json) => ({ type: 'input_json_delta', partial_json }));
      block({ type: 'tool_use', id: call.id, name: call.name, input: {} }, deltas);
    }
    if (plan.end !== 'complete') return pieces;
    if (plan.streamError !== undefined) {
      const { status, message } = plan.streamError;
      frame({ type: 'error', error: { type: ERROR_TYPES[status] ?? 'api_error', message } });
      return pieces;
    }
    frame({ type: 'message_delta', delta: { stop_reason: stopReason(plan), stop_sequence: null }, usage: { output_tokens: plan.usage.outputTokens } });
    frame({ type: 'message_stop' });
    return pieces;
  },

  message(plan) {
    const content: unknown[] = [];
    if (plan.thinking.length > 0) content.push({ type: 'thinking', thinking: plan.thinking.join(''), signature: signature(plan) });
    if (plan.text.length > 0) content.push({ type: 'text', text: plan.text.join('') });
    for (const call of plan.calls) content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input });
    return {
      id: plan.id,
      type: 'message',
      role: 'assistant',
      model: plan.model,
      content,
      stop_reason: stopReason(plan),
      stop_sequence: null,
      usage: usage(plan, plan.usage.outputTokens),
    };
  },

  sideText(body) {
    const format = isObject(body['output_format']) ? body['output_format'] : isObject(body['output_config']) ? body['output_config']['format'] : undefined;
    return isObject(format) && format['schema'] !== undefined ? JSON.stringify(valueFor(format['schema'])) : 'ok';
  },

  countTokens(tokens) {
    return { input_tokens: tokens };
  },

  error(status, message) {
    return { type: 'error', error: { type: ERROR_TYPES[status] ?? 'api_error', message } };
  },
};
