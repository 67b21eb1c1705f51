// spawnRun matrix, state table: every (state, control) cell through the real pipeline, mirror vs. the child's own state.
import { afterEach, describe, expect, it } from 'vitest';
import { ControlRefusedError } from '../../../src/index.js';
import type { Ack, Run } from '../../../src/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import type { WireControlType } from '../../../src/wire/index.js';
import { expectCell, firstTurnUntil, holdUntil, reapLeftovers, supervise } from '../../helpers/spawn-harness.js';
import type { Supervised } from '../../helpers/spawn-harness.js';

afterEach(reapLeftovers);

/** Turn 1 holds until the child has read a `control` (the last one a test sends mid-turn); later turns answer at once. */
const firstTurn = (control: WireControlType) => firstTurnUntil(control, { answer: 'final answer' });

/** The tool-free final turn holds until the child has read a `control`, so the run stays in finalizing until then. */
function finalTurnUntil(control: WireControlType): Scenario {
  return { name: `final-turn-until-${control}`, turns: [{ answer: { echo: true } }], finalTurn: { steps: [holdUntil(control)], answer: 'final answer' } };
}

type Send = (run: Run) => Promise<Ack>;
const send = {
  prompt: (run: Run) => run.prompt('another prompt'),
  steer: (run: Run) => run.steer('a steer'),
  'follow-up': (run: Run) => run.followUp('a follow-up'),
  finalize: (run: Run) => run.finalize(),
  close: (run: Run) => run.close(),
  cancel: (run: Run) => run.cancel(),
} satisfies Record<string, Send>;

/** A kept-alive run whose first turn is under way, until the child reads `last`. */
async function running(last: WireControlType): Promise<Supervised> {
  const s = supervise(firstTurn(last), { task: 'work', keepAlive: true });
  await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
  expect(s.run.state).toBe('running');
  return s;
}

/** A kept-alive run idle in ready (no task). */
async function ready(scenario: Scenario): Promise<Supervised> {
  const s = supervise(scenario, { keepAlive: true });
  await s.waitState('ready');
  return s;
}

describe('starting: the child reads no control before ready', () => {
  it('a prompt sent while starting is handled once the child is ready (ready row)', async () => {
    const s = supervise({ ...firstTurn('cancel'), readyDelayMs: 1000 }, { keepAlive: true });
    expect(s.run.state).toBe('starting');
    const ack = await s.control(send.prompt);
    await expectCell(s, ack, { status: 'accepted', state: 'running' });
    await s.control(send.cancel);
    await s.finish({ status: 'cancelled', mirror: true });
  });

  it('cancel sent while starting: accepted, cancelled', async () => {
    // The kill-after-grace clock starts when the cancel is written: give the slow starter more than its start-up.
    const s = supervise({ ...firstTurn('cancel'), readyDelayMs: 1000 }, { keepAlive: true, killGraceMs: 10_000 });
    expect(s.run.state).toBe('starting');
    const ack = await s.control(send.cancel);
    await expectCell(s, ack, { status: 'accepted', state: 'cancelled' });
    const outcome = await s.finish({ status: 'cancelled', mirror: true });
    expect(outcome.turns).toBe(0);
  });
});

