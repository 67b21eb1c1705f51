// Public Run handle: its methods, listener map, acks and deliveries.
import type { EventEmitter } from 'eventemitter3';
import type { RunState, WireControlType } from '../wire/index.js';
import type { Delivery, RateLimitFields, RejectedEvent, RunEvent } from '../protocol/events.js';
import type { KillStep } from '../process/supervised-process.js';
import type { Outcome } from '../protocol/outcome.js';

/**
 * Who sent a control: `task` (the first prompt from `RunOptions.task`), `caller` (a control method),
 * `auto` (subvisor itself: the keepAlive-false `close`, the `cancel` of terminate/abort/finalize grace/
 * protocol failure).
 */
export type AckOrigin = 'task' | 'caller' | 'auto';

/**
 * The answer to one control.
 * - `accepted`: legal in the current state; the child acted on it.
 * - `applied`: the run was already doing that (a repeated finalize, close while closing/finalizing).
 * - `rejected`: illegal in the state, or invalid; `reason` says why.
 * - `unanswered`: the run ended, or `ackTimeoutMs` passed, before the child answered; or (with
 *   `runEnded: true`) a `cancel`, `close` or `finalize` was called once the run had ended or was
 *   ending, so nothing was sent.
 */
export interface Ack {
  status: 'accepted' | 'applied' | 'rejected' | 'unanswered';
  /** The child's reason (rejections), or subvisor's (unanswered). */
  reason?: string;
  /** The seq of the control line this ack answers; 0 when no line was written (`runEnded`). */
  seq: number;
  /**
   * Set (with `status: 'unanswered'`, `seq: 0`) when `cancel()`, `close()` or `finalize()` was called on a
   * run that had already ended or was ending: nothing was written, the run ends (or ended) anyway.
   */
  runEnded?: true;
  /**
   * Only on an accepted `steer` or `follow-up` (including one that started a turn from `ready`):
   * resolves `injected` when the child's `steering-injected`/`follow-up-injected` event names this seq
   * (`ref`), `dropped` when an `info` event lists it in `refs` or the run ends first. Never rejects.
   */
  delivery?: Promise<Delivery>;
}

/**
 * The state a {@link Run} handle reports: one of the wire states mirrored from the child, or `queued`
 * for a run of a supervisor pool (`createSupervisor`) that waits for a free slot and has no child yet.
 * A run from `spawnRun` is never `queued`; a queued run leaves `queued` for `starting` (or, when it is
 * ended before it starts, straight for its terminal state).
 */
export type RunHandleState = 'queued' | RunState;

/**
 * A control line subvisor wrote to the child: every one, the task prompt, the caller's controls and
 * subvisor's own `close`/`cancel`. Its answer comes later as the `ack` with the same `seq`.
 */
export interface SentControl {
  type: WireControlType;
  /** The control's seq (the `ref` its ack names). */
  seq: number;
  origin: AckOrigin;
  /** `prompt`, `steer`, `follow-up`: the text sent. */
  text?: string;
  /** `finalize`: the note, when one was sent. */
  note?: string;
}

/** Listener map of a {@link Run} (eventemitter3). Listeners must not throw. `T`: the type of `outcome.data`. */
export interface RunEvents<T = unknown> {
  /** Every event, in order, as the iterator yields it (ending with exactly one `exit`). */
  event: (event: RunEvent) => void;
  /** The state changed (the mirrored wire state, or a pooled run leaving `queued`). */
  state: (state: RunHandleState, previous: RunHandleState) => void;
  /**
   * A control was answered (or given up on as `unanswered`): every control subvisor wrote, including
   * the task prompt and its own `close` (keepAlive false) and `cancel` (terminate, abort, finalize grace,
   * protocol failure). `control` is its type (its seq is `ack.seq`), `origin` who sent it.
   */
  ack: (ack: Ack, control: WireControlType, origin: AckOrigin) => void;
  /**
   * A control line was written (before its ack). The task prompt's is emitted on a microtask, so a
   * listener attached right after `spawnRun` returns sees it. A run of `subvisor/queue` does not emit it.
   */
  control: (control: SentControl) => void;
  /** An accepted steer/follow-up was injected or dropped; `seq` is the control's seq. */
  delivery: (seq: number, delivery: Delivery) => void;
  /** A line was rejected (also emitted as an `event`). */
  rejected: (event: RejectedEvent) => void;
  /** A chunk of the child's stdout or stderr. */
  output: (chunk: string, stream: 'stdout' | 'stderr') => void;
  /** The kill ladder signalled the tree. */
  kill: (step: KillStep) => void;
  /**
   * The child's protocol reported rate-limit news (its `rate-limit` event carries the same fields): told when
   * the driver read it, before the event itself reaches the iterators. A pool's rate-limit gate listens here.
   */
  'rate-limit': (report: RateLimitFields) => void;

  /** The run ended; emitted once, right before `run.outcome` resolves. */
  outcome: (outcome: Outcome<T>) => void;
}

/**
 * A supervised child run: the control surface, the event stream and the outcome in one handle.
 *
 * **Iteration** (`for await (const event of run)`) yields every event in order and ends after exactly
 * one `exit`. Each iterator has its own queue (a single-consumer queue, not a replay log): the first
 * iterator created also receives every event that arrived before it (unless `retainEvents: false`),
 * later iterators start with the events that arrive after they are created. Breaking out of the loop
 * does not stop the run. While an iterator has more than `highWaterMark` events waiting, reading of
 * the event file pauses (except while a control waits for its ack, and after the process exited).
 *
 * **Disposal** (`await using run = spawnRun(...)`) is {@link Run.terminate}.
 *
 * `T` is the type of `outcome.data`: what `outputSchema` describes (`unknown` by default).
 */
