// One `fuseraft repl --vscode` chat: stdout frames to facts and events, run controls to stdin lines. Pure: no process.
import { actOnControl, addUsage, advance, decide } from '../../wire/index.js';
import type { JsonObject, RunState, Usage } from '../../wire/index.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import { displayDraft, usageOf } from './event-drafts.js';
import { passthrough, withExtras } from '../shared/event-drafts.js';
import { readLine } from './frames.js';
import type { FrameRejection } from '../shared/json-line.js';
import { stringField } from '../shared/json-kinds.js';
import type { Frame } from './frames.js';
import { Interrupter } from './interrupter.js';
import { MidTurnInputs } from './mid-turn-inputs.js';
import { PromptDesk } from './prompt-desk.js';
import type { AnswerQuestionCallback, ApproveCallback } from '../../protocol/requests.js';
import { announceReady, describeEnd, readyAccepted } from './session-io.js';
import { BoundedText, FINALIZE_PROMPT, finalizeNote } from '../shared/session.js';
import type { FuseraftIo, ProcessEnd, SessionFacts } from './session-io.js';
import type { ChildEnd, ControlVerdict, SessionAnswer } from '../shared/session.js';
import type { Control } from '../../protocol/driver.js';

export interface ReplSessionOptions {
  /** The protocol's registered name (`options.protocol`), which `approve` sees as `request.protocol`. */
  protocol: string;
  approve?: ApproveCallback | undefined;
  answerQuestion?: AnswerQuestionCallback | undefined;
  /** The first prompt, sent as `user_input` as soon as fuseraft is ready. Its ref is 1. */
  task?: string | undefined;
  /** How long after an `interrupt` line the turn may run on before SIGINT. */
  interruptGraceMs: number;
  /** Longest answer kept, in characters; longer ones are cut and marked truncated. */
  maxAnswerChars: number;
}

/** How the last turn ended. */
type TurnEnd = 'completed' | 'cancelled' | 'error';

/**
 * The driver logic of one chat. The run state follows Fen's (state, control) table (`decide`), so
 * every control gets the Ack it would get from a Fen child in the same state; what the control does
 * is translated to fuseraft's input lines:
 * prompt -> `user_input`; steer mid-turn -> `user_input` (delivery from `interjection`);
 * follow-up mid-turn -> held, sent when the turn ends; cancel -> pending prompts denied, `interrupt`
 * (SIGINT fallback), stdin ended; close -> stdin ended after the turn; finalize -> `interrupt` when a
 * turn runs, then one last `user_input` (the note), then stdin ended.
 */
export class ReplSession {
  readonly #io: FuseraftIo;
  readonly #facts: SessionFacts;
  readonly #options: ReplSessionOptions;
  readonly #desk: PromptDesk;
  readonly #interrupter: Interrupter;
  readonly #inputs: MidTurnInputs;

  #state: RunState = 'starting';
  #nextRef = 1;
  /** Ref of the task prompt, when there is one. */
  readonly #taskRef: number | undefined;
  #lineNumber = 0;
  #readySeen = false;
  #fatal = false;

  #turn = 0;
  #turnOpen = false;
  /** A `user_input` that starts a turn was written and its `turn_start` has not come yet. */
  #awaitingTurn = false;
  /** The ref of a held follow-up whose `user_input` started the awaited turn. */
  #startedBy: number | undefined;
  #turnText = new BoundedText(0);
  #lastEnd: TurnEnd | undefined;
  #lastError: string | undefined;
  #answer: SessionAnswer | undefined;
  #usage: Usage | undefined;

  #finalize: 'none' | 'interrupting' | 'final-turn' = 'none';
  #finalNote = FINALIZE_PROMPT;
  #cancelled = false;
  #inputEnded = false;
  #sessionEnded = false;
  #gone = false;

  constructor(io: FuseraftIo, facts: SessionFacts, options: ReplSessionOptions) {
    this.#io = io;
    this.#facts = facts;
    this.#options = options;
    this.#turnText = new BoundedText(options.maxAnswerChars);
    this.#interrupter = new Interrupter(io, options.interruptGraceMs);
    this.#inputs = new MidTurnInputs(facts);
    this.#desk = new PromptDesk(
      { protocol: options.protocol, approve: options.approve, answerQuestion: options.answerQuestion },
      { respond: (line) => this.#write(line), report: (draft) => facts.event(draft) },
    );
    if (options.task !== undefined) this.#taskRef = this.#nextRef++;
  }

