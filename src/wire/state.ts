// The run state machine: Fen's (state, control) table, internal events, and terminal states.
import type { RunState, TerminalState, WireControlType } from './types.js';

/** What the child does when it accepts a control. */
export type ControlAction =
  | 'start-turn'
  | 'queue-steer'
  | 'queue-follow-up'
  | 'start-final-turn'
  | 'interrupt-turn'
  | 'close-after-turn'
  | 'finish'
  | 'cancel';

export interface Decision {
  status: 'accepted' | 'applied' | 'rejected';
  /** The state after the control (unchanged unless accepted). */
  next: RunState;
  action?: ControlAction;
  reason?: string;
}

/** Internal events that move a run without a control. */
export type InternalEvent = 'started' | 'turn-done' | 'final-turn-done' | 'deadline' | 'fatal';

const TERMINAL: ReadonlySet<RunState> = new Set<RunState>(['done', 'cancelled', 'failed', 'timed-out']);

export function isTerminal(state: RunState): state is TerminalState {
  return TERMINAL.has(state);
}

const accepted = (next: RunState, action: ControlAction): Decision => ({ status: 'accepted', next, action });
const rejected = (state: RunState, reason: string): Decision => ({ status: 'rejected', next: state, reason });
const applied = (state: RunState): Decision => ({ status: 'applied', next: state });

/** Looks up a (state, control) pair of the seed's table, with Fen's rejection reasons. */
export function decide(state: RunState, control: WireControlType | string): Decision {
  if (isTerminal(state)) return rejected(state, `run is ${state}`);
  if (control === 'cancel') return accepted('cancelled', 'cancel');
  switch (state) {
    case 'starting':
      return rejected(state, 'child is not ready');
    case 'ready':
      switch (control) {
        case 'prompt':
        case 'steer':
        case 'follow-up':
          return accepted('running', 'start-turn');
        case 'finalize':
          return accepted('finalizing', 'start-final-turn');
        case 'close':
          return accepted('done', 'finish');
      }
      break;
    case 'running':
      switch (control) {
        case 'prompt':
          return rejected(state, 'a turn is running; send steer or follow-up');
        case 'steer':
          return accepted('running', 'queue-steer');
        case 'follow-up':
          return accepted('running', 'queue-follow-up');
        case 'finalize':
          return accepted('finalizing', 'interrupt-turn');
        case 'close':
          return accepted('closing', 'close-after-turn');
      }
      break;
    case 'closing':
      switch (control) {
        case 'finalize':
          return accepted('finalizing', 'interrupt-turn');
        case 'close':
          return applied(state);
        case 'prompt':
        case 'steer':
        case 'follow-up':
          return rejected(state, 'run is closing');
      }
      break;
    case 'finalizing':
      switch (control) {
        case 'finalize':
        case 'close':
          return applied(state);
        case 'prompt':
        case 'steer':
        case 'follow-up':
          return rejected(state, 'run is finalizing');
      }
      break;
  }
  return rejected(state, `unknown control type: ${control}`);
}

/**
 * Moves a run on an internal event. `turn-done` returns running to ready, finishes a closing run and,
 * in finalizing, is the interrupted turn unwinding: the tool-free turn follows, so the state stays.
 * `final-turn-done` is the end of the tool-free turn. Terminal states never move.
 */
export function advance(state: RunState, event: InternalEvent): RunState {
  if (isTerminal(state)) return state;
  switch (event) {
    case 'started':
      return state === 'starting' ? 'ready' : state;
    case 'turn-done':
      if (state === 'running') return 'ready';
      if (state === 'closing') return 'done';
      return state;
    case 'final-turn-done':
      return state === 'finalizing' ? 'done' : state;
    case 'deadline':
      return 'timed-out';
    case 'fatal':
      return 'failed';
  }
  return state;
}
