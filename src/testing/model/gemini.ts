// The Gemini API as Gemini CLI 0.61 uses it (GOOGLE_GEMINI_BASE_URL): POST /v1beta/models/M:streamGenerateContent?alt=sse
// (frames of candidates with text, `thought: true` and `functionCall` parts, the last with `finishReason` and
// `usageMetadata`; no [DONE]), :generateContent (its routing and next-speaker checks), :countTokens, Google errors.
import { type Entry, isObject, outputText } from './conversation.js';
import { type Dialect, type TurnPlan, readRequest, sse } from './dialect.js';
import type { Piece } from './paced-stream.js';
import { valueFor } from './schema-value.js';

const ENDPOINT = /^\/(?:v1|v1beta|v1alpha)\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/;

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

function entriesOf(contents: unknown[]): Entry[] {
  return contents.map((content): Entry => {
    const role = isObject(content) ? content['role'] : undefined;
    const parts = isObject(content) && Array.isArray(content['parts']) ? content['parts'] : [];
    const entry: Entry = { from: role === 'model' ? 'model' : role === 'user' || role === undefined ? 'user' : 'other', texts: [], toolResults: [] };
    for (const part of parts) {
      if (!isObject(part)) continue;
      if (typeof part['text'] === 'string' && part['thought'] !== true) entry.texts.push(part['text']);
      const answer = part['functionResponse'];
      if (isObject(answer)) {
        const response = isObject(answer['response']) ? answer['response'] : {};
        entry.toolResults.push({ callId: String(answer['id'] ?? answer['name']), output: outputText(response['output'] ?? response) });
      }
    }
    return entry;
  });
}

function usageMetadata(plan: TurnPlan): Record<string, number> {
  const thoughts: Record<string, number> = plan.thinking.length === 0 ? {} : { thoughtsTokenCount: Math.max(1, Math.ceil(plan.thinking.join('').length / 4)) };
  return {
    promptTokenCount: plan.usage.inputTokens,
    candidatesTokenCount: plan.usage.outputTokens,
    totalTokenCount: plan.usage.inputTokens + plan.usage.outputTokens,
    ...thoughts,
  };
}

function response(plan: TurnPlan, parts: unknown[], last: boolean): Record<string, unknown> {
  const candidate = { content: { role: 'model', parts }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) };
  return { candidates: [candidate], ...(last ? { usageMetadata: usageMetadata(plan) } : {}), modelVersion: plan.model, responseId: plan.id };
}

const callPart = (call: TurnPlan['calls'][number]): unknown => ({ functionCall: { id: call.id, name: call.name, args: call.input } });

export const gemini: Dialect = {
  api: 'gemini',

  endpoint(path) {
    return ENDPOINT.exec(path)?.[2];
  },

  read(endpoint, body, path) {
    const [pathname, query = ''] = path.split('?');
    const contents = endpoint === 'countTokens' && isObject(body['generateContentRequest']) ? body['generateContentRequest']['contents'] : body['contents'];
    if (!Array.isArray(contents)) throw 'the body has no contents array';
    const stream = endpoint === 'streamGenerateContent';
    if (stream && new URLSearchParams(query).get('alt') !== 'sse') throw 'streamGenerateContent is answered as SSE only: add ?alt=sse';
    const tools = Array.isArray(body['tools'])
      ? body['tools'].flatMap((tool) => (isObject(tool) && Array.isArray(tool['functionDeclarations']) ? tool['functionDeclarations'] : []))
          .flatMap((declaration) => (isObject(declaration) && typeof declaration['name'] === 'string' ? [declaration['name']] : []))
      : [];
    const model = decodeURIComponent(ENDPOINT.exec(pathname ?? '')![1]!);
    return readRequest(body, { counts: endpoint === 'countTokens', tools, entries: entriesOf(contents), stream, model });
  },

  stream(plan) {
    const frames: Array<{ parts: unknown[]; delayMs: number }> = [
      ...plan.thinking.map((text) => ({ parts: [{ text, thought: true }], delayMs: plan.delayMs })),
      ...plan.text.map((text) => ({ parts: [{ text }], delayMs: plan.delayMs })),
      ...plan.calls.map((call) => ({ parts: [callPart(call)], delayMs: plan.delayMs })),
    ];
    const complete = plan.end === 'complete' && plan.streamError === undefined;
    if (frames.length === 0) frames.push({ parts: [{ text: '' }], delayMs: 0 });
    const pieces: Piece[] = frames.map((frame, index) => ({ data: sse(response(plan, frame.parts, complete && index === frames.length - 1)), delayMs: frame.delayMs }));
    if (plan.streamError !== undefined && plan.end === 'complete') {
      const { status, message } = plan.streamError;
      pieces.push({ data: sse(gemini.error(status, message)), delayMs: 0 });
    }
    return pieces;
  },

  message(plan) {
    const parts = [...plan.thinking.map((text) => ({ text, thought: true })), ...(plan.text.length > 0 ? [{ text: plan.text.join('') }] : []), ...plan.calls.map(callPart)];
    return response(plan, parts.length === 0 ? [{ text: '' }] : parts, true);
  },

  sideText(body) {
    const config = isObject(body['generationConfig']) ? body['generationConfig'] : {};
    const schema = config['responseJsonSchema'] ?? config['responseSchema'];
    return schema !== undefined ? JSON.stringify(valueFor(schema)) : 'ok';
  },

  countTokens(tokens) {
    return { totalTokens: tokens };
  },

  error(status, message, retryAfterSeconds) {
    const details = retryAfterSeconds === undefined ? [] : [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfterSeconds}s` }];
    return { error: { code: status, message, status: STATUS_NAMES[status] ?? 'INTERNAL', ...(details.length > 0 ? { details } : {}) } };
  },
};
