// What every pure protocol session shares: the facts it reports (SessionSink), its answer and held follow-ups, and how a driver forwards them to the core.
import type { Answer } from '../../protocol/results.js';
import type { Control, DriverContext, DriverSink, SendOutcome } from '../../protocol/driver.js';
import type { Delivery, RunEventDraftOf } from '../../protocol/index.js';
import type { Usage } from '../../wire/index.js';
import type { EventDraft } from './event-drafts.js';

/**
 * The facts a pure protocol session reports, in the core's terms but with events as drafts (the driver
 * adds the envelope). A fact comes before the event that carries it, as the core expects. Each
 * protocol's session extends it with what only it reports (fuseraft: its rejections and `ending`; mew:
 * its rejections, its made-up `exit`, fatal failures and blocked requests).
 */
export interface SessionSink {
  /** The peer is ready for controls (fuseraft's `ready`, mew's attached session). */
  ready(): void;
  /** An event to publish (the envelope is added by the driver). */
  event(draft: EventDraft): void;
  /** The answer to a control the session sent or decided. */
  ack(ref: number, status: 'accepted' | 'applied' | 'rejected', reason?: string): void;
  /** What happened to an accepted steer or follow-up. */
  delivery(ref: number, delivery: Delivery): void;
  /** A turn began (turns count from 1). */
  turnStarted(turn: number): void;
  /** A turn ended: `end_turn`, `aborted` (cancelled) or `error`; `answer`: its whole answer text, when it completed with one. */
  turnCompleted(turn: number, stopReason: string, usage: Usage | undefined, answer?: string): void;
  /** The run's answer, once. */
  result(report: SessionResult): void;
  /** The peer's own id of the conversation (see DriverSink.session). */
  session(id: string): void;
}

/** What {@link SessionSink.result} reports. */
export interface SessionResult {
  stopReason: string;
  answer: SessionAnswer | undefined;
  usage: Usage | undefined;
}

/** How the child itself says the run ended (its own `exit`), decided once the process is gone. */
export interface ChildEnd {
  status: 'done' | 'cancelled' | 'failed';
  error?: string;
}

/** The answer of a run. */
export interface SessionAnswer {
  text: string;
  /** The text was longer than `maxAnswerChars` and was cut. */
  truncated: boolean;
}

/** A session's immediate answer to a control (the driver reports it to the core once `send` returned its ref). */
export interface ControlVerdict {
  /** The driver's reference of the control (increasing from 1, shared with the task's). */
  ref: number;
  /** Decided now; absent when the peer's own answer will come (mew's `prompt_receipt`) through {@link SessionSink.ack}. */
  status?: 'accepted' | 'applied' | 'rejected';
  reason?: string;
  /** An accepted steer/follow-up whose text started a turn at once: delivered (injected) already. */
  injected?: true;
  /** What the session does once the Ack is reported (a close or cancel that detaches: the Ack must come first). */
  then?: () => void;
}

/**
 * What `Driver.send` returns for a session's verdict (`sent` under its ref), with the verdict reported
 * after `send` returned: the core learns the ref from that return, so the answer (and what the control
 * sets off after it) must come later.
 */
export function answerAfterReturn(sink: DriverSink, verdict: ControlVerdict): SendOutcome {
  const status = verdict.status;
  if (status !== undefined) reportLater(sink, verdict, status);
  return { kind: 'sent', ref: verdict.ref };
}

function reportLater(sink: DriverSink, verdict: ControlVerdict, status: NonNullable<ControlVerdict['status']>): void {
  queueMicrotask(() => {
    sink.ack(verdict.ref, status, verdict.reason);
    if (verdict.injected === true) sink.delivery(verdict.ref, 'injected');
    verdict.then?.();
  });
}

/** How {@link forwardFacts} forwards. */
export interface ForwardOptions {
  /** false: a completed turn leaves the state running (fuseraft's bridge goes on by itself). Default true. */
  idle?: boolean;
  /**
   * false: the events carry no budget facts (fuseraft serve's progress is broadcast to every client of
   * the daemon: its tool calls and models are not this run's). Default true.
   */
  meter?: boolean;
}

/**
 * The shared facts of a session, forwarded to the core: events through `publish` (which stamps them),
 * after the budget's facts they carry; the answer bounded by `maxAnswerChars`; a turn's answer only
 * for a run with an outputSchema.
 */
export function forwardFacts(context: DriverContext, publish: (draft: EventDraft) => void, options: ForwardOptions = {}): SessionSink {
  const idle = options.idle ?? true;
  const meter = options.meter ?? true;
  const sink = () => context.sink;
  const maxChars = context.options.maxAnswerChars;
  const checksAnswers = context.options.outputSchema !== undefined;
  return {
    ready: () => sink().ready(),
    event: (draft) => {
      if (meter) meterFacts(sink(), draft);
      publish(draft);
    },
    ack: (ref, status, reason) => sink().ack(ref, status, reason),
    delivery: (ref, delivery) => sink().delivery(ref, delivery),
    turnStarted: (turn) => sink().turnStarted(turn),
    session: (id) => sink().session(id),
    turnCompleted: (turn, stopReason, usage, answer) =>
      sink().turnCompleted({
        turn,
        stopReason,
        ...(usage === undefined ? {} : { usage }),
        ...(idle ? {} : { idle }),
        ...(answer === undefined || !checksAnswers ? {} : { answer }),
      }),
    result: (report) =>
      sink().result({
        stopReason: report.stopReason,
        ...(report.usage === undefined ? {} : { usage: report.usage }),
        answer: Promise.resolve(answerOf(report.answer, maxChars)),
      }),
  };
}

