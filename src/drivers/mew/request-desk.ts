// Answers mew's permission requests and questions: one caller callback at a time, at most one response per request id.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { passthrough } from '../fuseraft/event-drafts.js';
import type { RunEventDraftOf } from '../../run/types/index.js';
import type { DecidedBy } from '../fuseraft/prompt-desk.js';
import { approves, fieldsOf } from '../fuseraft/prompts.js';
import type { AnswerQuestionCallback, ApprovalRequest, ApproveCallback, QuestionRequest } from '../fuseraft/prompts.js';
import { isObject, stringField } from './messages.js';
import type { MewMessage } from './messages.js';

/** Who settled a request: {@link DecidedBy}, or another client of the daemon (`request_resolved` came first: no response). */
export type MewDecidedBy = DecidedBy | 'another-client';

export interface RequestDeskHandlers {
  approve?: ApproveCallback | undefined;
  answerQuestion?: AnswerQuestionCallback | undefined;
}

export interface RequestDeskOutput {
  /** Sends one response message (`permission_response`, `ask_user_response`). */
  respond(message: MewMessage): void;
  /** Publishes an event. */
  report(draft: RunEventDraftOf<'info'>): void;
}

/**
 * mew-protocol's `PermissionDecision` is `allow_once | allow_session | deny`, `rename_all = "snake_case"`
 * in every build (also those whose message tags are PascalCase): any other value fails mew's decoding of
 * the whole `permission_response`, and the request stays pending. subvisor allows once.
 */
const ALLOW = 'allow_once';
const DENY = 'deny';

type Item =
  | { kind: 'permission'; requestId: string; request: ApprovalRequest; settled: boolean }
  | { kind: 'question'; requestId: string; questions: QuestionRequest[]; settled: boolean };

/**
 * mew sends a permission request or a question to every attached client and takes the first answer;
 * `request_resolved` then tells everyone it is settled. So: the caller's callbacks run one at a time,
 * in arrival order (as for fuseraft); each request gets exactly one response from this client unless
 * another client settled it first, in which case it gets none (a queued request is dropped unasked, a
 * callback still running is ignored when it returns). Without a callback a permission is denied and a
 * question cancelled. Whatever a callback does (throw, reject, return nonsense, never settle before the
 * run ends) the response is the safe default.
 */
export class RequestDesk {
  readonly #handlers: RequestDeskHandlers;
  readonly #out: RequestDeskOutput;
  readonly #queue: Item[] = [];
  /** Every request not settled yet, by id (queued or in flight). */
  readonly #open = new Map<string, Item>();
  /** Every request id seen: a repeated one (a re-broadcast) is the same request and keeps its one answer. */
  readonly #seen = new Set<string>();
  #inFlight: Item | undefined;
  #shutDown = false;

  constructor(handlers: RequestDeskHandlers, out: RequestDeskOutput) {
    this.#handlers = handlers;
    this.#out = out;
  }

  /** Requests received and not settled yet. */
  get waiting(): number {
    return this.#open.size;
  }

  /** A `permission_request {request_id, tool_name, input}` (request_id checked by readMessage). */
  permissionRequested(message: MewMessage): void {
    const requestId = message['request_id'] as string;
    const request = permissionRequestOf(message, requestId);
    this.#out.report(passthrough(message, `permission requested: ${toolOf(request)}`));
    this.#enqueue({ kind: 'permission', requestId, request, settled: false });
  }

  /** An `ask_user_request {request_id, call_id, questions}`. */
  questionsAsked(message: MewMessage): void {
    const requestId = message['request_id'] as string;
    const questions = Array.isArray(message['questions']) ? message['questions'].map(questionOf) : [];
    this.#out.report(passthrough(message, `${questions.length === 1 ? 'a question' : `${questions.length} questions`} asked`));
    this.#enqueue({ kind: 'question', requestId, questions, settled: false });
  }

  /** `request_resolved {request_id}`: a client (maybe this one) settled it; drop it if this client has not answered yet. */
  resolved(message: MewMessage): void {
    const requestId = message['request_id'] as string;
    const item = this.#open.get(requestId);
    if (item === undefined) {
      this.#out.report(passthrough(message, 'request resolved'));
      return;
    }
    this.#settle(item);
    const index = this.#queue.indexOf(item);
    if (index >= 0) this.#queue.splice(index, 1);
    this.#out.report(passthrough(message, 'request resolved by another client: dismissed unanswered'));
    this.#report(item, undefined, 'another-client');
    if (this.#inFlight === item) {
      this.#inFlight = undefined;
      this.#pump();
    }
  }

  /** The run is ending: every open request gets its safe default now, as do later ones; late callback results are ignored. */
  shutDown(): void {
    this.#shutDown = true;
    const head = this.#inFlight;
    this.#inFlight = undefined;
    if (head !== undefined) this.#answer(head, undefined, 'shutdown');
    this.#pump();
  }

  #enqueue(item: Item): void {
    if (this.#seen.has(item.requestId)) return;
    this.#seen.add(item.requestId);
    this.#open.set(item.requestId, item);
    this.#queue.push(item);
    this.#pump();
  }