  /** The ref of the task prompt (answered through `facts.ack` once fuseraft is ready). */
  get taskRef(): number | undefined {
    return this.#taskRef;
  }

  /** The mirrored run state. */
  get state(): RunState {
    return this.#state;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Lines from stdout                                                                              */
  /* ---------------------------------------------------------------------------------------------- */

  /** One stdout line, without its newline. */
  onLine(line: string): void {
    const read = readLine(line, ++this.#lineNumber);
    if (read.rejection !== undefined) this.#facts.rejected(read.rejection, false);
    if (read.frame !== undefined) this.#onFrame(read.frame, read.usable);
  }

  /** A stdout line longer than the bound was skipped (its rejection, its type sniffed from its first bytes). */
  onOverlongLine(rejection: FrameRejection): void {
    ++this.#lineNumber;
    this.#facts.rejected(rejection, false);
    // fuseraft now waits for a response nobody could judge: answer it safely rather than stall.
    if (rejection.lineType === 'approval_request') this.#desk.approvalRequested({ type: 'approval_request' }, false);
    if (rejection.lineType === 'question') this.#desk.questionAsked({ type: 'question' }, false);
  }

  #onFrame(frame: Frame, usable: boolean): void {
    if (this.#fatal) return;
    switch (frame.type) {
      case 'approval_request':
        return this.#desk.approvalRequested(frame, usable);
      case 'question':
        return this.#desk.questionAsked(frame, usable);
      case 'ready':
        return this.#onReady(frame);
    }
    if (!usable) return; // reported as rejected already
    if (!this.#readySeen) {
      this.#facts.rejected({ code: 'out-of-order', reason: `a ${frame.type} frame before ready`, lineType: frame.type }, false);
      return;
    }
    switch (frame.type) {
      case 'turn_start':
        return this.#onTurnStart(frame);
      case 'message_end':
        return this.#endTurn('completed', frame);
      case 'cancelled':
        return this.#endTurn('cancelled', frame);
      case 'error':
        return this.#onError(frame);
      case 'interjection':
        return this.#onInterjection(frame);
      case 'session_end':
        return this.#onSessionEnd(frame);
      case 'token':
        this.#turnText.append(frame['text'] as string);
        break;
    }
    this.#facts.event(displayDraft(frame) ?? passthrough(frame));
  }

  #onReady(frame: Frame): void {
    const ready = readyAccepted(frame, this.#readySeen, this.#facts);
    if (ready === 'version-mismatch') {
      this.#fatal = true;
      this.#desk.shutDown();
    }
    if (ready !== 'ready') return;
    this.#readySeen = true;
    this.#state = advance(this.#state, 'started');
    announceReady(frame, this.#facts);
    if (this.#taskRef !== undefined && this.#state === 'ready') {
      const decision = decide(this.#state, 'prompt');
      this.#state = decision.next;
      this.#startTurn(this.#options.task!, undefined);
      this.#facts.ack(this.#taskRef, 'accepted');
    }
  }

  #onTurnStart(frame: Frame): void {
    if (this.#turnOpen) {
      this.#facts.rejected({ code: 'out-of-order', reason: 'turn_start while a turn is open', lineType: 'turn_start' }, false);
      return;
    }
    const requested = this.#awaitingTurn;
    const startedBy = this.#startedBy;
    this.#startedBy = undefined;
    this.#openTurn(frame);
    this.#inputs.turnStarted(requested, startedBy);
  }

  #openTurn(frame: Frame | undefined): void {
    this.#turn++;
    this.#turnOpen = true;
    this.#awaitingTurn = false;
    this.#turnText = new BoundedText(this.#options.maxAnswerChars);
    // A turn fuseraft starts on its own (carried input) moves a ready run to running, as Fen's does.
    if (this.#state === 'ready') this.#state = 'running';
    const draft = { type: 'turn-started' as const, turn: this.#turn };
    this.#facts.turnStarted(this.#turn);
    this.#facts.event(frame === undefined ? draft : withExtras(draft, frame, []));
  }

  #endTurn(end: TurnEnd, frame: Frame, error?: string): void {
    if (!this.#turnOpen) {
      if (!this.#awaitingTurn && end !== 'completed') {
        // Nothing of ours ran (an interrupt that raced the turn's end): keep it visible, change nothing.
        this.#facts.event(passthrough(frame));
        return;
      }
      this.#openTurn(undefined);
    }
    this.#turnOpen = false;
    this.#lastEnd = end;
    this.#lastError = error;
    this.#interrupter.settled();
    const usage = end === 'completed' ? usageOf(frame) : undefined;
    if (usage !== undefined) this.#usage = addUsage(this.#usage ?? {}, usage);
    if (end === 'completed') this.#answer = this.#turnText.take();
    const stopReason = end === 'completed' ? 'end_turn' : end === 'cancelled' ? 'aborted' : 'error';
    const draft = { type: 'turn-complete' as const, turn: this.#turn, stopReason, ...(usage === undefined ? {} : { usage }) };
    const used = ['inputTokens', 'outputTokens', 'cachedInputTokens'];
    const answer = end === 'completed' && this.#answer?.truncated === false ? this.#answer.text : undefined;
    this.#facts.turnCompleted(this.#turn, stopReason, usage, answer);
    this.#facts.event(end === 'error' ? { ...draft, error } : withExtras(draft, frame, used));
    this.#afterTurn();
  }

  /** What the end of a turn sets off: the finalize's last turn, the close, or the next held input. */
  #afterTurn(): void {
    switch (this.#state) {
      case 'running':
        this.#state = advance(this.#state, 'turn-done');
        break;
      case 'closing':
        this.#state = advance(this.#state, 'turn-done');
        this.#endInput();
        return;
      case 'finalizing':
        if (this.#finalize === 'interrupting') {
          this.#finalize = 'final-turn';
          this.#startTurn(this.#finalNote, undefined);
        } else {
          this.#state = advance(this.#state, 'final-turn-done');
          this.#endInput();
        }
        return;
      default:
        return;
    }
    this.#sendHeld();
  }

  /** Sends the oldest held input once fuseraft is idle and will not start a carried-over turn itself. */
  #sendHeld(): void {
    if (this.#state !== 'ready' || this.#inputs.expectingCarriedTurn || this.#awaitingTurn) return;
    const next = this.#inputs.nextHeld();
    if (next === undefined) return;
    this.#state = 'running';
    this.#startTurn(next.text, next.ref);
  }

  #onError(frame: Frame): void {
    const text = stringField(frame, 'text') ?? 'fuseraft reported an error';
    this.#facts.event(withExtras({ type: 'error', error: text }, frame, ['text']));
    // An error while a turn runs (or was asked for and never started) ends that turn.
    if (this.#turnOpen || this.#awaitingTurn) this.#endTurn('error', frame, text);
  }

  #onInterjection(frame: Frame): void {
    this.#facts.event(passthrough(frame));
    this.#inputs.interjection(frame['status'], frame['count']);
  }

  #onSessionEnd(frame: Frame): void {
    if (this.#sessionEnded) {
      this.#facts.rejected({ code: 'out-of-order', reason: 'a second session_end frame', lineType: 'session_end' }, false);
      return;
    }
    this.#sessionEnded = true;
    this.#facts.event(passthrough(frame, 'fuseraft is about to exit'));
    if (!this.#cancelled && this.#answer !== undefined && this.#lastEnd === 'completed') {
      this.#facts.result({ stopReason: 'end_turn', answer: this.#answer, usage: this.#usage });
      const result: RunEventDraftOf<'result'> = { type: 'result', stopReason: 'end_turn', finalText: this.#answer.text };
      if (this.#usage !== undefined) result.usage = this.#usage;
      if (this.#answer.truncated) result.truncated = true;
      this.#facts.event(result);
    }
    this.#facts.ending();
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Controls                                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  /** Decides and carries out one control of the run core. */
  send(control: Control): ControlVerdict {
    const ref = this.#nextRef++;
    const text = 'text' in control ? control.text : '';
    const accepted: ControlVerdict = { ref, status: 'accepted' };
    return actOnControl(this.#state, control.type, {
      refused: ({ status, reason }) => (reason === undefined ? { ref, status } : { ref, status, reason }),
      moveTo: (next) => (this.#state = next),
      actions: {
        'start-turn': () => {
          if (this.#inputs.expectingCarriedTurn || this.#awaitingTurn) {
            // fuseraft is about to start a turn of its own: this text would become a mid-turn message.
            this.#inputs.hold({ ref: control.type === 'prompt' ? undefined : ref, text });
            return accepted;
          }
          this.#startTurn(text, undefined);
          return control.type === 'prompt' ? accepted : { ...accepted, injected: true };
        },
        'queue-steer': () => {
          this.#write({ type: 'user_input', text });
          this.#inputs.steerSent(ref);
          return accepted;
        },
        'queue-follow-up': () => {
          this.#inputs.hold({ ref, text });
          return accepted;
        },
        'start-final-turn': () => {
          this.#finalize = 'final-turn';
          this.#finalNote = finalizeNote(control);
          this.#startTurn(this.#finalNote, undefined);
          return accepted;
        },
        'interrupt-turn': () => {
          this.#finalize = 'interrupting';
          this.#finalNote = finalizeNote(control);
          this.#inputs.dropHeld('the run is finalizing');
          this.#interrupter.interrupt(!this.#inputEnded);
          return accepted;
        },
        'close-after-turn': () => {
          this.#inputs.dropHeld('the run is closing');
          return accepted;
        },
        finish: () => {
          this.#endInput();
          return accepted;
        },
        cancel: () => {
          this.#cancel();
          return accepted;
        },
      },
    });
  }

  /** Cancel: answer pending prompts (fuseraft reads nothing else while one waits), interrupt, end stdin. */
  #cancel(): void {
    this.#cancelled = true;
    this.#desk.shutDown();
    this.#inputs.dropAll('the run was cancelled');
    if (this.#turnOpen || this.#awaitingTurn) this.#interrupter.interrupt(!this.#inputEnded);
    this.#endInput();
  }

  #startTurn(text: string, ref: number | undefined): void {
    this.#awaitingTurn = true;
    this.#startedBy = ref;
    this.#write({ type: 'user_input', text });
  }

  #write(line: JsonObject): void {
    if (this.#gone || this.#inputEnded) return;
    if (!this.#io.write(line)) {
      this.#facts.event({ type: 'error', error: `could not write ${String(line['type'])} to fuseraft's stdin`, source: 'subvisor' });
    }
  }

  #endInput(): void {
    if (this.#inputEnded) return;
    this.#inputEnded = true;
    this.#io.endInput();
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The end                                                                                        */
  /* ---------------------------------------------------------------------------------------------- */

  /**
   * The process is gone: how fuseraft itself ended the run, or undefined when it did not say (a
   * crash, a protocol failure: the run core decides). A chat ends `done` with `session_end` and exit
   * code 0; `cancelled` when the parent cancelled it; `failed` when its last turn ended in an error
   * or it exited non-zero after `session_end`.
   */
  finish(end: ProcessEnd): ChildEnd | undefined {
    this.#gone = true;
    this.#interrupter.settled();
    this.#desk.shutDown();
    return this.#endOf(end);
  }

  #endOf(end: ProcessEnd): ChildEnd | undefined {
    if (this.#fatal) return undefined;
    if (this.#cancelled) return { status: 'cancelled' };
    if (!this.#sessionEnded) return undefined;
    if (end.exitCode !== 0) return { status: 'failed', error: `fuseraft ${describeEnd(end)} after session_end` };
    if (this.#lastEnd === 'error') return { status: 'failed', error: this.#lastError ?? 'the last turn ended in an error' };
    if (this.#lastEnd === 'cancelled') return { status: 'cancelled', error: 'fuseraft cancelled the last turn' };
    return { status: 'done' };
  }

  /** How the run ended if fuseraft now exits 0, as it said it would (`session_end`); undefined before that. */
  provisionalEnd(): ChildEnd | undefined {
    return this.#sessionEnded ? this.#endOf({ exitCode: 0, signal: null }) : undefined;
  }

  /** The answer: the `token` text of the last completed turn (undefined before one completed). */
  answer(): SessionAnswer | undefined {
    return this.#answer;
  }

  /** Summed usage of every completed turn. */
  usage(): Usage | undefined {
    return this.#usage;
  }

  /** Stops the timers (the run is over). */
  dispose(): void {
    this.#gone = true;
    this.#interrupter.settled();
  }
}

