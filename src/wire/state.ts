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

/** Every run state, in lifecycle order. */
export const RUN_STATES: readonly RunState[] = [
  'starting',
  'ready',
  'running',
  'closing',
  'finalizing',
  'done',
  'cancelled',
  'failed',
  'timed-out',
];

/** Every internal event `advance` understands. */
export const INTERNAL_EVENTS: readonly InternalEvent[] = [
  'started',
  'turn-done',
  'final-turn-done',
  'deadline',
  'fatal',
];

const TERMINAL: ReadonlySet<unknown> = new Set<RunState>(['done', 'cancelled', 'failed', 'timed-out']);

export function isTerminal(state: RunState): state is TerminalState {
  return TERMINAL.has(state);
}

type ActiveState = Exclude<RunState, TerminalState>;
type Row = Readonly<Record<WireControlType, Decision>>;

const accept = (next: RunState, action: ControlAction): Decision => ({ status: 'accepted', next, action });
const apply = (state: RunState): Decision => ({ status: 'applied', next: state });
const reject = (state: RunState, reason: string): Decision => ({ status: 'rejected', next: state, reason });
const CANCEL = accept('cancelled', 'cancel');

/** Rows that reject the three turn-starting controls for one reason. */
function refusingTurns(state: ActiveState, reason: string): Pick<Row, 'prompt' | 'steer' | 'follow-up'> {
  return { prompt: reject(state, reason), steer: reject(state, reason), 'follow-up': reject(state, reason) };
}

/** The seed's (state, control) table with Fen's rejection reasons; terminal rows are built below. */
const TABLE: Readonly<Record<ActiveState, Row>> = {
  starting: {
    ...refusingTurns('starting', 'child is not ready'),
    finalize: reject('starting', 'child is not ready'),
    close: reject('starting', 'child is not ready'),
    cancel: CANCEL,
  },
  ready: {
    prompt: accept('running', 'start-turn'),
    steer: accept('running', 'start-turn'),
    'follow-up': accept('running', 'start-turn'),
    finalize: accept('finalizing', 'start-final-turn'),
    close: accept('done', 'finish'),
    cancel: CANCEL,
  },
  running: {
    prompt: reject('running', 'a turn is running; send steer or follow-up'),
    steer: accept('running', 'queue-steer'),
    'follow-up': accept('running', 'queue-follow-up'),
    finalize: accept('finalizing', 'interrupt-turn'),
    close: accept('closing', 'close-after-turn'),
    cancel: CANCEL,
  },
  closing: {
    ...refusingTurns('closing', 'run is closing'),
    finalize: accept('finalizing', 'interrupt-turn'),
    close: apply('closing'),
    cancel: CANCEL,
  },
  finalizing: {
    ...refusingTurns('finalizing', 'run is finalizing'),
    finalize: apply('finalizing'),
    close: apply('finalizing'),
    cancel: CANCEL,
  },
};

function rowOf(state: RunState): Row | undefined {
  if (Object.hasOwn(TABLE, state)) return TABLE[state as ActiveState];
  return undefined;
}

/**
 * Looks up a (state, control) pair of the seed's table, with Fen's rejection reasons. A rejected or
 * applied control leaves the state unchanged (`next` is the current state). Every control is rejected
 * in a terminal state ("run is <state>"); an unknown state or control is rejected too.
 */
export function decide(state: RunState, control: WireControlType | string): Decision {
  if (isTerminal(state)) return reject(state, `run is ${state}`);
  const row = rowOf(state);
  const entry = row !== undefined && Object.hasOwn(row, control) ? row[control as WireControlType] : undefined;
  if (entry === undefined) return reject(state, `no transition for ${String(control)} in state ${String(state)}`);
  return { ...entry };
}

/** The answer a refused control gets in {@link actOnControl}: the table's rejection or `applied`. */
export type RefusedDecision = Decision & { status: 'rejected' | 'applied' };

/** How one implementation of the table carries out a control (see {@link actOnControl}). */
export interface ControlActions<R> {
  /** The answer to a control the table rejects or finds already applied: the state stays. */
  refused(decision: RefusedDecision): R;
  /** Asked once the table accepted, before the state moves: an answer refuses the control after all (a protocol that cannot carry it). */
  veto?(action: ControlAction): R | undefined;
  /** The state moves to the table's next state (for `action`), before the action runs. */
  moveTo(next: RunState, action: ControlAction): void;
  /** What each accepted action does. */
  actions: Readonly<Record<ControlAction, () => R>>;
}

/**
 * The one decide-then-act step of every implementation of the table (the child SDK, the fake child, the
 * fuseraft and mew sessions): the table decides, a refusal is answered, an accepted control may still be
 * vetoed by the protocol, else the state moves and the action's handler runs. They cannot differ on the
 * decision, only on what each action means for their transport.
 */
export function actOnControl<R>(state: RunState, control: WireControlType, how: ControlActions<R>): R {
  const decision = decide(state, control);
  if (decision.status !== 'accepted') return how.refused(decision as RefusedDecision);
  const action = decision.action!;
  const vetoed = how.veto?.(action);
  if (vetoed !== undefined) return vetoed;
  how.moveTo(decision.next, action);
  return how.actions[action]();
}

/**
 * Moves a run on an internal event (the facts file's second table). `started` readies a starting run;
 * `turn-done` returns running to ready, finishes a closing run and, in finalizing, is the interrupted
 * turn unwinding before the tool-free turn starts, so the run stays finalizing; `final-turn-done` (the
 * end of the tool-free turn) finishes a finalizing run; `deadline` and `fatal` end any non-terminal
 * run as timed-out and failed. An event that cannot happen in a state, and every event in a terminal
 * state, leaves the state unchanged.
 */
export function advance(state: RunState, event: InternalEvent): RunState {
  if (isTerminal(state) || rowOf(state) === undefined) return state;
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
