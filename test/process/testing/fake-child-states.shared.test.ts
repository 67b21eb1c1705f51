// Conformance of the fake child's state machine: every cell of the state table, refs, finalize, close, cancel.
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_FINALIZE_NOTE } from '../../../src/wire/index.js';
import type { WireControlType, WireEvent } from '../../../src/wire/index.js';
import type { FakeChild, Scenario } from '../../../src/testing/index.js';
import { checkInvariants, scriptedChildren, ScriptedParent } from '../../helpers/scripted-parent.js';

/** Turns (and the final turn) that stay busy for a minute, so a state holds while a control lands. */
const LONG: Scenario = {
  name: 'long',
  turns: [{ steps: [{ text: 'working' }, { pause: 60_000 }], answer: 'long answer' }],
  finalTurn: { steps: [{ pause: 60_000 }], answer: 'final' },
};

const { start, reap } = scriptedChildren();
afterEach(reap);

const types = (events: WireEvent[]) => events.map((event) => event.type);
/** Types of the events after the ack of `seq` (the ack's effects). */
function after(events: WireEvent[], seq: number): string[] {
  const index = events.findIndex((event) => event.type === 'control-ack' && event.ref === seq);
  return types(events.slice(index + 1)).filter((type) => !/delta|assistant|llm-|tool-|user/.test(type));
}

/** Drives a child to `state` and returns it there, quiet. */
async function reach(state: 'ready' | 'running' | 'closing' | 'finalizing') {
  const run = start(LONG);
  const { parent } = run;
  await parent.waitForEvent('ready');
  if (state === 'ready') return run;
  parent.send('prompt', { text: 'go' });
  await parent.waitForEvent('turn-started');
  if (state === 'running') return run;
  if (state === 'closing') {
    await parent.ackOf(parent.send('close'));
    return run;
  }
  await parent.ackOf(parent.send('finalize'));
  await parent.waitForEvent('turn-started', (event) => event.turn === 2);
  return run;
}

async function finishAndCheck(parent: ScriptedParent, fake: FakeChild) {
  if (!parent.lenientEvents().some((event) => event.type === 'exit')) await parent.ackOf(parent.send('cancel'));
  const { code } = await parent.waitExit();
  expect(checkInvariants(parent, code)).toEqual([]);
  const transcript = fake.transcript();
  const last = parent.events().at(-1);
  expect(last?.type === 'exit' ? last.status : undefined).toBe(transcript.finalState);
  expect(transcript.exitCode).toBe(code);
}

type Cell = { status: 'accepted' | 'applied' | 'rejected'; reason?: string; then?: string[]; state: string };
const CONTROLS: WireControlType[] = ['prompt', 'steer', 'follow-up', 'finalize', 'close', 'cancel'];

/** The seed's table, as seen from the child: ack status, reason, the lifecycle events that follow, the child's state. */
const TABLE: Record<'ready' | 'running' | 'closing' | 'finalizing', Record<WireControlType, Cell>> = {
  ready: {
    prompt: { status: 'accepted', then: ['turn-started'], state: 'running' },
    steer: { status: 'accepted', then: ['turn-started', 'steering-injected'], state: 'running' },
    'follow-up': { status: 'accepted', then: ['turn-started', 'follow-up-injected'], state: 'running' },
    finalize: { status: 'accepted', then: ['turn-started'], state: 'finalizing' },
    close: { status: 'accepted', then: ['result', 'exit'], state: 'done' },
    cancel: { status: 'accepted', then: ['exit'], state: 'cancelled' },
  },
  running: {
    prompt: { status: 'rejected', reason: 'a turn is running; send steer or follow-up', state: 'running' },
    steer: { status: 'accepted', state: 'running' },
    'follow-up': { status: 'accepted', state: 'running' },
    finalize: { status: 'accepted', then: ['turn-complete', 'turn-started'], state: 'finalizing' },
    close: { status: 'accepted', state: 'closing' },
    cancel: { status: 'accepted', then: ['turn-complete', 'exit'], state: 'cancelled' },
  },
  closing: {
    prompt: { status: 'rejected', reason: 'run is closing', state: 'closing' },
    steer: { status: 'rejected', reason: 'run is closing', state: 'closing' },
    'follow-up': { status: 'rejected', reason: 'run is closing', state: 'closing' },
    finalize: { status: 'accepted', then: ['turn-complete', 'turn-started'], state: 'finalizing' },
    close: { status: 'applied', state: 'closing' },
    cancel: { status: 'accepted', then: ['turn-complete', 'exit'], state: 'cancelled' },
  },
  finalizing: {
    prompt: { status: 'rejected', reason: 'run is finalizing', state: 'finalizing' },
    steer: { status: 'rejected', reason: 'run is finalizing', state: 'finalizing' },
    'follow-up': { status: 'rejected', reason: 'run is finalizing', state: 'finalizing' },
    finalize: { status: 'applied', state: 'finalizing' },
    close: { status: 'applied', state: 'finalizing' },
    cancel: { status: 'accepted', then: ['turn-complete', 'exit'], state: 'cancelled' },
  },
};

