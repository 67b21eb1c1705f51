// fuseraft's approval requests and questions on the shared request desk: one response line each, in arrival order (fuseraft has no request ids).
import type { JsonObject } from '../../wire/index.js';
import { passthrough } from '../shared/event-drafts.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { Frame } from './frames.js';
import { acceptAnswer, acceptApproval, callbackError } from '../shared/requests.js';
import { RequestDesk } from '../shared/request-desk.js';
import type { DecidedBy } from '../shared/request-desk.js';
import { approvalRequestOf, questionRequestOf } from './prompts.js';
import type { AnswerQuestionCallback, ApprovalBase, ApprovalRequest, ApproveCallback, QuestionRequest } from '../../protocol/requests.js';

export interface DeskHandlers {
  /** The protocol's registered name, which the caller's `approve` sees as `request.protocol`. */
  protocol: ApprovalBase['protocol'];
  approve?: ApproveCallback | undefined;
  answerQuestion?: AnswerQuestionCallback | undefined;
}

export interface DeskOutput {
  /** Writes one response line to fuseraft's stdin. */
  respond(line: JsonObject): void;
  /** Publishes an event. */
  report(draft: RunEventDraftOf<'info'>): void;
}

/**
 * fuseraft has no request ids: "a response is simply the next matching line on stdin, so send exactly one
 * response per approval_request or question" (seed 002). The shared desk answers requests strictly one
 * after another in arrival order, so the responses are in order too; each request is keyed by its arrival.
 */
export class PromptDesk {
  readonly #handlers: DeskHandlers;
  readonly #out: DeskOutput;
  readonly #desk = new RequestDesk<boolean | string | null>();
  #arrivals = 0;

  constructor(handlers: DeskHandlers, out: DeskOutput) {
    this.#handlers = handlers;
    this.#out = out;
  }

  /** Requests received and not answered yet. */
  get waiting(): number {
    return this.#desk.waiting;
  }

  /** An `approval_request` arrived (`usable` false: it had no string kind, so it is denied unasked). */
  approvalRequested(frame: Frame, usable: boolean): void {
    const request = usable ? approvalRequestOf(frame, this.#handlers.protocol) : undefined;
    const kind = request?.kind ?? 'unreadable';
    this.#out.report(passthrough(frame, `approval requested: ${kind}${request?.known === false ? ' (unknown kind)' : ''}`));
    const approve = this.#handlers.approve;
    this.#desk.add({
      key: String(++this.#arrivals),
      invalid: request === undefined,
      ask: approve === undefined ? undefined : () => approve(request!),
      accept: (value) => acceptApproval(request!, value),
      respond: (approved, decidedBy, error) => this.#approvalAnswered(kind, approved === true, decidedBy, error),
    });
  }

  /** A `question` arrived (`usable` false: it had no string question, so it is skipped unasked). */
  questionAsked(frame: Frame, usable: boolean): void {
    this.#out.report(passthrough(frame, 'question asked'));
    const request: QuestionRequest | undefined = usable ? questionRequestOf(frame) : undefined;
    const answerQuestion = this.#handlers.answerQuestion;
    this.#desk.add({
      key: String(++this.#arrivals),
      invalid: request === undefined,
      ask: answerQuestion === undefined ? undefined : () => answerQuestion(request!),
      accept: acceptAnswer,
      respond: (answer, decidedBy, error) => this.#questionAnswered(typeof answer === 'string' ? answer : null, decidedBy, error),
    });
  }

  /**
   * The run is ending (cancel, close, protocol failure): the request being decided and every queued
   * one are answered now with the safe default, as are later ones; late callback results are ignored.
   * A fuseraft blocked on an approval reads nothing else, so this has to come before an interrupt.
   */
  shutDown(): void {
    this.#desk.shutDown();
  }

  #approvalAnswered(kind: ApprovalRequest['kind'], approved: boolean, decidedBy: DecidedBy, error: unknown): void {
    this.#out.respond({ type: 'approval_response', approved });
    this.#out.report({
      type: 'info',
      nativeType: 'approval_response',
      summary: `${approved ? 'approved' : 'denied'} ${kind}${decidedBy === 'callback' ? '' : ` (${decidedBy})`}`,
      kind,
      approved,
      decidedBy,
      ...callbackError(error),
    });
  }

  #questionAnswered(answer: string | null, decidedBy: DecidedBy, error: unknown): void {
    this.#out.respond({ type: 'question_response', answer });
    this.#out.report({
      type: 'info',
      nativeType: 'question_response',
      summary: answer === null ? `question skipped${decidedBy === 'callback' ? '' : ` (${decidedBy})`}` : 'question answered',
      answer,
      decidedBy,
      ...callbackError(error),
    });
  }
}
