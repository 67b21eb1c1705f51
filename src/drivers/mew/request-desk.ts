// mew's requests (permissions, plans, goals, questions) on the shared request desk: keyed by request_id, withdrawn by request_resolved; those it cannot answer reported blocked.
import { passthrough } from '../shared/event-drafts.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import { acceptApproval, callbackError } from '../shared/requests.js';
import { RequestDesk } from '../shared/request-desk.js';
import type { DecidedBy, DeskRequest } from '../shared/request-desk.js';
import type { AnswerQuestionCallback, ApproveCallback } from '../../protocol/requests.js';
import type { MewMessage } from './messages.js';
import { isRequest, readRequestId, requestOf } from './requests.js';
import type { MewRequest, RequestId } from './requests.js';

/** Who settled a request: {@link DecidedBy}, or another client of the daemon (`request_resolved` came first: no response). */
export type MewDecidedBy = DecidedBy | 'another-client';

export interface MewDeskHandlers {
  /** The protocol's registered name (`options.protocol`), which `approve` sees as `request.protocol`. */
  protocol: string;
  approve?: ApproveCallback | undefined;
  answerQuestion?: AnswerQuestionCallback | undefined;
}

export interface MewDeskOutput {
  /** Sends one response message (`permission_response`, `plan_approval_response`, `goal_response`, `ask_user_response`). */
  respond(message: MewMessage): void;
  /** Publishes an event. */
  report(draft: RunEventDraftOf<'info'>): void;
  /** mew waits on a request subvisor cannot answer (see DriverSink.blocked); `key` names it. */
  blocked(key: string, what: string): void;
  /** The request reported blocked was settled (another client answered it, or its turn ended). */
  unblocked(key: string): void;
}

/** A permission's answer (allowed or not), or a question's answers (undefined: cancelled). */
type Answer = boolean | string[];

/**
 * mew sends a permission request or a question to every attached client and takes the first answer;
 * `request_resolved` then tells everyone it is settled. So each request gets exactly one response from
 * this client unless another client settled it first (withdrawn from the desk: a queued request is dropped
 * unasked, a callback still running is ignored when it returns). Without a callback a permission is denied
 * and a question cancelled. A request that cannot be answered (its id cannot be echoed, or its kind has
 * no response) is surfaced and reported blocked, so the run core bounds the wait; it is unblocked when
 * `request_resolved` names it or its turn ends (the agent waits on nothing then).
 */
export class MewDesk {
  readonly #handlers: MewDeskHandlers;
  readonly #out: MewDeskOutput;
  readonly #desk: RequestDesk<Answer>;
  /** Counts requests without any id, to name each one. */
  #unnamed = 0;

  constructor(handlers: MewDeskHandlers, out: MewDeskOutput) {
    this.#handlers = handlers;
    this.#out = out;
    this.#desk = new RequestDesk<Answer>(out);
  }

  /** Requests received and not settled yet. */
  get waiting(): number {
    return this.#desk.waiting;
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
    const request = requestOf(message, id.id, this.#handlers.protocol);
    if (request === undefined) {
      this.#block(message, id.key, 'subvisor knows no response to this kind of request (a newer mew build\'s)');
      return true;
    }
    this.#out.report(passthrough(message, request.ask === 'approval' ? `approval requested: ${request.subject}` : `${request.subject} asked`));
    this.#desk.add(this.#deskRequest(id.key, id.id, request));
    return true;
  }

  /** The turn ended: mew waits on none of its requests any longer. */
  turnEnded(): void {
    this.#desk.unblockAll();
  }

  /** The run is ending: every open request gets its safe default now, as do later ones; late callback results are ignored. */
  shutDown(): void {
    this.#desk.shutDown();
  }

  #deskRequest(key: string, id: RequestId, request: MewRequest): DeskRequest<Answer> {
    const base = {
      key,
      respond: (answer: Answer | undefined, decidedBy: DecidedBy, error?: unknown) => {
        this.#out.respond(request.ask === 'approval' ? request.respond(answer === true) : request.respond(Array.isArray(answer) ? answer : undefined));
        this.#report(id, request, answer, decidedBy, error);
      },
      withdrawn: () => this.#report(id, request, undefined, 'another-client'),
    };
    if (request.ask === 'approval') {
      const approve = this.#handlers.approve;
      return { ...base, ask: approve === undefined ? undefined : () => approve(request.approval), accept: (value) => acceptApproval(request.approval, value) };
    }
    const answerQuestion = this.#handlers.answerQuestion;
    return {
      ...base,
      // The questions one after another; a null answer (or the request settled meanwhile) cancels them all.
      ask: answerQuestion === undefined ? undefined : async (current) => {
        const answers: string[] = [];
        for (const question of request.questions) {
          const value: unknown = await answerQuestion(question);
          if (value === null) return null;
          if (typeof value !== 'string') throw new TypeError('answerQuestion returned neither a string nor null');
          answers.push(value);
          if (!current()) return null;
        }
        return answers;
      },
      accept: (value) => ({ answer: Array.isArray(value) ? (value as string[]) : undefined }),
    };
  }

  /** A request no response can answer: surfaced to the caller, reported blocked to the core. */
  #block(message: MewMessage, key: string, problem: string): void {
    this.#out.report(passthrough(message, `${message.type} cannot be answered: ${problem}`));
    this.#desk.block(key, `a mew ${message.type} (${problem})`);
  }

  /** `request_resolved {request_id}`: a client (maybe this one) settled it; withdrawn from the desk if this client has not answered yet. */
  #resolved(message: MewMessage): void {
    const { key } = readRequestId(message['request_id']);
    if (key !== undefined && this.#desk.unblock(key)) {
      this.#out.report(passthrough(message, 'a request subvisor could not answer was resolved'));
      return;
    }
    if (key === undefined || !this.#desk.has(key)) {
      this.#out.report(passthrough(message, 'request resolved'));
      return;
    }
    this.#out.report(passthrough(message, 'request resolved by another client: dismissed unanswered'));
    this.#desk.withdraw(key);
  }

  #report(id: RequestId, request: MewRequest, value: Answer | undefined, decidedBy: MewDecidedBy, error?: unknown): void {
    const why = callbackError(error);
    const by = decidedBy === 'callback' ? '' : ` (${decidedBy})`;
    const requestId = String(id);
    if (request.ask === 'approval') {
      const approved = value === true;
      const verb = decidedBy === 'another-client' ? 'left to another client:' : approved ? 'allowed' : 'denied';
      this.#out.report({ type: 'info', nativeType: request.responseType, summary: `${verb} ${request.subject}${by}`, kind: request.approval.kind, requestId, approved, decidedBy, ...why });
      return;
    }
    const answered = Array.isArray(value);
    const summary = decidedBy === 'another-client' ? 'question left to another client' : answered ? 'question answered' : `question cancelled${by}`;
    this.#out.report({ type: 'info', nativeType: 'ask_user_response', summary, requestId, answered, decidedBy, ...why });
  }
}
