// One JSON-RPC 2.0 peer over a line channel: this side's requests correlated by id, the peer's requests dispatched by method (never left unanswered), notifications, typed errors and rejections.
import type { JsonObject, JsonValue } from '../../../wire/index.js';
import { decodeJsonObject } from '../json-line.js';
import type { FrameRejection } from '../json-line.js';
import { PendingRequests } from '../pending-requests.js';
import type { PendingFailure, SetTimer } from '../pending-requests.js';
import type { StdioLines } from '../stdio/channel.js';
import { classify, JSON_RPC_ERRORS, notificationMessage, requestKey, requestMessage, responseMessage } from './message.js';
import type { JsonRpcError, JsonRpcId } from './message.js';

/** Why one of this side's requests got no result: the peer's error, or the correlator's (closed, timed out, failed). */
export type RequestFailure = { kind: 'error'; error: JsonRpcError; reason: string } | PendingFailure;

/** Where the end of one of this side's requests goes: exactly one of the two, exactly once, synchronously from the line that brought it. */
export interface ResponseHandlers {
  result(value: JsonValue): void;
  failed(failure: RequestFailure): void;
}

/** The answer to one request of the peer's: exactly one of `result` and `error`; later calls are ignored (false). */
export interface Reply {
  readonly id: JsonRpcId;
  /** The id as a request desk's key ({@link requestKey}). */
  readonly key: string;
  readonly method: string;
  /** True once answered. */
  readonly answered: boolean;
  result(value: JsonValue): boolean;
  error(error: JsonRpcError): boolean;
}

/**
 * Serves one method of the peer's requests: answers through `reply`, now or later (an approval waits for
 * the caller's callback). A throw before answering is answered -32603.
 */
export type RequestHandler = (params: JsonValue | undefined, reply: Reply) => void;

/** What a line could not be, or what the peer did wrong, for the driver to publish. */
export interface JsonRpcHandlers {
  /** The methods this side serves, by name; any other request is answered -32601. */
  requests?: Readonly<Record<string, RequestHandler>>;
  /** One notification of the peer's. */
  notification?(method: string, params: JsonValue | undefined): void;
  /** A request of a method not served was answered -32601 (to surface it: it may be an agent's question left unanswered). */
  unknownMethod?(method: string, id: JsonRpcId): void;
  /** A line or message that was not (fully) accepted; the run goes on. */
  rejected(rejection: FrameRejection): void;
}

export interface JsonRpcPeerOptions {
  /** Writes one message as one line (the stdio channel's `write`); `ok: false` when it could not. */
  send(message: JsonObject): { ok: true } | { ok: false; reason: string };
  /** Whether written messages carry `"jsonrpc": "2.0"` (default true; Codex's app-server omits it). */
  writeVersion?: boolean;
  /** The id of this side's first request (default 1); later ones count up. */
  firstId?: number;
  setTimer?: SetTimer;
}

/** What became of {@link JsonRpcPeer.request}. */
export type Sent = { ok: true; id: JsonRpcId } | { ok: false; reason: string };

/**
 * A JSON-RPC 2.0 peer for a driver (Codex's app-server, ACP agents). It reads one line at a time
 * (`receive`, or `lines` for a {@link StdioChannel}) and never throws on one: a line that is not
 * JSON-RPC is a typed rejection and the run goes on, and a request of the peer's whose id can be read
 * is always answered (-32600 invalid, -32601 unknown method, -32603 a handler that threw), so an agent
 * waiting on an answer never hangs the run. This side's requests are correlated by id: each ends once,
 * through its handlers, called synchronously from the line that settles it (so the driver reports the
 * fact before the event that carries it); an answer to an id not pending is rejected; `close` fails every
 * pending request with `closed`; a request may carry its own bound (`timeoutMs`).
 */
export class JsonRpcPeer {
  readonly #options: JsonRpcPeerOptions;
  readonly #handlers: JsonRpcHandlers;
  readonly #pending: PendingRequests<{ value: JsonValue } | { error: JsonRpcError }>;
  readonly #version: boolean;
  #nextId: number;
  #closed = false;

  constructor(options: JsonRpcPeerOptions, handlers: JsonRpcHandlers) {
    this.#options = options;
    this.#handlers = handlers;
    this.#version = options.writeVersion ?? true;
    this.#nextId = options.firstId ?? 1;
    this.#pending = new PendingRequests(options.setTimer);
  }

  /** Requests of this side awaiting their answer. */
  get pending(): number {
    return this.#pending.size;
  }

  /** The peer as a stdio channel's reader: each line to {@link receive}, an overlong one to {@link overlong}. */
  get lines(): StdioLines {
    return {
      line: (text, lineNumber) => this.receive(text, `stdout line ${lineNumber}`),
      overlong: (rejection, _lineNumber, head) => this.overlong(rejection, head),
    };
  }

  /**
   * Sends a request; its result or failure goes to `handlers`, never before this returns. `timeoutMs`: it
   * fails `timeout` without an answer by then. Not sent (`ok: false`, handlers never called) once closed
   * or when the line cannot be written.
   */
  request(method: string, params: JsonValue | undefined, handlers: ResponseHandlers, options: { timeoutMs?: number } = {}): Sent {
    if (this.#closed) return { ok: false, reason: 'the JSON-RPC peer is closed' };
    const id = this.#nextId++;
    // Pending before it is written: an answer may come back within the write (an in-memory peer).
    this.#pending.add(
      id,
      {
        settled: (answer) => ('error' in answer ? handlers.failed({ kind: 'error', error: answer.error, reason: `${method} failed: ${answer.error.message} (${answer.error.code})` }) : handlers.result(answer.value)),
        failed: (failure) => handlers.failed(failure),
      },
      options.timeoutMs,
    );
    const written = this.#options.send(requestMessage(id, method, params, this.#version));
    if (written.ok) return { ok: true, id };
    this.#pending.forget(id);
    return written;
  }

