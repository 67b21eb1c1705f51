// Answers fuseraft's approval requests and questions: one caller callback at a time, exactly one response each, in order.
import type { JsonObject } from '../../wire/index.js';
import { passthrough } from '../shared/event-drafts.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { Frame } from './frames.js';
import { approves } from '../shared/requests.js';
import { approvalRequestOf, questionRequestOf } from './prompts.js';
import type { AnswerQuestionCallback, ApprovalRequest, ApproveCallback, QuestionRequest } from '../../protocol/requests.js';
import type { DecidedBy } from '../shared/requests.js';


export interface DeskHandlers {
  protocol: 'fuseraft' | 'fuseraft-bridge' | 'fuseraft-serve';
  approve?: ApproveCallback | undefined;
  answerQuestion?: AnswerQuestionCallback | undefined;
}

export interface DeskOutput {
  /** Writes one response line to fuseraft's stdin. */
  respond(line: JsonObject): void;
  /** Publishes an event. */
  report(draft: RunEventDraftOf<'info'>): void;
}

type Item =
  | { kind: 'approval'; request: ApprovalRequest | undefined; answered: boolean }
  | { kind: 'question'; request: QuestionRequest | undefined; answered: boolean };

/**
 * fuseraft has no request ids: "a response is simply the next matching line on stdin, so send
 * exactly one response per approval_request or question" (seed 002). So requests are queued and
 * handled strictly one after another: the callback of the next request is called only once the
 * previous one is answered, and every request gets exactly one response line, in arrival order,
 * whatever the callback does (throws, never settles before a cancel, answers twice).
 */
export class PromptDesk {
  readonly #handlers: DeskHandlers;
  readonly #out: DeskOutput;
  readonly #queue: Item[] = [];
  /** The head request whose callback is still running. */
  #inFlight: Item | undefined;
  #shutDown = false;

  constructor(handlers: DeskHandlers, out: DeskOutput) {
    this.#handlers = handlers;
    this.#out = out;
  }

  /** Requests received and not answered yet. */
  get waiting(): number {
    return this.#queue.length + (this.#inFlight === undefined ? 0 : 1);
  }

  /** An `approval_request` arrived (`usable` false: it had no string kind, so it is denied unasked). */
  approvalRequested(frame: Frame, usable: boolean): void {
    const request = usable ? approvalRequestOf(frame, this.#handlers.protocol) : undefined;
    const kind = request?.kind ?? 'unreadable';
    this.#out.report(passthrough(frame, `approval requested: ${kind}${request?.known === false ? ' (unknown kind)' : ''}`));
    this.#queue.push({ kind: 'approval', request, answered: false });
    this.#pump();
  }

  /** A `question` arrived (`usable` false: it had no string question, so it is skipped unasked). */
  questionAsked(frame: Frame, usable: boolean): void {
    this.#out.report(passthrough(frame, 'question asked'));
    this.#queue.push({ kind: 'question', request: usable ? questionRequestOf(frame) : undefined, answered: false });
    this.#pump();
  }

  /**
   * The run is ending (cancel, close, protocol failure): the request being decided and every queued
   * one are answered now with the safe default, as are later ones; late callback results are ignored.
   * A fuseraft blocked on an approval reads nothing else, so this has to come before an interrupt.
   */
  shutDown(): void {
    this.#shutDown = true;
    const head = this.#inFlight;
    this.#inFlight = undefined;
    if (head !== undefined) this.#answer(head, undefined, 'shutdown');
    this.#pump();
  }

  #pump(): void {
    while (this.#inFlight === undefined && this.#queue.length > 0) {
      const item = this.#queue.shift()!;
      if (this.#shutDown) {
        this.#answer(item, undefined, 'shutdown');
        continue;
      }
      this.#ask(item);
    }
  }

  /** Calls the item's callback; answers at once when it returns a value, later when it returns a promise. */
  #ask(item: Item): void {
    const callback = item.kind === 'approval' ? this.#handlers.approve : this.#handlers.answerQuestion;
    if (item.request === undefined) return this.#answer(item, undefined, 'invalid-request');
    if (callback === undefined) return this.#answer(item, undefined, 'no-callback');
    let result: unknown;
    try {
      result = (callback as (request: unknown) => unknown)(item.request);
    } catch (error) {
      return this.#answer(item, undefined, 'callback-error', error);
    }
    if (!isThenable(result)) return this.#settled(item, result);
    this.#inFlight = item;
    // Promise.resolve adopts any thenable, and turns a throwing `then` into a rejection.
    Promise.resolve(result).then(
      (value) => {
        if (this.#inFlight !== item) return; // answered by shutDown meanwhile
        this.#inFlight = undefined;
        this.#settled(item, value);
        this.#pump();
      },
      (error: unknown) => {
        if (this.#inFlight !== item) return;
        this.#inFlight = undefined;
        this.#answer(item, undefined, 'callback-error', error);
        this.#pump();
      },
    );
  }

  /** The callback's value: checked, then answered. */
  #settled(item: Item, value: unknown): void {
    if (item.kind === 'question') {
      if (typeof value === 'string' || value === null) return this.#answer(item, value, 'callback');
      return this.#answer(item, undefined, 'callback-error', new TypeError('answerQuestion returned neither a string nor null'));
    }
    const request = item.request!;
    if (value === true && !request.known) return this.#answer(item, false, 'unknown-kind');
    if (typeof value !== 'boolean' && value !== 'approve-unknown-kind') {
      return this.#answer(item, false, 'callback-error', new TypeError('approve returned neither a boolean nor "approve-unknown-kind"'));
    }
    this.#answer(item, approves(request, value), 'callback');
  }

  /** Writes the item's one response and reports it. `value` undefined means the safe default. */
  #answer(item: Item, value: string | boolean | null | undefined, decidedBy: DecidedBy, error?: unknown): void {
    if (item.answered) return;
    item.answered = true;
    const why = error === undefined ? {} : { callbackError: error instanceof Error ? error.message : String(error) };
    if (item.kind === 'approval') {
      const approved = value === true;
      const kind = item.request?.kind ?? 'unreadable';
      this.#out.respond({ type: 'approval_response', approved });
      this.#out.report({
        type: 'info',
        nativeType: 'approval_response',
        summary: `${approved ? 'approved' : 'denied'} ${kind}${decidedBy === 'callback' ? '' : ` (${decidedBy})`}`,
        kind,
        approved,
        decidedBy,
        ...why,
      });
      return;
    }
    const answer = typeof value === 'string' ? value : null;
    this.#out.respond({ type: 'question_response', answer });
    this.#out.report({
      type: 'info',
      nativeType: 'question_response',
      summary: answer === null ? `question skipped${decidedBy === 'callback' ? '' : ` (${decidedBy})`}` : 'question answered',
      answer,
      decidedBy,
      ...why,
    });
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