  #pump(): void {
    while (this.#inFlight === undefined && this.#queue.length > 0) {
      const item = this.#queue.shift()!;
      if (this.#shutDown) this.#answer(item, undefined, 'shutdown');
      else this.#ask(item);
    }
  }

  #ask(item: Item): void {
    if (item.kind === 'permission' && this.#handlers.approve === undefined) return this.#answer(item, undefined, 'no-callback');
    if (item.kind === 'question' && this.#handlers.answerQuestion === undefined) return this.#answer(item, undefined, 'no-callback');
    this.#inFlight = item;
    // #decide never rejects: every failure of a callback is an answer (the safe default).
    void this.#decide(item).then((value) => {
      if (this.#inFlight !== item) return; // settled meanwhile (shutdown, another client)
      this.#inFlight = undefined;
      this.#answer(item, value.answer, value.error === undefined ? 'callback' : 'callback-error', value.error);
      this.#pump();
    });
  }

  /** Runs the callback(s) of one item; never rejects. `answer` undefined means the safe default. */
  async #decide(item: Item): Promise<{ answer: boolean | string[] | undefined; error?: unknown }> {
    try {
      if (item.kind === 'permission') {
        const value: unknown = await this.#handlers.approve!(item.request);
        if (typeof value !== 'boolean' && value !== 'approve-unknown-kind') {
          return { answer: false, error: new TypeError('approve returned neither a boolean nor "approve-unknown-kind"') };
        }
        return { answer: approves(item.request, value) };
      }
      const answers: string[] = [];
      for (const question of item.questions) {
        const value: unknown = await this.#handlers.answerQuestion!(question);
        if (value === null) return { answer: undefined };
        if (typeof value !== 'string') return { answer: undefined, error: new TypeError('answerQuestion returned neither a string nor null') };
        answers.push(value);
        if (this.#inFlight !== item) return { answer: undefined };
      }
      return { answer: answers };
    } catch (error) {
      return { answer: undefined, error };
    }
  }

  /** Sends the item's one response and reports it. `value` undefined means the safe default (deny, cancel). */
  #answer(item: Item, value: boolean | string[] | undefined, decidedBy: MewDecidedBy, error?: unknown): void {
    if (item.settled) return;
    this.#settle(item);
    if (item.kind === 'permission') {
      const decision = value === true ? ALLOW : DENY;
      this.#out.respond({ type: 'permission_response', request_id: item.requestId, decision });
    } else {
      const answers = Array.isArray(value) ? value : [];
      this.#out.respond({ type: 'ask_user_response', request_id: item.requestId, answers, cancelled: !Array.isArray(value) });
    }
    this.#report(item, value, decidedBy, error);
  }

  #settle(item: Item): void {
    item.settled = true;
    this.#open.delete(item.requestId);
  }

  #report(item: Item, value: boolean | string[] | undefined, decidedBy: MewDecidedBy, error?: unknown): void {
    const why = error === undefined ? {} : { callbackError: error instanceof Error ? error.message : String(error) };
    const by = decidedBy === 'callback' ? '' : ` (${decidedBy})`;
    if (item.kind === 'permission') {
      const tool = toolOf(item.request);
      const approved = value === true;
      const verb = decidedBy === 'another-client' ? 'left to another client:' : approved ? 'allowed' : 'denied';
      this.#out.report({ type: 'info', nativeType: 'permission_response', summary: `${verb} ${tool}${by}`, requestId: item.requestId, approved, decidedBy, ...why });
      return;
    }
    const answered = Array.isArray(value);
    const summary = decidedBy === 'another-client' ? 'question left to another client' : answered ? 'question answered' : `question cancelled${by}`;
    this.#out.report({ type: 'info', nativeType: 'ask_user_response', summary, requestId: item.requestId, answered, decidedBy, ...why });
  }
}

/** The request `approve` receives for a `permission_request`: known when it names its tool. */
export function permissionRequestOf(message: MewMessage, requestId: string): ApprovalRequest {
  const fields = fieldsOf(message);
  const toolName = stringField(message, 'tool_name');
  if (toolName === undefined) return { protocol: 'mew', kind: 'tool_permission', known: false, fields };
  const input: JsonValue = message['input'] === undefined ? null : structuredClone(message['input']);
  return { protocol: 'mew', kind: 'tool_permission', known: true, requestId, toolName, input, fields };
}

function toolOf(request: ApprovalRequest): string {
  return request.known && request.kind === 'tool_permission' ? request.toolName : 'an unnamed tool';
}

/** One entry of `ask_user_request.questions`: a string, or an object with `question` (or `text`) and `options`. */
function questionOf(entry: JsonValue): QuestionRequest {
  if (typeof entry === 'string') return { question: entry, options: [], allowOther: true, fields: { question: entry } };
  const source: JsonObject = isObject(entry) ? entry : {};
  const options = Array.isArray(source['options']) ? source['options'].filter((option): option is string => typeof option === 'string') : [];
  const allowOther = source['allow_other'] ?? source['allowOther'];
  return {
    question: stringField(source, 'question') ?? stringField(source, 'text') ?? '',
    options,
    allowOther: typeof allowOther === 'boolean' ? allowOther : options.length === 0,
    fields: structuredClone(source),
  };
}
