// The OpenAI Responses API as Codex 0.169 uses it (POST /v1/responses, `wire_api = "responses"`): SSE events keyed
// on their JSON `type` (`response.created`, output items added and done for reasoning, message and function_call
// items, text and reasoning-summary deltas, `response.completed` with usage, `response.failed`), OpenAI error bodies.
import { type Entry, isObject, outputText } from './conversation.js';
import { type Dialect, type TurnPlan, readRequest, sse, splitIn } from './dialect.js';
import type { Piece } from './paced-stream.js';
import { valueFor } from './schema-value.js';

const ERROR_TYPES: Record<number, string> = { 400: 'invalid_request_error', 401: 'invalid_request_error', 404: 'invalid_request_error', 429: 'rate_limit_exceeded' };

/** Input items the model wrote (sent back as history), and the agent's answers to tool calls. */
const MODEL_ITEMS = new Set(['function_call', 'custom_tool_call', 'local_shell_call', 'reasoning', 'web_search_call']);
const TOOL_OUTPUTS = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output']);

function entriesOf(input: unknown): Entry[] {
  if (typeof input === 'string') return [{ from: 'user', texts: [input], toolResults: [] }];
  if (!Array.isArray(input)) return [];
  return input.map((item): Entry => {
    if (!isObject(item)) return { from: 'other', texts: [], toolResults: [] };
    const type = item['type'] ?? 'message';
    if (TOOL_OUTPUTS.has(String(type))) {
      return { from: 'user', texts: [], toolResults: [{ callId: String(item['call_id']), output: outputText(item['output'] ?? '') }] };
    }
    if (MODEL_ITEMS.has(String(type))) return { from: 'model', texts: [], toolResults: [] };
    const role = item['role'];
    const content = item['content'];
    const parts = typeof content === 'string' ? [{ text: content }] : Array.isArray(content) ? content : [];
    const texts = parts.flatMap((part) => (isObject(part) && typeof part['text'] === 'string' ? [part['text']] : []));
    return { from: role === 'user' ? 'user' : role === 'assistant' ? 'model' : 'other', texts, toolResults: [] };
  });
}

function usage(plan: TurnPlan): Record<string, unknown> {
  const reasoning = plan.thinking.length === 0 ? 0 : Math.max(1, Math.ceil(plan.thinking.join('').length / 4));
  return {
    input_tokens: plan.usage.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: plan.usage.outputTokens,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: plan.usage.inputTokens + plan.usage.outputTokens,
  };
}

