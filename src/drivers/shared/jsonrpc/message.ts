// JSON-RPC 2.0 messages: one decoded object classified as request, notification, response or error (never a throw), and the messages this side writes.
import type { JsonObject, JsonValue } from '../../../wire/index.js';
import { isObject } from '../json-kinds.js';
import type { FrameRejection } from '../json-line.js';

/** A request id: a number or a string (Codex's server requests count 0, 1...; ACP agents use numbers). */
export type JsonRpcId = number | string;

/**
 * The name of a request id inside subvisor (a request desk's key): its JSON, so `1` and `"1"` stay two
 * requests; a peer's cancel (`serverRequest/resolved {requestId}`, `$/cancel_request {requestId}`) names it the same way.
 */
export function requestKey(id: JsonRpcId): string {
  return JSON.stringify(id);
}

/** A JSON-RPC error object: `code`, `message`, optional `data`. */
export interface JsonRpcError {
  code: number;
  message: string;
  data?: JsonValue;
}

/** The error codes JSON-RPC 2.0 reserves (and that this peer answers with). */
export const JSON_RPC_ERRORS = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;

/** One message of the peer's, classified. `params` is an object or an array when present. */
export type JsonRpcMessage =
  | { kind: 'request'; id: JsonRpcId; method: string; params: JsonValue | undefined }
  | { kind: 'notification'; method: string; params: JsonValue | undefined }
  | { kind: 'response'; id: JsonRpcId; result: JsonValue }
  /** An error response; `id` null when the peer could not read the id of the request it answers. */
  | { kind: 'error'; id: JsonRpcId | null; error: JsonRpcError };

/**
 * A message that is not valid JSON-RPC: its rejection, and what of it could still be read so that nothing
 * waits forever: `requestId` (a request of the peer's, to be answered -32600) or `responseId` (a response
 * to one of this side's requests, which then fails).
 */
export interface InvalidMessage {
  rejection: FrameRejection;
  /** What is wrong, in a few words (the -32600 answer's message says it). */
  problem: string;
  requestId?: JsonRpcId;
  responseId?: JsonRpcId;
}

export type Classified = { message: JsonRpcMessage; invalid?: undefined } | { message?: undefined; invalid: InvalidMessage };

/**
 * Classifies one decoded object (`where` names it in reasons). A missing `"jsonrpc"` member is tolerated
 * (Codex's app-server omits it); present, it must be `"2.0"`. Never throws.
 */
export function classify(value: JsonObject, where: string): Classified {
  const method = value['method'];
  const id = value['id'];
  const invalid = (problem: string, read: ReadIds = {}): Classified => ({
    invalid: { rejection: { code: 'invalid', reason: `${where} is not a JSON-RPC 2.0 message: ${problem}`, ...(typeof method === 'string' ? { lineType: method } : {}) }, problem, ...read },
  });
  const readableId = isId(id) ? id : undefined;
  const version = value['jsonrpc'];
  if (version !== undefined && version !== '2.0') {
    return invalid('"jsonrpc" must be "2.0"', method === undefined ? responseOf(readableId) : requestOf(readableId));
  }
  if (method !== undefined) {
    if (typeof method !== 'string') return invalid('"method" must be a string', requestOf(readableId));
    const params = value['params'];
    if (params !== undefined && !isObject(params) && !Array.isArray(params)) return invalid('"params" must be an object or an array', requestOf(readableId));
    if (id === undefined) return { message: { kind: 'notification', method, params } };
    if (readableId === undefined) return invalid('a request\'s "id" must be a number or a string');
    return { message: { kind: 'request', id: readableId, method, params } };
  }
  const hasResult = Object.hasOwn(value, 'result');
  const error = value['error'];
  if (hasResult && error !== undefined) return invalid('a response has either "result" or "error"', responseOf(readableId));
  if (hasResult) {
    if (readableId === undefined) return invalid('a response\'s "id" must be a number or a string');
    return { message: { kind: 'response', id: readableId, result: value['result']! } };
  }
  if (error !== undefined) {
    if (readableId === undefined && id !== null) return invalid('an error response\'s "id" must be a number, a string or null');
    const read = errorOf(error);
    if (read === undefined) return invalid('"error" must be an object with an integer "code" and a string "message"', responseOf(readableId));
    return { message: { kind: 'error', id: readableId ?? null, error: read } };
  }
  return invalid('neither "method" nor "result" nor "error"', responseOf(readableId));
}

/** A request of this side's, as written (`jsonrpc` included when `version`). */
export function requestMessage(id: JsonRpcId, method: string, params: JsonValue | undefined, version: boolean): JsonObject {
  return { ...(version ? { jsonrpc: '2.0' } : {}), id, method, ...(params === undefined ? {} : { params }) };
}

/** A notification of this side's. */
export function notificationMessage(method: string, params: JsonValue | undefined, version: boolean): JsonObject {
  return { ...(version ? { jsonrpc: '2.0' } : {}), method, ...(params === undefined ? {} : { params }) };
}

/** The answer to the peer's request `id`: its result, or an error. */
export function responseMessage(id: JsonRpcId, answer: { result: JsonValue } | { error: JsonRpcError }, version: boolean): JsonObject {
  const body: JsonObject = 'error' in answer ? { error: errorObject(answer.error) } : { result: answer.result };
  return { ...(version ? { jsonrpc: '2.0' } : {}), id, ...body };
}

function isId(value: JsonValue | undefined): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

function errorOf(value: JsonValue): JsonRpcError | undefined {
  if (!isObject(value) || !Number.isSafeInteger(value['code']) || typeof value['message'] !== 'string') return undefined;
  return { code: value['code'] as number, message: value['message'], ...(value['data'] === undefined ? {} : { data: value['data'] }) };
}

function errorObject(error: JsonRpcError): JsonObject {
  return { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) };
}

/** The ids an invalid message still shows. */
type ReadIds = Pick<InvalidMessage, 'requestId' | 'responseId'>;

const requestOf = (id: JsonRpcId | undefined): ReadIds => (id === undefined ? {} : { requestId: id });
const responseOf = (id: JsonRpcId | undefined): ReadIds => (id === undefined ? {} : { responseId: id });
