// ACP prompt turns, one at a time: session/prompt sent and open at once, session/cancel of it, its answer (a stop reason and usage, or a JSON-RPC error) as the turn's end.
import { addUsage } from '../../wire/index.js';
import type { JsonObject, JsonValue, Usage } from '../../wire/index.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import type { RequestFailure } from '../shared/jsonrpc/peer.js';
import { boundedAnswer } from '../shared/session.js';
import type { ControlVerdict, SessionAnswer } from '../shared/session.js';
import { errorMessageOf, promptModels, promptRateLimit, promptUsage } from './messages.js';
import type { StdioSessionFacts } from '../shared/stdio/session-io.js';
import type { UpdateMap } from './updates.js';

/** Who asked for a turn: the control (its ref) and what it was. */
export interface TurnOrigin {
  ref: number | undefined;
  kind: 'task' | 'prompt' | 'steer' | 'follow-up' | 'final';
  text: string;
  /** A follow-up that waited for the turn before it: accepted already, so its turn only delivers it. */
  held?: true;
}

/** How a turn ended: ACP's stop reason, or `error` when the prompt was answered with an error. */
export type TurnEnd = 'end_turn' | 'max_tokens' | 'max_turn_requests' | 'refusal' | 'cancelled' | 'error';

/** The prompt in flight: its turn number, who asked, whether session/cancel was sent. */
interface Running {
  number: number;
  origin: TurnOrigin;
  cancelled: boolean;
}

const STOP_REASONS: ReadonlySet<string> = new Set(['end_turn', 'max_tokens', 'max_turn_requests', 'refusal', 'cancelled']);

/** Sends a request (unbounded: a prompt lasts as long as its turn); false when it could not be written. */
export type SendRequest = (method: string, params: JsonObject, handlers: { result(value: JsonValue): void; failed(failure: RequestFailure): void }) => boolean;

export interface TurnHost {
  sessionId(): string;
  /** The turn ended (or never started): what comes next is the session's. */
  ended(): void;
  notify(method: string, params: JsonObject): boolean;
}

/**
 * The running prompt and how the past ones ended. A turn opens when its `session/prompt` is written (ACP answers a
 * prompt only when its turn is over) and ends with that answer: its `stopReason` (`cancelled` -> the core's
 * `aborted`), its usage, its answer (the last message); a JSON-RPC error ends it `error` with the agent's message.
 */
export class AcpTurns {
  readonly #send: SendRequest;
  readonly #facts: StdioSessionFacts;
  readonly #host: TurnHost;
  readonly #updates: UpdateMap;
  readonly #maxAnswerChars: number;
  #running: Running | undefined;
  #count = 0;
  #last: { end: TurnEnd | undefined; error: string | undefined } = { end: undefined, error: undefined };
  #answer: SessionAnswer | undefined;
  #usage: Usage | undefined;
  #costUsd = 0;
  #model: string | undefined;

  constructor(send: SendRequest, facts: StdioSessionFacts, host: TurnHost, updates: UpdateMap, maxAnswerChars: number) {
    this.#send = send;
    this.#facts = facts;
    this.#host = host;
    this.#updates = updates;
    this.#maxAnswerChars = maxAnswerChars;
  }

  get last(): { end: TurnEnd | undefined; error: string | undefined } {
    return this.#last;
  }

  /** The answer of the latest turn that ended with one. */
  get answer(): SessionAnswer | undefined {
    return this.#answer;
  }

  /** The usage of every turn. */
  get usage(): Usage | undefined {
    return this.#usage;
  }

