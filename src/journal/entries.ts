// The journal's lines: one JSON object per line, what the caller of a run saw, in the order it saw it.
import type { Ack, AckOrigin, SentControl } from '../run/handle.js';
import type { KillStep } from '../process/supervised-process.js';
import type { Delivery, Outcome, RunEvent } from '../protocol/index.js';
import type { RunState, WireControlType } from '../wire/index.js';

/** The journal format's version, in the first line. */
export const JOURNAL_VERSION = 1;

/** Fields of every line: what it is, and when (milliseconds since the journal started). */
interface Line<K extends string> {
  kind: K;
  at: number;
}

/** The first line: which run, which protocol, when. Never its environment, arguments or tokens. */
export interface JournalStart extends Line<'start'> {
  journal: typeof JOURNAL_VERSION;
  runId: string;
  protocol: string;
  /** ISO time the journal started. */
  startedAt: string;
  /** The program started, without its arguments (they may hold secrets); connectRun: the daemon's address, without credentials. */
  command: string;
  /** Set when this parent re-attached to a durable run (its events start from the event file's first). */
  attached?: true;
}

/** An event, as the run yielded it. */
export interface JournalEvent extends Line<'event'> {
  event: RunEvent;
}

/** A control line written to the child (see {@link SentControl}). */
export interface JournalControl extends Line<'control'>, Omit<SentControl, 'type'> {
  control: WireControlType;
}

/** The answer to a control (see {@link Ack}), `delivery` excepted: that is its own line. */
export interface JournalAck extends Line<'ack'>, Omit<Ack, 'delivery'> {
  control: WireControlType;
  origin: AckOrigin;
}

/** An accepted steer or follow-up reached the agent, or was dropped. */
export interface JournalDelivery extends Line<'delivery'> {
  seq: number;
  delivery: Delivery;
}

/** The mirrored state changed. */
export interface JournalState extends Line<'state'> {
  state: RunState | 'queued';
  previous: RunState | 'queued';
}

/** The kill ladder signalled the tree. */
export interface JournalKill extends Line<'kill'> {
  step: KillStep;
}

/** The journal reached `maxBytes`: every line after this one but the outcome was left out. */
export interface JournalTruncated extends Line<'truncated'> {
  maxBytes: number;
  /** The line that did not fit: its kind (and the event's type). */
  firstLeftOut: string;
}

/** The last line: the outcome, and what the journal left out. */
export interface JournalOutcome extends Line<'outcome'> {
  outcome: Outcome;
  /** Lines left out once the journal was full. */
  leftOut: number;
  /** Set when the answer (then the output tail) was cut to fit the journal: each one's bytes before the cut. */
  cut?: { finalText?: number; outputTail?: number };
}

/** Any line of a journal. */
export type JournalEntry =
  | JournalStart
  | JournalEvent
  | JournalControl
  | JournalAck
  | JournalDelivery
  | JournalState
  | JournalKill
  | JournalTruncated
  | JournalOutcome;