describe('ready row', () => {
  it.each(['prompt', 'steer', 'follow-up'] as const)('%s: accepted -> running, starts a turn', async (control) => {
    const s = await ready({ turns: [{ answer: { echo: true, prefix: 'echo:' } }] });
    const ack = await s.control(send[control]);
    await expectCell(s, ack, { status: 'accepted', state: 'running' });
    const started = await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
    expect(started.type === 'turn-started' && started.turn).toBe(1);
    if (control !== 'prompt') expect(await ack.delivery).toBe('injected');
    await s.waitEvent((event) => event.type === 'turn-complete', 'turn-complete');
    await s.waitState('ready');
    const close = await s.control(send.close);
    await expectCell(s, close, { status: 'accepted', state: 'done' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.turns).toBe(1);
    expect(outcome.finalText).toMatch(/^echo:/);
  });

  it('finalize: accepted -> finalizing, runs the tool-free turn, done', async () => {
    const s = await ready(firstTurn('cancel'));
    const ack = await s.control(send.finalize);
    await expectCell(s, ack, { status: 'accepted', state: 'finalizing' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe('final answer');
  });

  it('close: accepted -> done', async () => {
    const s = await ready(firstTurn('cancel'));
    const ack = await s.control(send.close);
    await expectCell(s, ack, { status: 'accepted', state: 'done' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.turns).toBe(0);
  });

  it('cancel: accepted -> cancelled', async () => {
    const s = await ready(firstTurn('cancel'));
    const ack = await s.control(send.cancel);
    await expectCell(s, ack, { status: 'accepted', state: 'cancelled' });
    const outcome = await s.finish({ status: 'cancelled', mirror: true });
    expect(outcome.finalText).toBeUndefined();
  });
});

describe('running row', () => {
  it('prompt: rejected; steer and follow-up: accepted and queued (state stays running)', async () => {
    const s = await running('follow-up');
    await expectCell(s, await s.control(send.prompt), {
      status: 'rejected',
      state: 'running',
      reason: 'a turn is running',
    });
    const steer = await s.control(send.steer);
    await expectCell(s, steer, { status: 'accepted', state: 'running' });
    const followUp = await s.control(send['follow-up']);
    await expectCell(s, followUp, { status: 'accepted', state: 'running' });
    expect(await steer.delivery).toBe('injected');
    expect(await followUp.delivery).toBe('injected');
    await s.waitEvent((event) => event.type === 'turn-complete' && event.turn === 2, 'turn 2 complete');
    await s.waitState('ready');
    await s.control(send.close);
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.turns).toBe(2);
  });

  it('finalize: accepted -> finalizing, interrupts the turn', async () => {
    const s = await running('finalize');
    const ack = await s.control(send.finalize);
    await expectCell(s, ack, { status: 'accepted', state: 'finalizing' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe('final answer');
    const completes = s.events.filter((event) => event.type === 'turn-complete');
    expect(completes.map((event) => event.type === 'turn-complete' && event.stopReason)).toEqual(['aborted', 'stop']);
  });

  it('close: accepted -> closing, done after the turn', async () => {
    const s = await running('close');
    const ack = await s.control(send.close);
    await expectCell(s, ack, { status: 'accepted', state: 'closing' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe('first:work');
    expect(outcome.turns).toBe(1);
  });

  it('cancel: accepted -> cancelled', async () => {
    const s = await running('cancel');
    const ack = await s.control(send.cancel);
    await expectCell(s, ack, { status: 'accepted', state: 'cancelled' });
    await s.finish({ status: 'cancelled', mirror: true });
  });
});

describe('closing row', () => {
  it('prompt/steer/follow-up: rejected; close: applied; finalize: accepted -> finalizing', async () => {
    const s = await running('finalize');
    await expectCell(s, await s.control(send.close), { status: 'accepted', state: 'closing' });
    for (const control of ['prompt', 'steer', 'follow-up'] as const) {
      await expectCell(s, await s.control(send[control]), { status: 'rejected', state: 'closing', reason: 'run is closing' });
    }
    await expectCell(s, await s.control(send.close), { status: 'applied', state: 'closing' });
    await expectCell(s, await s.control(send.finalize), { status: 'accepted', state: 'finalizing' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe('final answer');
  });

  it('cancel: accepted -> cancelled', async () => {
    const s = await running('cancel');
    await expectCell(s, await s.control(send.close), { status: 'accepted', state: 'closing' });
    await expectCell(s, await s.control(send.cancel), { status: 'accepted', state: 'cancelled' });
    await s.finish({ status: 'cancelled', mirror: true });
  });
});

describe('finalizing row', () => {
  it('prompt/steer/follow-up: rejected; finalize and close: applied; then done', async () => {
    const s = await ready(finalTurnUntil('close'));
    await expectCell(s, await s.control(send.finalize), { status: 'accepted', state: 'finalizing' });
    for (const control of ['prompt', 'steer', 'follow-up'] as const) {
      await expectCell(s, await s.control(send[control]), {
        status: 'rejected',
        state: 'finalizing',
        reason: 'run is finalizing',
      });
    }
    await expectCell(s, await s.control(send.finalize), { status: 'applied', state: 'finalizing' });
    await expectCell(s, await s.control(send.close), { status: 'applied', state: 'finalizing' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe('final answer');
  });

  it('cancel: accepted -> cancelled', async () => {
    const s = await ready(finalTurnUntil('cancel'));
    await expectCell(s, await s.control(send.finalize), { status: 'accepted', state: 'finalizing' });
    await expectCell(s, await s.control(send.cancel), { status: 'accepted', state: 'cancelled' });
    const outcome = await s.finish({ status: 'cancelled', mirror: true });
    expect(outcome.finalText).toBeUndefined();
  });
});

describe('terminal row', () => {
  it('after the run ended, prompt/steer/followUp are refused and cancel/close/finalize resolve runEnded; no line written', async () => {
    const s = supervise({ turns: [{ answer: 'done' }] }, { task: 'one turn' });
    const outcome = await s.run.outcome;
    expect(outcome.status).toBe('done');
    expect(s.run.ended).toBe(true);
    const linesRead = s.child.transcript().controls.length;
    for (const control of Object.keys(send) as (keyof typeof send)[]) {
      const refusal = await send[control](s.run).then(
        (ack) => ack,
        (error: unknown) => error,
      );
      if (control === 'cancel' || control === 'close' || control === 'finalize') {
        expect(refusal, control).toMatchObject({ status: 'unanswered', seq: 0, runEnded: true });
      } else {
        expect(refusal, control).toBeInstanceOf(ControlRefusedError);
        expect((refusal as ControlRefusedError).code).toBe('run-ended');
      }
    }
    expect(s.child.transcript().controls.length).toBe(linesRead);
    await s.finish({ status: 'done', mirror: true });
  });
});