  /** Sends a notification; false when it could not be written (or the peer is closed). */
  notify(method: string, params?: JsonValue): boolean {
    return !this.#closed && this.#options.send(notificationMessage(method, params, this.#version)).ok;
  }

  /** One line of the peer's (`where` names it in rejections). Nothing happens once closed. */
  receive(text: string, where: string): void {
    if (this.#closed) return;
    const decoded = decodeJsonObject(text, where);
    if (decoded.rejection !== undefined) return this.#handlers.rejected(decoded.rejection);
    const classified = classify(decoded.value, where);
    if (classified.invalid !== undefined) {
      const { rejection, problem, requestId, responseId } = classified.invalid;
      this.#handlers.rejected(rejection);
      if (requestId !== undefined) this.#answer(requestId, { error: { code: JSON_RPC_ERRORS.invalidRequest, message: `Invalid Request: ${problem}` } });
      if (responseId !== undefined) this.#pending.fail(responseId, `its answer was not valid JSON-RPC (${where})`);
      return;
    }
    const message = classified.message;
    switch (message.kind) {
      case 'notification':
        return this.#handlers.notification?.(message.method, message.params);
      case 'request':
        return this.#dispatch(message.id, message.method, message.params);
      case 'response':
        return this.#settle(message.id, { value: message.result }, where);
      case 'error':
        if (message.id === null) {
          return this.#handlers.rejected({ code: 'invalid-payload', reason: `${where} is an error response to no request (the peer could not read its id): code ${message.error.code}` });
        }
        return this.#settle(message.id, { error: message.error }, where);
    }
  }

  /**
   * A line too long to read (its `rejection` from the channel, its first bytes in `head`). When its top-level
   * members show it is a request of the peer's, it is answered -32600; a response to a pending request of
   * this side's fails that request. Either way nothing waits for it.
   */
  overlong(rejection: FrameRejection, head: string): void {
    if (this.#closed) return;
    this.#handlers.rejected(rejection);
    const members = topLevelMembers(head);
    const id = members.id;
    if (id === undefined) return;
    if (members.method) this.#answer(id, { error: { code: JSON_RPC_ERRORS.invalidRequest, message: 'Invalid Request: the message is longer than the line bound' } });
    else this.#pending.fail(id, 'its answer was longer than the line bound (maxFrameBytes)');
  }

  /** The channel is gone: every pending request fails `closed` with `reason`; nothing is read or sent any more. */
  close(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pending.close(reason);
  }

  #settle(id: JsonRpcId, answer: { value: JsonValue } | { error: JsonRpcError }, where: string): void {
    const settled = this.#pending.settle(id, answer);
    if (!settled.ok) this.#handlers.rejected({ code: 'out-of-order', reason: `${where} is ${settled.reason}` });
  }

  #dispatch(id: JsonRpcId, method: string, params: JsonValue | undefined): void {
    const requests = this.#handlers.requests;
    const handler = requests !== undefined && Object.hasOwn(requests, method) ? requests[method] : undefined;
    if (handler === undefined) {
      this.#answer(id, { error: { code: JSON_RPC_ERRORS.methodNotFound, message: `Method not found: ${method}` } });
      this.#handlers.unknownMethod?.(method, id);
      return;
    }
    const reply = this.#reply(id, method);
    try {
      handler(params, reply);
    } catch (error) {
      reply.error({ code: JSON_RPC_ERRORS.internalError, message: `Internal error: ${error instanceof Error ? error.message : String(error)}` });
    }
  }

  #reply(id: JsonRpcId, method: string): Reply {
    let answered = false;
    const answer = (body: { result: JsonValue } | { error: JsonRpcError }): boolean => {
      if (answered) return false;
      answered = true;
      return this.#answer(id, body);
    };
    return {
      id,
      key: requestKey(id),
      method,
      get answered() {
        return answered;
      },
      result: (value) => answer({ result: value }),
      error: (error) => answer({ error }),
    };
  }

  #answer(id: JsonRpcId, body: { result: JsonValue } | { error: JsonRpcError }): boolean {
    if (this.#closed) return false;
    return this.#options.send(responseMessage(id, body, this.#version)).ok;
  }
}

/**
 * The `id` and whether there is a `method` among the top-level members of a message's first bytes: read
 * up to the first nested object or array only, so a member of `params` is never taken for the message's.
 */
function topLevelMembers(head: string): { id?: JsonRpcId; method: boolean } {
  const open = head.indexOf('{');
  if (open === -1) return { method: false };
  const nested = head.slice(open + 1).search(/[{[]/);
  const prefix = nested === -1 ? head.slice(open) : head.slice(open, open + 1 + nested);
  const method = /(?:^\{|,)\s*"method"\s*:/.test(prefix);
  const id = /(?:^\{|,)\s*"id"\s*:\s*(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.){0,128}")\s*[,}]/.exec(prefix)?.[1];
  if (id === undefined) return { method };
  return { id: JSON.parse(id) as JsonRpcId, method };
}