export interface Run<T = unknown> extends EventEmitter<RunEvents<T>>, AsyncIterable<RunEvent>, AsyncDisposable {
  /** The run id (`FEN_WIRE_RUN_ID`). */
  readonly id: string;
  /** The child's pid; undefined when it could not be spawned. */
  readonly pid: number | undefined;
  /**
   * The mirrored run state (one of the wire states), or `queued` for a pooled run still waiting for a
   * slot; follows the `state` event.
   */
  readonly state: RunHandleState;
  /** The private run directory holding the control and event files (removed at the end unless `keepFiles`). */
  readonly channelDir: string;
  /** True once the outcome is settled. */
  readonly ended: boolean;
  /**
   * Epoch milliseconds of the last line the child wrote (an event or a rejected line); undefined
   * before the first. What the stall watchdog (`stallTimeoutMs`) measures from.
   */
  readonly lastEventAt: number | undefined;
  /** Resolves exactly once with the outcome; never rejects. */
  readonly outcome: Promise<Outcome<T>>;
  /**
   * The ack of the first prompt (`task`), like the control methods' acks (`unanswered` when the run
   * ends first). `undefined` when no task was written. Never rejects.
   */
  readonly taskAck: Promise<Ack | undefined>;
  /**
   * Sends `prompt {text}` (legal in `ready`). Rejects with `ControlRefusedError` when subvisor refuses
   * it locally: `too-large`, `invalid`, or `run-ended` once the run has ended or is ending.
   */
  prompt(text: string): Promise<Ack>;
  /**
   * Sends `steer {text}`; an accepted ack carries `delivery`. Rejects with `ControlRefusedError`:
   * `empty-text`, `too-large`, `invalid`, or `run-ended` once the run has ended or is ending.
   */
  steer(text: string): Promise<Ack>;
  /**
   * Sends `follow-up {text}`; an accepted ack carries `delivery`. Rejects with `ControlRefusedError`:
   * `empty-text`, `too-large`, `invalid`, or `run-ended` once the run has ended or is ending.
   */
  followUp(text: string): Promise<Ack>;
  /**
   * Sends `finalize {note?}`. If the run has not ended `finalizeGraceMs` after acceptance, subvisor
   * cancels it. On a run that has ended or is ending it resolves `{ status: 'unanswered', seq: 0,
   * runEnded: true }` and writes nothing; it rejects only for a note the wire cannot carry (`too-large`).
   */
  finalize(note?: string): Promise<Ack>;
  /**
   * Sends `cancel {}` and starts the kill ladder right away: the grace counts from this call, not from
   * the ack, so a child that never answers (or is still `starting` and slower than `killGraceMs` to get
   * ready) is killed all the same. Never rejects: on a run that has ended or is ending (a second
   * cancel, the child already exited) it resolves `{ status: 'unanswered', seq: 0, runEnded: true }`,
   * so `setTimeout(() => run.cancel(), limit)` is safe whenever the run finishes.
   */
  cancel(): Promise<Ack>;
  /**
   * Sends `close {}`: exit cleanly after the current turn. Never rejects: on a run that has ended or
   * is ending it resolves `{ status: 'unanswered', seq: 0, runEnded: true }`.
   */
  close(): Promise<Ack>;
  /**
   * Ends the run now: sends `cancel` (when the run is still live), starts the kill ladder and resolves
   * with the outcome once the whole tree is gone. The outcome is `cancelled` (errorCode `aborted`) unless
   * the run had already ended otherwise. Safe to call more than once.
   */
  terminate(reason?: string): Promise<Outcome<T>>;
  /**
   * Ends the run at once: SIGKILLs the process group and every known descendant now (no cancel, no
   * grace) and resolves with the outcome once the tree is gone. The outcome is `cancelled` (errorCode
   * `aborted`) unless the run had already ended otherwise.
   */
  kill(reason?: string): Promise<Outcome<T>>;
  /**
   * The same stream in batches: each step yields every event waiting at that moment (at least one), in
   * order, the last batch ending with the `exit`. One promise per batch instead of one per event, for
   * consumers that care about throughput. Same queue semantics and backpressure as the event iterator
   * (it is one: the first iterator or batch iterator created gets the retained events).
   */
  batches(): StreamIterator<RunEvent[]>;
  /**
   * The assistant's text as it arrives, in chunks, never doubled, whichever way the child sends it (deltas
   * then the whole block, or only the whole block): see `TextAssembler` for the rule. An event iterator
   * underneath (the first one created gets the retained events). After the last event it waits for the
   * outcome and yields what `outcome.finalText` adds: all of it when no text came, the rest of the last
   * block when the stream carried only its start (a long answer the child's transport cut, with the cut
   * flagged on its event: `transportTruncated`, Fen's note in `transportNote`, never in the text). When the
   * answer does not begin with the last block streamed, nothing is added (it could not be without
   * doubling): `outcome.finalText` is the answer. It includes every turn's text, not only the answer's.
   */
  text(): StreamIterator<string>;
  /** Creates an event iterator (see the class notes for the queue semantics). */
  [Symbol.asyncIterator](): AsyncIterator<RunEvent, undefined>;
  /** `terminate()`, then drops the events not taken yet (their descriptor closes), for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * An async iterator that is its own iterable and returns `undefined` once done: what `run.batches()`, `run.text()`,
 * `sup.events()` and an agent's `invoke()` return. Spelt out rather than `AsyncIterableIterator<T, undefined>`,
 * whose second type parameter needs TypeScript 5.6: the declarations work from TypeScript 5.2.
 */
export interface StreamIterator<T> extends AsyncIterator<T, undefined> {
  [Symbol.asyncIterator](): StreamIterator<T>;
}
