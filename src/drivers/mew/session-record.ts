// What a mew session's turns leave for the run's end: how the last one ended, the answer, the summed usage.
import { addUsage } from '../../wire/index.js';
import type { Usage } from '../../wire/index.js';
import type { ChildEnd, SessionAnswer } from '../shared/session.js';
import type { EndedTurn } from './turn-stream.js';

/** How the last turn (or the last submission) ended. */
export type LastEnd = 'completed' | 'failed' | 'cancelled' | 'rejected';

/**
 * The session's record for the made-up exit: the answer is the text of the last completed turn; the run
 * ends `failed` when the last turn failed or the last submission was rejected, `cancelled` when the
 * last turn was cancelled by someone else than a finalize, `done` otherwise.
 */
export class SessionRecord {
  #lastEnd: LastEnd | undefined;
  #lastError: string | undefined;
  #answer: SessionAnswer | undefined;
  #usage: Usage | undefined;
  /** The last turn ended on an idle notice: a later `turn_failed` alert may still amend it. */
  #endedByIdle = false;

  get answer(): SessionAnswer | undefined {
    return this.#answer;
  }

  get usage(): Usage | undefined {
    return this.#usage;
  }

  turnEnded(how: 'completed' | 'failed' | 'cancelled', ended: EndedTurn, error: string | undefined, byIdle: boolean): void {
    this.#lastEnd = how;
    this.#lastError = error;
    this.#endedByIdle = byIdle;
    if (ended.usage !== undefined) this.#usage = addUsage(this.#usage ?? {}, ended.usage);
    if (ended.answer !== undefined) this.#answer = ended.answer;
  }

  submissionRejected(reason: string): void {
    this.#lastEnd = 'rejected';
    this.#lastError = reason;
  }

  /** `turn_failed` after the idle notice that ended the turn: the turn failed after all (its answer no longer counts). */
  lateFailure(error: string): void {
    if (!this.#endedByIdle || this.#lastEnd !== 'completed') return;
    this.#lastEnd = 'failed';
    this.#lastError = error;
    this.#answer = undefined;
  }

  /** How the run ends if the session detaches now (`finalizing`: a cancelled turn was the finalize's own). */
  endOf(finalizing: boolean): ChildEnd {
    if (this.#lastEnd === 'failed' || this.#lastEnd === 'rejected') return { status: 'failed', error: this.#lastError ?? 'the last turn failed' };
    if (this.#lastEnd === 'cancelled' && !finalizing) return { status: 'cancelled', error: 'the last turn was cancelled' };
    return { status: 'done' };
  }
}