function payloadOf(control: WireControlType) {
  return control === 'prompt' || control === 'steer' || control === 'follow-up' ? { text: `a ${control}` } : {};
}

describe('state table (each cell through a real child)', () => {
  for (const [state, row] of Object.entries(TABLE) as Array<[keyof typeof TABLE, Record<WireControlType, Cell>]>) {
    for (const control of CONTROLS) {
      const cell = row[control];
      it(`${state} + ${control} -> ${cell.status}${cell.then ? `, ${cell.then.join(', ')}` : ''}`, async () => {
        const { parent, fake } = await reach(state);
        const seq = parent.send(control, payloadOf(control) as never);
        const ack = await parent.ackOf(seq);
        expect(ack.status).toBe(cell.status);
        if (cell.reason !== undefined) expect(ack.reason).toBe(cell.reason);
        if (cell.then !== undefined) {
          const expected = cell.then;
          await parent.waitFor((events) => expected.every((type) => after(events, seq).includes(type)), cell.then.join(','));
          expect(after(parent.lenientEvents(), seq).slice(0, expected.length)).toEqual(expected);
        }
        const entry = fake.transcript().controls.find((control) => control.message?.seq === seq);
        expect(entry?.ack?.status).toBe(cell.status);
        expect(entry?.state).toBe(cell.state);
        await finishAndCheck(parent, fake);
      });
    }
  }

  it('a terminal run rejects every control ("run is cancelled") until it exits', async () => {
    const { parent, fake } = start(LONG);
    await parent.waitForEvent('ready');
    // One write: the child reads them in one batch, so the later lines meet the cancelled state.
    const lines = ['prompt', 'cancel', ...CONTROLS].map((control, index) =>
      JSON.stringify({ v: 1, seq: index + 1, type: control, run: parent.runId, ...payloadOf(control as WireControlType) }),
    );
    parent.appendRaw(`${lines.join('\n')}\n`);
    const { code } = await parent.waitExit();
    const acks = parent.events().filter((event) => event.type === 'control-ack');
    expect(acks.map((ack) => ack.status)).toEqual(['accepted', 'accepted', ...CONTROLS.map(() => 'rejected')]);
    for (const ack of acks.slice(2)) expect(ack.reason).toBe('run is cancelled');
    expect(types(parent.events()).slice(-2)).toEqual(['turn-complete', 'exit']);
    expect(checkInvariants(parent, code)).toEqual([]);
    expect(fake.transcript().finalState).toBe('cancelled');
  });

  it('controls are read only after ready: a prompt appended before spawn is handled in ready', async () => {
    const { parent } = start('echo', { task: 'before spawn' });
    const events = await parent.waitFor((all) => all.some((event) => event.type === 'turn-complete'), 'turn-complete');
    const order = types(events);
    expect(order.indexOf('ready')).toBeLessThan(order.indexOf('control-ack'));
    expect(order.indexOf('control-ack')).toBe(order.indexOf('turn-started') - 1);
    const answer = events.find((event) => event.type === 'assistant-text' && event['final?']);
    expect(answer?.type === 'assistant-text' && answer.text).toBe('before spawn');
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(code).toBe(0);
    expect(checkInvariants(parent, code)).toEqual([]);
  });
});

