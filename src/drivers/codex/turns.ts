// Codex's turns, one at a time: turn/start answered with the turn, turn/steer into it, turn/interrupt of it, turn/completed as its facts (stop reason, usage, the answer, the model's error).
import { addUsage } from '../../wire/index.js';
import type { JsonObject, JsonValue, Usage } from '../../wire/index.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import { isObject } from '../shared/json-kinds.js';
import type { RequestFailure } from '../shared/jsonrpc/peer.js';
import { boundedAnswer } from '../shared/session.js';
import type { ControlVerdict, SessionAnswer } from '../shared/session.js';
import { errorMessageOf, turnIdOf } from './messages.js';
import { textInput, turnStartParams } from './requests-out.js';
import type { StdioSessionFacts } from '../shared/stdio/session-io.js';
import { TurnRecord } from './turn-record.js';
import type { HeldInput, TurnOrigin, TurnStatus } from './turn-record.js';

/** Sends one bounded request of subvisor's; false when it could not be written. */
export type SendRequest = (method: string, params: JsonObject, handlers: { result(value: JsonValue): void; failed(failure: RequestFailure): void }) => boolean;

/** What the turns ask of the session that owns the run's state. */
export interface TurnHost {
  threadId(): string;
  /** A turn opened: a ready run is running now (a turn Codex began by itself). */
  opened(): void;
  /** Whether a turn that just opened must be interrupted at once (the run is cancelled or finalizing). */
  interruptOnOpen(): boolean;
  /** The turn ended, or never started: what comes next is the session's (the next follow-up, the end of stdin...). */
  ended(): void;
  /** An interrupt Codex did not carry out: a cancelled run ends its stdin anyway. */
  interruptFailed(): void;
}

export interface TurnOptions {
  outputSchema: unknown;
  maxAnswerChars: number;
}

/**
 * The running turn and how the past ones ended. A turn is asked for with `turn/start` and opens when Codex
 * answers with its id (the asking control is acked then, a steer or follow-up delivered); a steer before that
 * waits for the id (`turn/steer` names it), as does an interrupt. `turn/completed` ends it: its stop reason
 * (`end_turn`, `aborted`, `error`), its usage, its answer (the latest agent message) and, when it failed, the
 * model's own message (the `error` notification before it, else the turn's error).
 */
export class CodexTurns {
  readonly #send: SendRequest;
  readonly #facts: StdioSessionFacts;
  readonly #host: TurnHost;
  readonly #options: TurnOptions;
  #turn: TurnRecord | undefined;
  #count = 0;
  #lastStatus: TurnStatus | undefined;
  #lastError: string | undefined;
  #answer: SessionAnswer | undefined;
  #usage: Usage | undefined;

  constructor(send: SendRequest, facts: StdioSessionFacts, host: TurnHost, options: TurnOptions) {
    this.#send = send;
    this.#facts = facts;
    this.#host = host;
    this.#options = options;
  }

  /** The turn running (or asked for). */
  get current(): TurnRecord | undefined {
    return this.#turn;
  }

