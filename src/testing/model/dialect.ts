// What each model API (Anthropic Messages, OpenAI Responses, Gemini) provides to the server: how it reads a request,
// how it streams or returns a planned turn, and how it words side answers, token counts and errors.
import type { Entry } from './conversation.js';
import type { Piece, StreamEnd } from './paced-stream.js';
import type { ModelApi, ModelRequestKind, ModelToolCall } from './types.js';

/** A request as one API reads it. */
export interface ReadRequest {
  kind: Exclude<ModelRequestKind, 'rejected'>;
  model?: string;
  stream: boolean;
  tools: string[];
  entries: Entry[];
}

/** A scripted turn resolved against its request: pieces cut, the shell tool named, ids given. */
export interface TurnPlan {
  /** A fresh id for this answer (message id, response id). */
  id: string;
  model: string;
  thinking: string[];
  text: string[];
  calls: Array<ModelToolCall & { id: string }>;
  delayMs: number;
  end: StreamEnd;
  /** An error sent in the stream after the content (`end` is then 'complete'). */
  streamError?: { status: number; message: string };
  usage: { inputTokens: number; outputTokens: number };
}

export interface Dialect {
  readonly api: ModelApi;
  /** The endpoint `path` names in this API (its method is POST), or undefined when it is none of this API's. */
  endpoint(path: string): string | undefined;
  /** Reads a JSON body sent to `endpoint`; throws a message (string) when the body is not a request of it. */
  read(endpoint: string, body: Record<string, unknown>, path: string): ReadRequest;
  /** The streamed answer of a turn: every SSE frame, up to the end (or error) the plan asks for. */
  stream(plan: TurnPlan): Piece[];
  /** The answer of a turn asked without streaming. */
  message(plan: TurnPlan): unknown;
  /** The text of the built-in answer of a side request: a value of the JSON schema it asks for, or a short text. */
  sideText(body: Record<string, unknown>): string;
  /** The answer of a token count. */
  countTokens(tokens: number): unknown;
  /** The body of an HTTP error in this API's shape (with the retry delay where the API carries one in the body). */
  error(status: number, message: string, retryAfterSeconds?: number): unknown;
}

/**
 * A request of any API, read: a turn request offers tools (each agent's main loop offers its own), a side request
 * (a title, a quota probe, a routing or next-speaker check) offers none.
 */
export function readRequest(body: Record<string, unknown>, read: { counts: boolean; tools: string[]; entries: Entry[]; stream?: boolean; model?: unknown }): ReadRequest {
  const model = read.model ?? body['model'];
  return {
    kind: read.counts ? 'count-tokens' : read.tools.length === 0 ? 'side' : 'turn',
    ...(typeof model === 'string' ? { model } : {}),
    stream: read.stream ?? body['stream'] === true,
    tools: read.tools,
    entries: read.entries,
  };
}

/** One SSE frame: an `event:` line (when the API names its events) and the JSON `data:` line. */
export function sse(data: unknown, event?: string): string {
  return `${event === undefined ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
}

/** Cuts `text` into `pieces` of about equal size (at least one piece, never an empty one unless the text is). */
export function splitIn(text: string, pieces: number): string[] {
  if (pieces <= 1 || text.length <= 1) return [text];
  const size = Math.ceil(text.length / pieces);
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out;
}
