// The run state machine: every (state, control) cell of the seed's table and every (state, internal event).
import { describe, expect, it } from 'vitest';
import { actOnControl, advance, decide, INTERNAL_EVENTS, isTerminal, RUN_STATES, WIRE_CONTROL_TYPES } from '../../../src/wire/index.js';
import type { ControlAction } from '../../../src/wire/index.js';
import type { Decision, InternalEvent, RunState, WireControlType } from '../../../src/wire/index.js';

const CONTROLS: WireControlType[] = ['prompt', 'steer', 'follow-up', 'finalize', 'close', 'cancel'];
const STATES: RunState[] = ['starting', 'ready', 'running', 'closing', 'finalizing', 'done', 'cancelled', 'failed', 'timed-out'];
const TERMINALS: RunState[] = ['done', 'cancelled', 'failed', 'timed-out'];

const acc = (next: RunState, action: Decision['action']): Decision => ({ status: 'accepted', next, action });
const app = (state: RunState): Decision => ({ status: 'applied', next: state });
const rej = (state: RunState, reason: string): Decision => ({ status: 'rejected', next: state, reason });

/** The seed's table, cell by cell, in the column order prompt, steer, follow-up, finalize, close, cancel. */
const TABLE: Record<RunState, Decision[]> = {
  starting: [
    rej('starting', 'child is not ready'),
    rej('starting', 'child is not ready'),
    rej('starting', 'child is not ready'),
    rej('starting', 'child is not ready'),
    rej('starting', 'child is not ready'),
    acc('cancelled', 'cancel'),
  ],
  ready: [
    acc('running', 'start-turn'),
    acc('running', 'start-turn'),
    acc('running', 'start-turn'),
    acc('finalizing', 'start-final-turn'),
    acc('done', 'finish'),
    acc('cancelled', 'cancel'),
  ],
  running: [
    rej('running', 'a turn is running; send steer or follow-up'),
    acc('running', 'queue-steer'),
    acc('running', 'queue-follow-up'),
    acc('finalizing', 'interrupt-turn'),
    acc('closing', 'close-after-turn'),
    acc('cancelled', 'cancel'),
  ],
  closing: [
    rej('closing', 'run is closing'),
    rej('closing', 'run is closing'),
    rej('closing', 'run is closing'),
    acc('finalizing', 'interrupt-turn'),
    app('closing'),
    acc('cancelled', 'cancel'),
  ],
  finalizing: [
    rej('finalizing', 'run is finalizing'),
    rej('finalizing', 'run is finalizing'),
    rej('finalizing', 'run is finalizing'),
    app('finalizing'),
    app('finalizing'),
    acc('cancelled', 'cancel'),
  ],
  done: CONTROLS.map(() => rej('done', 'run is done')),
  cancelled: CONTROLS.map(() => rej('cancelled', 'run is cancelled')),
  failed: CONTROLS.map(() => rej('failed', 'run is failed')),
  'timed-out': CONTROLS.map(() => rej('timed-out', 'run is timed-out')),
};

describe('decide', () => {
  for (const state of STATES) {
    CONTROLS.forEach((control, column) => {
      it(`${state} x ${control}`, () => {
        expect(decide(state, control)).toEqual(TABLE[state][column]);
      });
    });
  }

  it('rejects an unknown control or state, leaving the state unchanged', () => {
    expect(decide('running', 'pause')).toEqual(rej('running', 'no transition for pause in state running'));
    expect(decide('bogus' as RunState, 'prompt')).toEqual(rej('bogus' as RunState, 'no transition for prompt in state bogus'));
    expect(decide('ready', 'toString').status).toBe('rejected');
    expect(decide('done', 'pause')).toEqual(rej('done', 'run is done'));
  });

  it('returns a fresh decision each time, so a caller cannot corrupt the table', () => {
    const first = decide('ready', 'prompt');
    first.next = 'failed';
    expect(decide('ready', 'prompt').next).toBe('running');
  });

  it('exposes the state and control lists', () => {
    expect(RUN_STATES).toEqual(STATES);
    expect(new Set(WIRE_CONTROL_TYPES)).toEqual(new Set(CONTROLS));
  });
});

