// Randomized control scripts against real fake children: per-run invariants, and a mirror replayed from events
// alone (decide on acks, advance on turn-completes) agreeing with the child's own transcript.
import fc from 'fast-check';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { advance, decide, isTerminal } from '../../../src/wire/index.js';
import type { RunState, WireControlType, WireEvent } from '../../../src/wire/index.js';
import { fakeChild } from '../../../src/testing/index.js';
import type { FakeChild, Scenario } from '../../../src/testing/index.js';
import { ScriptedParent } from '../../helpers/scripted-parent.js';

const FAST = { turnTickMs: 5, idleTickMs: 10 };
const SCENARIO: Scenario = {
  turns: [{ steps: [{ text: 'working' }, { pause: 120 }, { tool: 'probe', durationMs: 80 }], answer: { echo: true, prefix: 'answer: ' } }],
  finalTurn: { steps: [{ pause: 100 }], answer: 'final' },
};

type Step = { kind: 'send'; control: WireControlType; text: string } | { kind: 'wait'; ms: number };
const CONTROL_TYPES: WireControlType[] = ['prompt', 'steer', 'follow-up', 'finalize', 'close', 'cancel'];
const step = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('send' as const), control: fc.constantFrom(...CONTROL_TYPES), text: fc.constantFrom('a', 'b', 'same') }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 250 }) }) },
);
const SCRIPTS = fc.sample(fc.array(step, { minLength: 2, maxLength: 10 }), { numRuns: 24, seed: 20261129 });

const made: Array<{ fake: FakeChild; parent: ScriptedParent }> = [];
afterEach(async () => {
  for (const { fake, parent } of made.splice(0)) {
    await parent.dispose(fake.token);
    expect(fake.livePids()).toEqual([]);
    fake.cleanup();
  }
});

/**
 * Mirrors the run from events alone, as a parent would: decide on each accepted/applied ack, advance on each
 * turn-complete (the interrupted turn's completion keeps finalizing), ready, idle turns, exit. Returns the
 * mirrored state right after each ack, by ref.
 */
function replay(events: WireEvent[], typeOf: Map<number, WireControlType>): { afterAck: Map<number, RunState>; final: RunState } {
  let state: RunState = 'starting';
  let turn = 0;
  let interruptedTurn: number | undefined;
  const afterAck = new Map<number, RunState>();
  for (const event of events) {
    if (event.type === 'ready') state = advance(state, 'started');
    else if (event.type === 'turn-started') {
      turn = event.turn;
      if (state === 'ready') state = 'running';
    } else if (event.type === 'control-ack' && event.ref !== undefined) {
      const type = typeOf.get(event.ref) as WireControlType;
      if (event.status !== 'rejected') {
        const decision = decide(state, type);
        if (decision.action === 'interrupt-turn') interruptedTurn = turn;
        state = decision.next;
      }
      afterAck.set(event.ref, state);
    } else if (event.type === 'turn-complete') {
      const final = state === 'finalizing' && event.turn !== interruptedTurn;
      state = advance(state, final ? 'final-turn-done' : 'turn-done');
    } else if (event.type === 'exit') {
      state = event.status;
    }
  }
  return { afterAck, final: state };
}

it.each(SCRIPTS.map((script, index) => [index, script] as const))('random script %i', async (_index, script: Step[]) => {
  const fake = fakeChild(SCENARIO, FAST);
  const parent = new ScriptedParent(fake, { task: 'start' });
  made.push({ fake, parent });
  const typeOf = new Map<number, WireControlType>([[1, 'prompt']]);
  const exited = () => parent.lenientEvents().some((event) => event.type === 'exit');
  for (const item of script) {
    if (exited()) break;
    if (item.kind === 'wait') await sleep(item.ms);
    else typeOf.set(parent.send(item.control, (['prompt', 'steer', 'follow-up'].includes(item.control) ? { text: item.text } : {}) as never), item.control);
  }
  if (!exited()) typeOf.set(parent.send('cancel'), 'cancel');
  const { code } = await parent.waitExit();
  const events = parent.events();
  const transcript = fake.transcript();

  // Exit last and once; result once, right before exit, exactly when done; code 0 exactly when done.
  const exits = events.filter((event) => event.type === 'exit');
  expect(exits).toHaveLength(1);
  const last = events.at(-1);
  expect(last?.type).toBe('exit');
  const status = last?.type === 'exit' ? last.status : undefined;
  const results = events.filter((event) => event.type === 'result');
  expect(results).toHaveLength(status === 'done' ? 1 : 0);
  if (status === 'done') expect(events.at(-2)?.type).toBe('result');
  expect(code === 0).toBe(status === 'done');

  // Every control the child read was acked exactly once, in order; the ones it never read came after its exit.
  const read = transcript.controls.map((control) => control.raw);
  expect(parent.sentLines.slice(0, read.length)).toEqual(read);
  const acks = events.filter((event) => event.type === 'control-ack');
  expect(acks.map((ack) => (ack.type === 'control-ack' ? ack.ref : undefined))).toEqual(
    transcript.controls.map((control) => control.message?.seq),
  );

  // Injected refs name accepted steers / follow-ups with the same text; info refs name accepted ones never injected.
  const sentText = new Map(parent.sentLines.map((line) => JSON.parse(line) as { seq: number; text?: string }).map((control) => [control.seq, control.text]));
  for (const event of events) {
    if ((event.type === 'steering-injected' || event.type === 'follow-up-injected') && event.ref !== undefined) {
      expect(typeOf.get(event.ref)).toBe(event.type === 'steering-injected' ? 'steer' : 'follow-up');
      expect(sentText.get(event.ref)).toBe(event.text);
    }
  }

  // The mirror replayed from events agrees with the child's own state after every acked control, and at the end.
  const mirror = replay(events, typeOf);
  for (const control of transcript.controls) {
    if (control.ack?.ref !== undefined && control.message !== undefined) {
      expect({ ref: control.ack.ref, state: mirror.afterAck.get(control.ack.ref) }).toEqual({ ref: control.ack.ref, state: control.state });
    }
  }
  expect(mirror.final).toBe(transcript.finalState);
  expect(isTerminal(transcript.finalState)).toBe(true);
  expect(transcript.exitCode).toBe(code);
});