describe('cancel from every non-terminal state', () => {
  for (const state of ['ready', 'running', 'closing', 'finalizing'] as const) {
    it(`from ${state}: accepted, an aborted turn-complete when a turn runs, exit cancelled, code 1`, async () => {
      const { parent, fake } = await reach(state);
      await parent.ackOf(parent.send('cancel'));
      const { code } = await parent.waitExit();
      expect(code).toBe(1);
      const events = parent.events();
      const exit = events.at(-1);
      expect(exit?.type === 'exit' && exit.status).toBe('cancelled');
      if (state !== 'ready') {
        const complete = events.at(-2);
        expect(complete?.type === 'turn-complete' && complete['stop-reason']).toBe('aborted');
      }
      expect(checkInvariants(parent, code)).toEqual([]);
      expect(fake.transcript().finalState).toBe('cancelled');
    });
  }
});

describe('steer and follow-up refs', () => {
  it('steers queued mid-turn are injected at the next boundary with their refs, oldest first', async () => {
    const { parent } = start({
      turns: [{ steps: [{ pause: 400 }, { text: 'after pause' }], answer: 'done' }],
    });
    await parent.waitForEvent('ready');
    parent.send('prompt', { text: 'go' });
    await parent.waitForEvent('turn-started');
    const first = parent.send('steer', { text: 'same' });
    const second = parent.send('steer', { text: 'same' });
    const third = parent.send('steer', { text: 'other' });
    const events = await parent.waitFor((all) => all.filter((event) => event.type === 'steering-injected').length === 3, 'three injections');
    const injected = events.filter((event) => event.type === 'steering-injected');
    expect(injected.map((event) => (event.type === 'steering-injected' ? [event.ref, event.text] : []))).toEqual([
      [first, 'same'],
      [second, 'same'],
      [third, 'other'],
    ]);
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(checkInvariants(parent, code)).toEqual([]);
  });

  it('a follow-up runs as the next turn (turn-started from ready) with follow-up-injected carrying its ref', async () => {
    const { parent } = start({ turns: [{ steps: [{ pause: 300 }], answer: 'first' }, { answer: { echo: true, prefix: 'second: ' } }] });
    await parent.waitForEvent('ready');
    parent.send('prompt', { text: 'go' });
    await parent.waitForEvent('turn-started');
    const seq = parent.send('follow-up', { text: 'more please' });
    const injected = await parent.waitForEvent('follow-up-injected');
    expect(injected.ref).toBe(seq);
    expect(injected.text).toBe('more please');
    const events = await parent.waitFor((all) => all.filter((event) => event.type === 'turn-complete').length === 2, 'two turns');
    const order = types(events).filter((type) => ['turn-started', 'turn-complete', 'follow-up-injected'].includes(type));
    expect(order).toEqual(['turn-started', 'turn-complete', 'turn-started', 'follow-up-injected', 'turn-complete']);
    parent.send('close');
    const { code } = await parent.waitExit();
    const result = parent.events().find((event) => event.type === 'result');
    expect(result?.type === 'result' && result['final-text']).toBe('second: more please');
    expect(checkInvariants(parent, code)).toEqual([]);
  });

  it('a steer or follow-up sent in ready starts a turn and is injected with its ref', async () => {
    const { parent } = start('echo');
    await parent.waitForEvent('ready');
    const steer = parent.send('steer', { text: 'steer from ready' });
    expect((await parent.waitForEvent('steering-injected')).ref).toBe(steer);
    await parent.waitForEvent('turn-complete');
    const followUp = parent.send('follow-up', { text: 'follow-up from ready' });
    expect((await parent.waitForEvent('follow-up-injected')).ref).toBe(followUp);
    await parent.waitForEvent('turn-complete', (event) => event.turn === 2);
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(checkInvariants(parent, code)).toEqual([]);
  });
});

