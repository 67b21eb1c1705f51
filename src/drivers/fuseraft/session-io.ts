// What a fuseraft session needs from the process and reports to the run core: its I/O and its facts.
import type { JsonObject, Usage } from '../../wire/index.js';
import type { Delivery } from '../../protocol/index.js';
import type { EventDraft } from './event-drafts.js';
import type { LineRejection } from './frames.js';

/** The process side of a session (the driver adapter implements it; tests record it). */
export interface FuseraftIo {
  /** Writes one JSON line to fuseraft's stdin; false when stdin is closed or broken. */
  write(line: JsonObject): boolean;
  /** Ends fuseraft's stdin (EOF); idempotent. */
  endInput(): void;
  /** Sends SIGINT to the fuseraft process: fuseraft's own "cancel the running turn" signal. */
  interrupt(): void;
  /** A timer (injectable for tests). */
  setTimer(fn: () => void, ms: number): { clear(): void };
}

/**
 * Protocol-free facts a session reports (the driver adapter forwards them to the run core). A fact
 * comes before the event that carries it, as the run core expects.
 */
export interface SessionFacts {
  /** fuseraft said `ready` with the right protocol version. */
  ready(): void;
  /** An event to publish (the envelope is added by the publisher). */
  event(draft: EventDraft): void;
  /** A line that was not (fully) accepted. `fatal` ones end the run `failed`. */
  rejected(rejection: LineRejection, fatal: boolean): void;
  /** The answer to a control the session sent on its own (the task prompt, once fuseraft is ready). */
  ack(ref: number, status: 'accepted' | 'rejected', reason?: string): void;
  /** What happened to an accepted steer or follow-up. */
  delivery(ref: number, delivery: Delivery): void;
  /** A turn began (turns count from 1). */
  turnStarted(turn: number): void;
  /** A turn ended: `end_turn`, `aborted` (cancelled) or `error`. */
  turnCompleted(turn: number, stopReason: string, usage: Usage | undefined): void;
  /** The run's answer, once, when fuseraft says the session is over (repl: `session_end`; bridge: `result`). */
  result(report: SessionResult): void;
  /** fuseraft said it is about to exit (`session_end`, `result`): `provisionalEnd()` says how the run ended. */
  ending(): void;
}

/** What {@link SessionFacts.result} reports. */
export interface SessionResult {
  stopReason: string;
  answer: SessionAnswer | undefined;
  usage: Usage | undefined;
}

/** A control as the run core hands it to a session. */
export type FuseraftControl =
  | { type: 'prompt' | 'steer' | 'follow-up'; text: string }
  | { type: 'finalize'; note?: string }
  | { type: 'cancel' }
  | { type: 'close' };

/** A session's immediate answer to a control: fuseraft itself acknowledges nothing, so the driver decides. */
export interface ControlVerdict {
  /** The driver's reference of the control (increasing from 1, shared with the task's). */
  ref: number;
  status: 'accepted' | 'applied' | 'rejected';
  reason?: string;
  /** An accepted steer/follow-up whose text started a turn at once: delivered (injected) already. */
  injected?: true;
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

/** How the process ended. */
export interface ProcessEnd {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

/** Describes a process end for error texts. */
export function describeEnd(end: ProcessEnd): string {
  return end.signal !== null ? `was killed by ${end.signal}` : `exited with code ${end.exitCode}`;
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
