// The parent's mirror of the child's run state, moved by acknowledged controls and turn-completes only.
import { advance, decide, isTerminal } from '../wire/index.js';
import type { ControlAction, RunState, WireControlType } from '../wire/index.js';

/**
 * Mirrors the run state exactly as the spec says: `decide` on each acknowledged control (accepted or
 * applied) with the type of the control that ack names, `advance` on each turn-complete, `ready`
 * moves starting to ready, `exit` sets the terminal state. One addition the spec implies: a
 * `turn-started` while `ready` (a turn the child started by itself) moves it to `running`. A finalize that interrupts a turn yields
 * two turn-completes: the first (the interrupted turn) keeps `finalizing`, the second finishes.
 */
export class StateMirror {
  #state: RunState = 'starting';
  /** A mid-turn finalize was accepted and the interrupted turn has not completed yet. */
  #interruptedTurnPending = false;
  readonly #onChange: (state: RunState, previous: RunState) => void;

  constructor(onChange: (state: RunState, previous: RunState) => void) {
    this.#onChange = onChange;
  }

  get state(): RunState {
    return this.#state;
  }

  get terminal(): boolean {
    return isTerminal(this.#state);
  }

  /** The child said `ready`. */
  ready(): void {
    this.#set(advance(this.#state, 'started'));
  }

  /**
   * The child acknowledged a control of type `control` with `status`. Returns what the state table
   * says the child did (for accepted controls), so callers can tell a steer that started a turn from
   * one that was queued.
   */
  acknowledged(control: WireControlType, status: 'accepted' | 'applied' | 'rejected'): ControlAction | undefined {
    if (status === 'rejected') return undefined;
    const decision = decide(this.#state, control);
    if (decision.status === 'rejected') return undefined;
    if (decision.action === 'interrupt-turn') this.#interruptedTurnPending = true;
    this.#set(decision.next);
    return decision.action;
  }

  /**
   * A `turn-started` arrived. From `ready` it is a turn the child started on its own (a queued
   * follow-up run when the previous turn ended): the child is running, and so is the mirror.
   */
  turnStarted(): void {
    if (this.#state === 'ready') this.#set('running');
  }

  /** A `turn-complete` arrived. */
  turnComplete(): void {
    if (this.#state === 'finalizing') {
      if (this.#interruptedTurnPending) {
        this.#interruptedTurnPending = false;
        return;
      }
      this.#set(advance(this.#state, 'final-turn-done'));
      return;
    }
    this.#set(advance(this.#state, 'turn-done'));
  }

  /** The deadline passed: any non-terminal state becomes `timed-out`. */
  deadline(): void {
    this.#set(advance(this.#state, 'deadline'));
  }

  /** The child's `exit` (or the parent's verdict when it wrote none) sets the terminal state. */
  exit(status: 'done' | 'cancelled' | 'failed' | 'timed-out'): void {
    this.#set(status);
  }

  #set(next: RunState): void {
    const previous = this.#state;
    if (next === previous) return;
    this.#state = next;
    this.#onChange(next, previous);
  }
}