/** The output items of a plan, complete (as `response.output_item.done` and `response.completed` carry them). */
function outputItems(plan: TurnPlan): Array<Record<string, unknown>> {
  const items: Array<Record<string, unknown>> = [];
  if (plan.thinking.length > 0) {
    items.push({ type: 'reasoning', id: `rs_${plan.id}`, summary: [{ type: 'summary_text', text: plan.thinking.join('') }] });
  }
  if (plan.text.length > 0) {
    items.push({
      type: 'message',
      id: `msg_${plan.id}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: plan.text.join(''), annotations: [] }],
    });
  }
  for (const call of plan.calls) {
    items.push({ type: 'function_call', id: `fc_${call.id}`, call_id: call.id, name: call.name, arguments: JSON.stringify(call.input), status: 'completed' });
  }
  return items;
}

function responseObject(plan: TurnPlan, status: string, output: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: plan.id, object: 'response', created_at: Math.floor(Date.now() / 1000), status, model: plan.model, output, ...extra };
}

export const responses: Dialect = {
  api: 'responses',

  endpoint(path) {
    return { '/v1/responses': 'responses', '/v1/responses/input_tokens': 'input_tokens' }[path];
  },

  read(endpoint, body) {
    if (body['input'] === undefined) throw 'the body has no input';
    const tools = Array.isArray(body['tools'])
      ? body['tools'].flatMap((tool) => (isObject(tool) ? [String(tool['name'] ?? tool['type'])] : []))
      : [];
    return readRequest(body, { counts: endpoint === 'input_tokens', tools, entries: entriesOf(body['input']) });
  },

  stream(plan) {
    const pieces: Piece[] = [];
    let sequence = 0;
    const event = (data: Record<string, unknown>, delayMs = 0): void => {
      pieces.push({ data: sse({ ...data, sequence_number: sequence++ }, String(data['type'])), delayMs });
    };
    event({ type: 'response.created', response: responseObject(plan, 'in_progress', []) });
    event({ type: 'response.in_progress', response: responseObject(plan, 'in_progress', []) });
    const done = outputItems(plan);
    let outputIndex = 0;
    const item = (complete: Record<string, unknown>, added: Record<string, unknown>, body: () => void): void => {
      const output_index = outputIndex++;
      event({ type: 'response.output_item.added', output_index, item: added });
      body();
      event({ type: 'response.output_item.done', output_index, item: complete });
    };
    for (const complete of done) {
      const item_id = String(complete['id']);
      const output_index = outputIndex;
      if (complete['type'] === 'reasoning') {
        item(complete, { type: 'reasoning', id: item_id, summary: [] }, () => {
          const part = { item_id, output_index, summary_index: 0 };
          event({ type: 'response.reasoning_summary_part.added', ...part, part: { type: 'summary_text', text: '' } });
          for (const delta of plan.thinking) event({ type: 'response.reasoning_summary_text.delta', ...part, delta }, plan.delayMs);
          event({ type: 'response.reasoning_summary_text.done', ...part, text: plan.thinking.join('') });
          event({ type: 'response.reasoning_summary_part.done', ...part, part: { type: 'summary_text', text: plan.thinking.join('') } });
        });
      } else if (complete['type'] === 'message') {
        item(complete, { type: 'message', id: item_id, role: 'assistant', status: 'in_progress', content: [] }, () => {
          const part = { item_id, output_index, content_index: 0 };
          event({ type: 'response.content_part.added', ...part, part: { type: 'output_text', text: '', annotations: [] } });
          for (const delta of plan.text) event({ type: 'response.output_text.delta', ...part, delta }, plan.delayMs);
          event({ type: 'response.output_text.done', ...part, text: plan.text.join('') });
          event({ type: 'response.content_part.done', ...part, part: { type: 'output_text', text: plan.text.join(''), annotations: [] } });
        });
      } else {
        item(complete, { ...complete, arguments: '', status: 'in_progress' }, () => {
          for (const delta of splitIn(String(complete['arguments']), 2)) {
            event({ type: 'response.function_call_arguments.delta', item_id, output_index, delta }, plan.delayMs);
          }
          event({ type: 'response.function_call_arguments.done', item_id, output_index, arguments: complete['arguments'] });
        });
      }
    }
    if (plan.end !== 'complete') return pieces;
    if (plan.streamError !== undefined) {
      const { status, message } = plan.streamError;
      event({ type: 'response.failed', response: responseObject(plan, 'failed', done, { error: { code: ERROR_TYPES[status] ?? 'server_error', message } }) });
      return pieces;
    }
    event({ type: 'response.completed', response: responseObject(plan, 'completed', done, { usage: usage(plan) }) });
    return pieces;
  },

  message(plan) {
    return responseObject(plan, 'completed', outputItems(plan), { usage: usage(plan) });
  },

  sideText(body) {
    const format = isObject(body['text']) ? body['text']['format'] : undefined;
    return isObject(format) && format['schema'] !== undefined ? JSON.stringify(valueFor(format['schema'])) : 'ok';
  },

  countTokens(tokens) {
    return { object: 'response.input_tokens', input_tokens: tokens };
  },

  error(status, message) {
    return { error: { message, type: ERROR_TYPES[status] ?? 'server_error', param: null, code: ERROR_TYPES[status] ?? null } };
  },
};
