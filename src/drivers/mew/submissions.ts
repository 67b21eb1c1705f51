// The acknowledged submissions of one session: fresh request ids, receipts awaited, and which ones a lost connection made uncertain.
import { snakeTag } from './messages.js';
import { stringField } from '../shared/json-kinds.js';
import type { MewMessage } from './messages.js';

/** Why a prompt text was submitted. */
export type SubmissionRole =
  /** A prompt (or the task, or a steer/follow-up sent while idle): its receipt is the control's Ack. */
  | 'prompt'
  /** A follow-up held during a turn and submitted after it: already acknowledged; its receipt is its delivery. */
  | 'held'
  /** The last turn of a finalize (the driver's own; no caller Ack). */
  | 'final';

export interface Submission {
  requestId: string;
  role: SubmissionRole;
  /** The control's ref (none for the finalize's own turn). */
  ref: number | undefined;
  /** Sent before a connection was lost and no receipt came: it is checked with `read_prompt_receipt`, never re-sent. */
  uncertain: boolean;
}

/** What a `prompt_receipt` says, read leniently (either tag spelling). */
export interface Receipt {
  status: 'accepted' | 'rejected' | 'unknown' | 'other';
  /** The raw status when it is none of the three documented ones. */
  raw: string;
  message: string | undefined;
}

/**
 * Request ids are never reused: each submission takes the next number after a per-run prefix, so a
 * duplicate id (which mew answers with the original receipt, starting nothing) can only be a check
 * of an earlier one, sent as `read_prompt_receipt`.
 */
export class Submissions {
  readonly #prefix: string;
  readonly #pending = new Map<string, Submission>();
  #count = 0;

  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  /** Submissions still waiting for their receipt. */
  get pending(): readonly Submission[] {
    return [...this.#pending.values()];
  }

  /** A new submission with a fresh request id. */
  add(role: SubmissionRole, ref: number | undefined): Submission {
    const submission = { requestId: `${this.#prefix}-${++this.#count}`, role, ref, uncertain: false };
    this.#pending.set(submission.requestId, submission);
    return submission;
  }

  /** The submission a receipt names, removed from the pending set; undefined for an id this session is not waiting on. */
  take(requestId: string): Submission | undefined {
    const submission = this.#pending.get(requestId);
    this.#pending.delete(requestId);
    return submission;
  }

  /** The connection was lost: every pending submission is uncertain from now on. Returns them. */
  markUncertain(): Submission[] {
    for (const submission of this.#pending.values()) submission.uncertain = true;
    return this.pending.filter((submission) => submission.uncertain);
  }

  /** Forgets every pending submission (the run ends: their Acks go unanswered). */
  clear(): void {
    this.#pending.clear();
  }
}

/** Reads a `prompt_receipt` (fields checked by checkMessage). */
export function receiptOf(message: MewMessage): Receipt {
  const raw = stringField(message, 'status') ?? '';
  const status = snakeTag(raw);
  return {
    status: status === 'accepted' || status === 'rejected' || status === 'unknown' ? status : 'other',
    raw,
    message: stringField(message, 'message'),
  };
}

/** The reason of a rejected Ack for a receipt that did not accept: mew's message, or why nothing is re-sent. */
export function refusalOf(receipt: Receipt, requestId: string): string {
  if (receipt.status === 'rejected') return `mew rejected the prompt${receipt.message === undefined ? '' : `: ${receipt.message}`}`;
  if (receipt.status === 'unknown') return `mew has no receipt for request ${requestId}: it was not re-sent; inspect the conversation before retrying`;
  return `mew answered the prompt with status ${JSON.stringify(receipt.raw)}`;
}