describe('a pause that waits for controls (untilControls, untilControl)', () => {
  /** The index of the first event matching `match`, for order assertions. */
  const indexOf = (events: WireEvent[], match: (event: WireEvent) => boolean) => events.findIndex(match);
  const ackIndex = (events: WireEvent[], seq: number) => indexOf(events, (event) => event.type === 'control-ack' && event.ref === seq);
  const injectedIndex = (events: WireEvent[], seq: number) =>
    indexOf(events, (event) => event.type === 'steering-injected' && event.ref === seq);

  it('untilControls: 3 holds the turn through two controls (one rejected) and ends it on the third, long before its cap', async () => {
    const { parent, fake } = start({ turns: [{ steps: [{ pause: 60_000, untilControls: 3 }], answer: 'done' }] });
    await parent.waitForEvent('ready');
    parent.send('prompt', { text: 'go' });
    await parent.waitForEvent('turn-started');
    const started = Date.now();
    const steer = parent.send('steer', { text: 'first' });
    await parent.ackOf(steer);
    const rejected = parent.send('prompt', { text: 'a turn is running' });
    expect((await parent.ackOf(rejected)).status).toBe('rejected');
    const last = parent.send('steer', { text: 'second' });
    const events = await parent.waitFor((all) => all.some((event) => event.type === 'turn-complete'), 'turn-complete');
    // Had the pause ended on an earlier control, the first steer would be injected before the later acks.
    expect(injectedIndex(events, steer)).toBeGreaterThan(ackIndex(events, last));
    expect(injectedIndex(events, last)).toBeGreaterThan(ackIndex(events, last));
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(fake.transcript().entries.some((entry) => entry.kind === 'note' && entry.what === 'pause ended by controls')).toBe(true);
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(checkInvariants(parent, code)).toEqual([]);
  });

  it('untilControl: close ends the pause on the close, not on the steer before it', async () => {
    const { parent } = start({ turns: [{ steps: [{ pause: 60_000, untilControl: 'close' }], answer: 'done' }] });
    await parent.waitForEvent('ready');
    parent.send('prompt', { text: 'go' });
    await parent.waitForEvent('turn-started');
    const steer = parent.send('steer', { text: 'noted' });
    await parent.ackOf(steer);
    const close = parent.send('close');
    const { code } = await parent.waitExit();
    const events = parent.events();
    expect(injectedIndex(events, steer)).toBeGreaterThan(ackIndex(events, close));
    expect(events.find((event) => event.type === 'result')).toMatchObject({ 'final-text': 'done' });
    expect(checkInvariants(parent, code)).toEqual([]);
  });

  it('without the controls it waits for, the pause ends at its cap like a plain pause', async () => {
    const { parent, fake } = start({ turns: [{ steps: [{ pause: 200, untilControls: 5, untilControl: 'steer' }], answer: 'done' }] });
    await parent.waitForEvent('ready');
    parent.send('prompt', { text: 'go' });
    await parent.waitForEvent('turn-complete');
    expect(fake.transcript().entries.some((entry) => entry.kind === 'note' && entry.what === 'pause ended by controls')).toBe(false);
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(checkInvariants(parent, code)).toEqual([]);
  });
});