/** The budget's facts an event carries: a tool call, the model named, a model call's usage. */
export function meterFacts(sink: DriverSink, draft: EventDraft): void {
  switch (draft.type) {
    case 'tool-call':
      sink.toolCalled();
      break;
    case 'agent-started':
    case 'llm-start':
      if (draft.model !== undefined) sink.modelCall({ model: draft.model });
      break;
    case 'llm-end':
      if (draft.usage !== undefined) sink.modelCall({ usage: draft.usage });
      break;
  }
}

/** The outcome's answer from a session's: a cut one says so, naming the option the caller sets (maxFinalTextBytes, read as characters here). */
function answerOf(answer: SessionAnswer | undefined, maxChars: number): Answer {
  if (answer === undefined) return { truncated: false };
  if (!answer.truncated) return { finalText: answer.text, truncated: false };
  return { finalText: answer.text, truncated: true, truncationNote: `the answer was longer than ${maxChars} characters (maxFinalTextBytes) and was cut` };
}

/**
 * The run's answer on a `done` end, once: the fact, then the `result` event that carries it (nothing when
 * no turn answered).
 */
export function reportResult(facts: SessionSink, stopReason: string, answer: SessionAnswer | undefined, usage: Usage | undefined): void {
  if (answer === undefined) return;
  facts.result({ stopReason, answer, usage });
  const result: RunEventDraftOf<'result'> = { type: 'result', stopReason, finalText: answer.text };
  if (usage !== undefined) result.usage = usage;
  if (answer.truncated) result.truncated = true;
  facts.event(result);
}

/** A follow-up accepted while a turn runs, held until it ends. */
export interface HeldFollowUp {
  ref: number;
  text: string;
}

/** Every held follow-up dropped (`why`: the run is finalizing, closing, cancelled or over): each one's delivery, then one notice naming them. */
export function dropHeld(held: HeldFollowUp[], facts: SessionSink, why: string): void {
  const dropped = held.splice(0);
  for (const input of dropped) facts.delivery(input.ref, 'dropped');
  if (dropped.length > 0) facts.event({ type: 'info', nativeType: 'dropped', summary: `held follow-ups dropped: ${why}`, refs: dropped.map((input) => input.ref) });
}

/** The text of the last turn a `finalize` starts when the caller gives no note. */
export const FINALIZE_PROMPT =
  'Stop working on the task now. Do not call any more tools: reply with your final answer, summarising what was done and what is left.';

/** The note of a `finalize` control, or {@link FINALIZE_PROMPT} when it has none. */
export function finalizeNote(control: Control): string {
  return control.type === 'finalize' && control.note !== undefined && control.note !== '' ? control.note : FINALIZE_PROMPT;
}

/** A whole answer bounded by `maxChars`: cut there, and marked so, when it is longer. */
export function boundedAnswer(text: string, maxChars: number): SessionAnswer {
  return text.length > maxChars ? { text: text.slice(0, maxChars), truncated: true } : { text, truncated: false };
}

/**
 * Pieces are joined into one string once they add up to this many characters, so a long answer is a few
 * large strings (V8 keeps strings this large outside the young generation) rather than thousands of small
 * ones that every scavenge copies while the turn streams. Measured on 100 000 tokens of 160 characters:
 * about 0.15 us less per token than keeping every piece to the end (128 KiB blocks saved less).
 */
const FOLD_CHARS = 1024 * 1024;

/** Collects streamed text up to a bound. */
export class BoundedText {
  /** Pieces already joined (each about FOLD_CHARS long), then the pieces since. */
  #blocks: string[] = [];
  #pieces: string[] = [];
  #piecesLength = 0;
  #length = 0;
  #truncated = false;

  constructor(readonly maxChars: number) {}

  append(text: string): void {
    if (this.#truncated) return;
    const room = this.maxChars - this.#length;
    if (text.length > room) {
      this.#add(text.slice(0, room));
      this.#truncated = true;
      return;
    }
    this.#add(text);
  }

  take(): SessionAnswer {
    const answer = { text: this.#blocks.join('') + this.#pieces.join(''), truncated: this.#truncated };
    this.#blocks = [answer.text];
    this.#pieces = [];
    this.#piecesLength = 0;
    return answer;
  }

  #add(text: string): void {
    this.#pieces.push(text);
    this.#length += text.length;
    this.#piecesLength += text.length;
    if (this.#piecesLength < FOLD_CHARS) return;
    this.#blocks.push(this.#pieces.join(''));
    this.#pieces = [];
    this.#piecesLength = 0;
  }
}