  /**
   * `session/prompt` for `origin`: the turn is open once it is written (the asking control accepted, a steer or
   * follow-up delivered). A rejection when it could not be written (nothing runs: the host hears the turn ended).
   */
  start(origin: TurnOrigin): ControlVerdict | undefined {
    const params = { sessionId: this.#host.sessionId(), prompt: [{ type: 'text', text: origin.text }] };
    const turn = { number: this.#count + 1, origin, cancelled: false };
    this.#running = turn;
    const sent = this.#send('session/prompt', params, { result: (value) => this.#answered(turn, value), failed: (failure) => this.#failed(turn, failure) });
    if (!sent) {
      this.#running = undefined;
      this.#host.ended();
      return origin.ref === undefined || origin.kind === 'task' ? undefined : { ref: origin.ref, status: 'rejected', reason: "the agent's stdin is closed" };
    }
    this.#count = turn.number;
    this.#facts.turnStarted(turn.number);
    this.#facts.event({ type: 'turn-started', turn: turn.number });
    if (origin.kind === 'steer' || origin.kind === 'follow-up') {
      this.#facts.event({ type: origin.kind === 'steer' ? 'steering-injected' : 'follow-up-injected', text: origin.text, ref: origin.ref! });
      if (origin.held === true) this.#facts.delivery(origin.ref!, 'injected');
    }
    if (origin.ref === undefined || origin.held === true) return undefined;
    // The task was sent by the session itself: no control returns its verdict.
    if (origin.kind === 'task') return void this.#facts.ack(origin.ref, 'accepted');
    return { ref: origin.ref, status: 'accepted', ...(origin.kind === 'steer' || origin.kind === 'follow-up' ? { injected: true as const } : {}) };
  }

  /** `session/cancel` of the running turn (its prompt then answers `cancelled`); false when none runs. */
  cancel(): boolean {
    const turn = this.#running;
    if (turn === undefined) return false;
    if (!turn.cancelled) {
      turn.cancelled = true;
      this.#host.notify('session/cancel', { sessionId: this.#host.sessionId() });
    }
    return true;
  }

  #answered(turn: Running, value: JsonValue): void {
    const result = isObject(value) ? value : {};
    const stop = stringField(result, 'stopReason');
    if (stop === undefined || !STOP_REASONS.has(stop)) {
      return this.#end(turn, 'error', undefined, `the agent answered session/prompt with the stop reason ${JSON.stringify(stop ?? null)}`);
    }
    for (const model of promptModels(result)) {
      if (model === this.#model) continue;
      this.#model = model;
      this.#facts.event({ type: 'llm-start', model });
    }
    this.#end(turn, stop as TurnEnd, promptUsage(result), stop === 'refusal' ? 'the agent refused to go on (stopReason refusal)' : undefined);
  }

  #failed(turn: Running, failure: RequestFailure): void {
    const error = failure.kind === 'error' ? errorMessageOf(failure.error.message) : failure.reason;
    const news = failure.kind === 'error' ? promptRateLimit(failure.error.code, error) : undefined;
    if (news !== undefined) this.#facts.rateLimit(news);
    // A prompt cancelled that an agent answers with an error (ACP says it must not, but may) still ended cancelled.
    this.#end(turn, turn.cancelled && failure.kind === 'error' ? 'cancelled' : 'error', undefined, error);
    if (news !== undefined) this.#facts.event({ type: 'rate-limit', ...news });
  }

  #end(turn: Running, end: TurnEnd, reported: Usage | undefined, error: string | undefined): void {
    if (this.#running !== turn) return;
    this.#running = undefined;
    const text = this.#updates.endTurn(end === 'end_turn');
    const usage = this.#turnUsage(reported);
    const answer = end === 'error' || end === 'cancelled' || text === '' ? undefined : boundedAnswer(text, this.#maxAnswerChars);
    if (answer !== undefined) this.#answer = answer;
    this.#last = { end, error: end === 'error' || end === 'refusal' ? error : undefined };
    if (usage !== undefined) this.#usage = addUsage(this.#usage ?? {}, { ...usage });
    const stopReason = end === 'cancelled' ? 'aborted' : end;
    this.#facts.turnCompleted(turn.number, stopReason, usage, answer?.truncated === false ? answer.text : undefined);
    // The run's state moves before the event is published: a listener may send the next prompt from it.
    this.#host.ended();
    const draft: RunEventDraftOf<'turn-complete'> = { type: 'turn-complete', turn: turn.number, stopReason };
    if (usage !== undefined) draft.usage = usage;
    if (this.#last.error !== undefined) draft.error = this.#last.error;
    this.#facts.event(draft);
  }

  /** The turn's usage: the prompt answer's tokens, and what `usage_update`'s cumulative cost grew by during it. */
  #turnUsage(reported: Usage | undefined): Usage | undefined {
    const cost = this.#updates.costUsd;
    if (cost === undefined || cost <= this.#costUsd) return reported;
    const grown = cost - this.#costUsd;
    this.#costUsd = cost;
    return addUsage(reported === undefined ? {} : { ...reported }, { costUsd: grown });
  }
}