describe('finalize', () => {
  it('from ready: ack, turn-started, a tool-free turn with the note, result, exit done', async () => {
    const { parent } = start({ finalTurn: { steps: [{ tool: 'never' }], answer: { echo: true, prefix: 'final: ' } } });
    await parent.waitForEvent('ready');
    const seq = parent.send('finalize', { note: 'wrap it up' });
    const { code } = await parent.waitExit();
    expect(code).toBe(0);
    const events = parent.events();
    expect(after(events, seq)).toEqual(['turn-started', 'turn-complete', 'result', 'exit']);
    expect(types(events)).not.toContain('tool-call');
    const result = events.find((event) => event.type === 'result');
    expect(result?.type === 'result' && result['final-text']).toBe('final: wrap it up');
    expect(checkInvariants(parent, code)).toEqual([]);
  });

  it('without a note, the final turn uses the default note', async () => {
    const { parent } = start({ finalTurn: { answer: { echo: true } } });
    await parent.waitForEvent('ready');
    parent.send('finalize');
    const { code } = await parent.waitExit();
    const user = parent.events().find((event) => event.type === 'user');
    expect(user?.type === 'user' && user.text).toBe(DEFAULT_FINALIZE_NOTE);
    expect(checkInvariants(parent, code)).toEqual([]);
  });

  it('from running: ack, info with dropped refs (steers then follow-ups), aborted turn-complete, then the final turn', async () => {
    const { parent } = start({
      turns: [{ steps: [{ tool: 'slow_tool', durationMs: 60_000 }], answer: 'never' }],
      finalTurn: { answer: 'final answer' },
    });
    await parent.waitForEvent('ready');
    parent.send('prompt', { text: 'go' });
    await parent.waitForEvent('tool-call');
    const followUp = parent.send('follow-up', { text: 'later' });
    const steer = parent.send('steer', { text: 'now' });
    await parent.ackOf(steer);
    const finalize = parent.send('finalize');
    const { code } = await parent.waitExit();
    expect(code).toBe(0);
    const events = parent.events();
    expect(after(events, finalize)).toEqual(['info', 'turn-complete', 'turn-started', 'turn-complete', 'result', 'exit']);
    const info = events.find((event) => event.type === 'info');
    expect(info?.type === 'info' && info.refs).toEqual([steer, followUp]);
    const completes = events.filter((event) => event.type === 'turn-complete');
    expect(completes.map((event) => (event.type === 'turn-complete' ? event['stop-reason'] : ''))).toEqual(['aborted', 'stop']);
    const cancelledTool = events.find((event) => event.type === 'tool-result');
    expect(cancelledTool?.type === 'tool-result' && cancelledTool['is-error?']).toBe(true);
    const result = events.find((event) => event.type === 'result');
    expect(result?.type === 'result' && result['final-text']).toBe('final answer');
    expect(checkInvariants(parent, code)).toEqual([]);
  });
});

describe('close', () => {
  it('mid-run: the turn finishes, dropped follow-ups are listed, then result and exit done', async () => {
    const { parent, fake } = start({ turns: [{ steps: [{ pause: 300 }], answer: 'complete answer' }] });
    await parent.waitForEvent('ready');
    parent.send('prompt', { text: 'go' });
    await parent.waitForEvent('turn-started');
    const followUp = parent.send('follow-up', { text: 'never runs' });
    await parent.ackOf(followUp);
    const close = parent.send('close');
    const { code } = await parent.waitExit();
    expect(code).toBe(0);
    const events = parent.events();
    expect(after(events, close)).toEqual(['turn-complete', 'info', 'result', 'exit']);
    const info = events.find((event) => event.type === 'info');
    expect(info?.type === 'info' && info.refs).toEqual([followUp]);
    const result = events.find((event) => event.type === 'result');
    expect(result?.type === 'result' && result['final-text']).toBe('complete answer');
    expect(checkInvariants(parent, code)).toEqual([]);
    expect(fake.transcript().states).toEqual(['starting', 'ready', 'running', 'closing', 'done']);
  });

  it('result usage sums every turn of the run', async () => {
    const usage = { input: 10, output: 5, nested: { tokens: 1 } };
    const { parent } = start({ turns: [{ answer: 'x', usage }] });
    await parent.waitForEvent('ready');
    parent.send('prompt', { text: 'one' });
    await parent.waitForEvent('turn-complete');
    parent.send('prompt', { text: 'two' });
    await parent.waitForEvent('turn-complete', (event) => event.turn === 2);
    parent.send('close');
    const { code } = await parent.waitExit();
    const result = parent.events().find((event) => event.type === 'result');
    expect(result?.type === 'result' && result.usage).toEqual({ input: 20, output: 10, nested: { tokens: 2 } });
    expect(checkInvariants(parent, code)).toEqual([]);
  });
});