  /** How the last turn ended, with the model's message when it failed. */
  get last(): { status: TurnStatus | undefined; error: string | undefined } {
    return { status: this.#lastStatus, error: this.#lastError };
  }

  /** The answer of the latest completed turn, and the usage of every turn. */
  get answer(): SessionAnswer | undefined {
    return this.#answer;
  }

  get usage(): Usage | undefined {
    return this.#usage;
  }

  /**
   * `turn/start` for `origin`; the turn opens when Codex answers with it. Returns a rejection when the request
   * could not be written (nothing runs then: the host hears the turn ended).
   */
  start(origin: TurnOrigin): ControlVerdict | undefined {
    const turn = new TurnRecord(origin);
    this.#turn = turn;
    const sent = this.#send('turn/start', turnStartParams(this.#host.threadId(), origin.text, this.#options.outputSchema), {
      result: (value) => {
        const id = turnIdOf(value);
        if (id === undefined) return this.#refused(turn, 'codex answered turn/start without a turn id');
        this.#open(turn, id);
      },
      failed: (failure) => this.#refused(turn, reasonOf(failure)),
    });
    if (sent) return undefined;
    this.#turn = undefined;
    this.#host.ended();
    return origin.ref === undefined || origin.kind === 'task' ? undefined : { ref: origin.ref, status: 'rejected', reason: "codex's stdin is closed" };
  }

  /** `turn/started`: the turn asked for (its answer still on its way), or one Codex began by itself. */
  started(turnId: string): void {
    if (this.#turn !== undefined) {
      if (this.#turn.id === undefined) this.#open(this.#turn, turnId);
      return;
    }
    const turn = new TurnRecord(undefined);
    this.#turn = turn;
    this.#open(turn, turnId);
  }

  /** `turn/steer` into the running turn (held until its id is known). A rejection when no turn runs or it could not be written. */
  steer(steer: HeldInput): ControlVerdict | undefined {
    const turn = this.#turn;
    if (turn === undefined) return { ref: steer.ref, status: 'rejected', reason: 'no turn is running' };
    if (turn.id === undefined) {
      turn.heldSteers.push(steer);
      return undefined;
    }
    const sent = this.#send('turn/steer', { threadId: this.#host.threadId(), expectedTurnId: turn.id, input: textInput(steer.text) }, {
      result: () => {
        this.#facts.ack(steer.ref, 'accepted');
        turn.acceptedSteers.push(steer);
      },
      failed: (failure) => this.#facts.ack(steer.ref, 'rejected', `codex refused the steer: ${reasonOf(failure)}`),
    });
    return sent ? undefined : { ref: steer.ref, status: 'rejected', reason: "codex's stdin is closed" };
  }

  /** `turn/interrupt` of the running turn (once its id is known); Codex then completes it `interrupted`. False when no turn runs. */
  interrupt(): boolean {
    const turn = this.#turn;
    if (turn === undefined) return false;
    if (turn.id === undefined) {
      turn.interruptWhenOpen = true;
      return true;
    }
    this.#send('turn/interrupt', { threadId: this.#host.threadId(), turnId: turn.id }, {
      result: () => undefined,
      failed: (failure) => {
        // The turn ended meanwhile: its turn/completed says how.
        if (failure.kind === 'error' && failure.error.message.includes('no active turn')) return;
        this.#facts.event({ type: 'error', error: `codex did not interrupt the turn: ${reasonOf(failure)}`, source: 'subvisor' });
        this.#host.interruptFailed();
      },
    });
    return true;
  }

  /** `turn/completed`: the turn's facts and event; false when no open turn has that id. */
  completed(turnId: string, status: TurnStatus, turnObject: JsonObject): boolean {
    const turn = this.#turn;
    if (turn !== undefined && turn.id === undefined) this.#open(turn, turnId);
    if (turn === undefined || turn.id !== turnId) return false;
    this.#turn = undefined;
    const stopReason = status === 'completed' ? 'end_turn' : status === 'interrupted' ? 'aborted' : 'error';
    const errorObject = turnObject['error'];
    const reported = isObject(errorObject) && typeof errorObject['message'] === 'string' ? errorMessageOf(errorObject['message']) : undefined;
    const error = status === 'failed' ? (turn.error ?? reported ?? 'codex reported the turn failed') : undefined;
    const text = status === 'completed' ? turn.answerFrom(turnObject) : undefined;
    const answer = text === undefined ? undefined : boundedAnswer(text, this.#options.maxAnswerChars);
    for (const steer of [...turn.heldSteers.splice(0), ...turn.acceptedSteers.splice(0)]) {
      this.#facts.delivery(steer.ref, 'dropped');
      this.#facts.event({ type: 'info', nativeType: 'dropped', summary: 'the steer did not reach the turn before it ended', refs: [steer.ref] });
    }
    this.#lastStatus = status;
    this.#lastError = error;
    if (answer !== undefined) this.#answer = answer;
    const usage = turn.usage;
    if (usage !== undefined) this.#usage = addUsage(this.#usage ?? {}, usage);
    this.#facts.turnCompleted(turn.number, stopReason, usage, answer?.truncated === false ? answer.text : undefined);
    // The run's state moves before the event is published: a listener may send the next prompt from it.
    this.#host.ended();
    const draft: RunEventDraftOf<'turn-complete'> = { type: 'turn-complete', turn: turn.number, stopReason, extra: { turnId } };
    if (usage !== undefined) draft.usage = usage;
    if (error !== undefined) draft.error = error;
    this.#facts.event(draft);
    return true;
  }

  #open(turn: TurnRecord, id: string): void {
    if (turn.id !== undefined) return;
    turn.id = id;
    turn.number = ++this.#count;
    this.#host.opened();
    const origin = turn.origin;
    if (origin?.ref !== undefined) {
      if (origin.held !== true) this.#facts.ack(origin.ref, 'accepted');
      if (origin.kind === 'steer' || origin.kind === 'follow-up') {
        this.#facts.delivery(origin.ref, 'injected');
        this.#facts.event({ type: origin.kind === 'steer' ? 'steering-injected' : 'follow-up-injected', text: origin.text, ref: origin.ref });
      }
    }
    this.#facts.turnStarted(turn.number);
    this.#facts.event({ type: 'turn-started', turn: turn.number, extra: { turnId: id } });
    for (const steer of turn.heldSteers.splice(0)) this.steer(steer);
    if (turn.interruptWhenOpen || this.#host.interruptOnOpen()) this.interrupt();
  }

  /** turn/start failed: nothing runs; the control that asked is rejected (a held follow-up is dropped). */
  #refused(turn: TurnRecord, reason: string): void {
    if (this.#turn !== turn) return;
    this.#turn = undefined;
    const origin = turn.origin!;
    this.#host.ended();
    if (origin.ref !== undefined) {
      if (origin.held === true) this.#facts.delivery(origin.ref, 'dropped');
      else this.#facts.ack(origin.ref, 'rejected', `codex did not start the turn: ${reason}`);
    }
    this.#facts.event({ type: 'error', error: `codex did not start the turn: ${reason}`, source: 'codex' });
  }
}

function reasonOf(failure: RequestFailure): string {
  return failure.kind === 'error' ? failure.error.message : failure.reason;
}
