// Answers mew's requests (permissions, plans, goals, questions): one caller callback at a time, at most one response per request; reports those it cannot answer.
import { passthrough } from '../shared/event-drafts.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { DecidedBy } from '../shared/requests.js';
import { approves } from '../shared/requests.js';
import type { AnswerQuestionCallback, ApproveCallback } from '../../protocol/requests.js';
import type { MewMessage } from './messages.js';
import { isRequest, readRequestId, requestOf } from './requests.js';
import type { MewRequest, RequestId } from './requests.js';

/** Who settled a request: {@link DecidedBy}, or another client of the daemon (`request_resolved` came first: no response). */
export type MewDecidedBy = DecidedBy | 'another-client';

export interface RequestDeskHandlers {
  approve?: ApproveCallback | undefined;
  answerQuestion?: AnswerQuestionCallback | undefined;
}

export interface RequestDeskOutput {
  /** Sends one response message (`permission_response`, `plan_approval_response`, `goal_response`, `ask_user_response`). */
  respond(message: MewMessage): void;
  /** Publishes an event. */
  report(draft: RunEventDraftOf<'info'>): void;
  /** mew waits on a request subvisor cannot answer (see DriverSink.blocked); `key` names it. */
  blocked(key: string, what: string): void;
  /** The request reported blocked was settled (another client answered it, or its turn ended). */
  unblocked(key: string): void;
}

interface Item {
  key: string;
  id: RequestId;
  request: MewRequest;
  settled: boolean;
}

/**
 * mew sends a permission request or a question to every attached client and takes the first answer;
 * `request_resolved` then tells everyone it is settled. So: the caller's callbacks run one at a time,
 * in arrival order (as for fuseraft); each request gets exactly one response from this client unless
 * another client settled it first, in which case it gets none (a queued request is dropped unasked, a
 * callback still running is ignored when it returns). Without a callback a permission is denied and a
 * question cancelled. Whatever a callback does (throw, reject, return nonsense, never settle before the
 * run ends) the response is the safe default. A request that cannot be answered (its id cannot be
 * echoed) is surfaced and reported blocked, so the run core bounds the wait; it is unblocked when
 * `request_resolved` names it or its turn ends (the agent waits on nothing then).
 */
export class RequestDesk {
  readonly #handlers: RequestDeskHandlers;
  readonly #out: RequestDeskOutput;
  readonly #queue: Item[] = [];
  /** Every request not settled yet, by key (queued or in flight). */
  readonly #open = new Map<string, Item>();
  /** Every request key seen: a repeated one (a re-broadcast) is the same request and keeps its one answer. */
  readonly #seen = new Set<string>();
  /** Requests reported blocked and not settled yet, by key. */
  readonly #blocked = new Set<string>();
  /** Counts requests without any id, to name each one. */
  #unnamed = 0;
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

  /** Takes a request or a `request_resolved`; false for any other message. */
  take(message: MewMessage): boolean {
    if (message.type === 'request_resolved') {
      this.#resolved(message);
      return true;
    }
    if (!isRequest(message)) return false;
    const id = readRequestId(message['request_id']);
    if (!id.answerable) {
      this.#block(message, id.key ?? `${message.type} #${++this.#unnamed}`, id.problem);
      return true;
    }
    const request = requestOf(message, id.id);
    if (request === undefined) {
      this.#block(message, id.key, 'subvisor knows no response to this kind of request (a newer mew build\'s)');
      return true;
    }
    this.#out.report(passthrough(message, request.ask === 'approval' ? `approval requested: ${request.subject}` : `${request.subject} asked`));
    this.#enqueue({ key: id.key, id: id.id, request, settled: false });
    return true;
  }

  /** The turn ended: mew waits on none of its requests any longer. */
  turnEnded(): void {
    for (const key of this.#blocked) this.#out.unblocked(key);
    this.#blocked.clear();
  }

  /** The run is ending: every open request gets its safe default now, as do later ones; late callback results are ignored. */
  shutDown(): void {
    this.#shutDown = true;
    const head = this.#inFlight;
    this.#inFlight = undefined;
    if (head !== undefined) this.#answer(head, undefined, 'shutdown');
    this.#pump();
  }

  /** A request no response can answer: surfaced to the caller, reported blocked to the core. */
  #block(message: MewMessage, key: string, problem: string): void {
    this.#out.report(passthrough(message, `${message.type} cannot be answered: ${problem}`));
    if (this.#blocked.has(key)) return;
    this.#blocked.add(key);
    this.#out.blocked(key, `a mew ${message.type} (${problem})`);
  }

  /** `request_resolved {request_id}`: a client (maybe this one) settled it; drop it if this client has not answered yet. */
  #resolved(message: MewMessage): void {
    const { key } = readRequestId(message['request_id']);
    if (key !== undefined && this.#blocked.delete(key)) {
      this.#out.report(passthrough(message, 'a request subvisor could not answer was resolved'));
      this.#out.unblocked(key);
      return;
    }
    const item = key === undefined ? undefined : this.#open.get(key);
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

  #enqueue(item: Item): void {
    if (this.#seen.has(item.key)) return;
    this.#seen.add(item.key);
    this.#open.set(item.key, item);
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
    const callback = item.request.ask === 'approval' ? this.#handlers.approve : this.#handlers.answerQuestion;
    if (callback === undefined) return this.#answer(item, undefined, 'no-callback');
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
    const request = item.request;
    try {
      if (request.ask === 'approval') {
        const value: unknown = await this.#handlers.approve!(request.approval);
        if (typeof value !== 'boolean' && value !== 'approve-unknown-kind') {
          return { answer: false, error: new TypeError('approve returned neither a boolean nor "approve-unknown-kind"') };
        }
        return { answer: approves(request.approval, value) };
      }
      const answers: string[] = [];
      for (const question of request.questions) {
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
    const request = item.request;
    this.#out.respond(request.ask === 'approval' ? request.respond(value === true) : request.respond(Array.isArray(value) ? value : undefined));
    this.#report(item, value, decidedBy, error);
  }

  #settle(item: Item): void {
    item.settled = true;
    this.#open.delete(item.key);
  }

  #report(item: Item, value: boolean | string[] | undefined, decidedBy: MewDecidedBy, error?: unknown): void {
    const why = error === undefined ? {} : { callbackError: error instanceof Error ? error.message : String(error) };
    const by = decidedBy === 'callback' ? '' : ` (${decidedBy})`;
    const requestId = String(item.id);
    if (item.request.ask === 'approval') {
      const approved = value === true;
      const verb = decidedBy === 'another-client' ? 'left to another client:' : approved ? 'allowed' : 'denied';
      const { responseType, subject, approval } = item.request;
      this.#out.report({ type: 'info', nativeType: responseType, summary: `${verb} ${subject}${by}`, kind: approval.kind, requestId, approved, decidedBy, ...why });
      return;
    }
    const answered = Array.isArray(value);
    const summary = decidedBy === 'another-client' ? 'question left to another client' : answered ? 'question answered' : `question cancelled${by}`;
    this.#out.report({ type: 'info', nativeType: 'ask_user_response', summary, requestId, answered, decidedBy, ...why });
  }
}