/** Expected next state per (state, internal event), in the order started, turn-done, final-turn-done, deadline, fatal. */
const EVENTS: InternalEvent[] = ['started', 'turn-done', 'final-turn-done', 'deadline', 'fatal'];
const ADVANCE: Record<RunState, RunState[]> = {
  starting: ['ready', 'starting', 'starting', 'timed-out', 'failed'],
  ready: ['ready', 'ready', 'ready', 'timed-out', 'failed'],
  running: ['running', 'ready', 'running', 'timed-out', 'failed'],
  closing: ['closing', 'done', 'closing', 'timed-out', 'failed'],
  finalizing: ['finalizing', 'finalizing', 'done', 'timed-out', 'failed'],
  done: ['done', 'done', 'done', 'done', 'done'],
  cancelled: ['cancelled', 'cancelled', 'cancelled', 'cancelled', 'cancelled'],
  failed: ['failed', 'failed', 'failed', 'failed', 'failed'],
  'timed-out': ['timed-out', 'timed-out', 'timed-out', 'timed-out', 'timed-out'],
};

describe('advance', () => {
  for (const state of STATES) {
    EVENTS.forEach((event, column) => {
      it(`${state} on ${event} -> ${ADVANCE[state][column]}`, () => {
        expect(advance(state, event)).toBe(ADVANCE[state][column]);
      });
    });
  }

  it('keeps finalizing through the interrupted turn, then finishes on the tool-free turn', () => {
    let state: RunState = 'running';
    state = decide(state, 'finalize').next;
    expect(state).toBe('finalizing');
    state = advance(state, 'turn-done');
    expect(state).toBe('finalizing');
    state = advance(state, 'final-turn-done');
    expect(state).toBe('done');
  });

  it('walks a whole run: starting, ready, running, ready, closing, done', () => {
    let state: RunState = 'starting';
    state = advance(state, 'started');
    state = decide(state, 'prompt').next;
    expect(state).toBe('running');
    state = advance(state, 'turn-done');
    expect(state).toBe('ready');
    state = decide(state, 'follow-up').next;
    state = decide(state, 'close').next;
    expect(state).toBe('closing');
    state = advance(state, 'turn-done');
    expect(state).toBe('done');
    expect(isTerminal(state)).toBe(true);
  });

  it('leaves an unknown state or event alone', () => {
    expect(advance('bogus' as RunState, 'deadline')).toBe('bogus');
    expect(advance('running', 'reboot' as InternalEvent)).toBe('running');
    expect(INTERNAL_EVENTS).toEqual(EVENTS);
  });
});

describe('isTerminal', () => {
  for (const state of STATES) {
    it(`${state} is ${TERMINALS.includes(state) ? '' : 'not '}terminal`, () => {
      expect(isTerminal(state)).toBe(TERMINALS.includes(state));
    });
  }
});

describe('actOnControl: the one decide-then-act step', () => {
  /** Runs one control through a recording implementation: what it answered and the order of its steps. */
  function step(state: RunState, control: WireControlType, veto?: ControlAction) {
    const log: string[] = [];
    let now = state;
    const actions = Object.fromEntries(
      ['start-turn', 'queue-steer', 'queue-follow-up', 'start-final-turn', 'interrupt-turn', 'close-after-turn', 'finish', 'cancel'].map((action) => [
        action,
        () => {
          log.push(`act ${action} in ${now}`);
          return `did ${action}`;
        },
      ]),
    ) as Record<ControlAction, () => string>;
    const result = actOnControl(state, control, {
      refused: ({ status, reason }) => `${status}${reason === undefined ? '' : `: ${reason}`}`,
      veto: (action) => (action === veto ? 'vetoed' : undefined),
      moveTo: (next, action) => {
        log.push(`move to ${next} for ${action}`);
        now = next;
      },
      actions,
    });
    return { result, log, state: now };
  }

  it('accepted: the state moves first, then the action of the table runs', () => {
    expect(step('ready', 'prompt')).toEqual({ result: 'did start-turn', log: ['move to running for start-turn', 'act start-turn in running'], state: 'running' });
    expect(step('running', 'finalize').result).toBe('did interrupt-turn');
  });

  it('refused: rejected with the table reason, or applied; nothing moves, nothing acts', () => {
    expect(step('running', 'prompt')).toEqual({ result: 'rejected: a turn is running; send steer or follow-up', log: [], state: 'running' });
    expect(step('closing', 'close')).toEqual({ result: 'applied', log: [], state: 'closing' });
  });

  it('vetoed: the protocol refuses an accepted action; nothing moves, nothing acts', () => {
    expect(step('running', 'steer', 'queue-steer')).toEqual({ result: 'vetoed', log: [], state: 'running' });
  });
});
