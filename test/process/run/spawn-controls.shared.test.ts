// spawnRun matrix, controls: steer/follow-up delivery, finalize, cancel from every state, close, keepAlive, refusals, ack timeouts.
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_LINE_BYTES } from '../../../src/wire/index.js';
import { ControlRefusedError } from '../../../src/index.js';
import type { Ack, Delivery, RunEvent } from '../../../src/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { expectCell, firstTurnUntil, holdUntil, reapLeftovers, supervise, waitChildControl } from '../../helpers/spawn-harness.js';
import type { Supervised } from '../../helpers/spawn-harness.js';

afterEach(reapLeftovers);

/** Turn 1 holds until the cancel that ends each of these runs. */
const UNTIL_CANCEL = firstTurnUntil('cancel');

async function turnStarted(s: Supervised, turn = 1): Promise<void> {
  await s.waitEvent((event) => event.type === 'turn-started' && event.turn === turn, `turn-started ${turn}`);
}

function refusal(promise: Promise<Ack>): Promise<unknown> {
  return promise.then(
    (ack) => ack,
    (error: unknown) => error,
  );
}

describe('steer and follow-up', () => {
  it('a steer is injected with its ref; delivery resolves injected', async () => {
    const s = supervise(firstTurnUntil('steer'), { task: 'work' });
    const deliveries: [number, Delivery][] = [];
    s.run.on('delivery', (seq, delivery) => deliveries.push([seq, delivery]));
    await turnStarted(s);
    const ack = await s.control((run) => run.steer('look at the tests'));
    expect(ack.status).toBe('accepted');
    expect(ack.delivery).toBeInstanceOf(Promise);
    expect(await ack.delivery).toBe('injected');
    const injected = await s.waitEvent((event) => event.type === 'steering-injected', 'steering-injected');
    expect(injected).toMatchObject({ ref: ack.seq, text: 'look at the tests' });
    expect(deliveries).toEqual([[ack.seq, 'injected']]);
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.turns).toBe(1);
  });

  it('a follow-up is injected after the turn with its ref and starts the next turn', async () => {
    const s = supervise(firstTurnUntil('follow-up'), { task: 'work' });
    await turnStarted(s);
    const ack = await s.control((run) => run.followUp('and then summarise'));
    expect(ack.status).toBe('accepted');
    expect(await ack.delivery).toBe('injected');
    const injected = await s.waitEvent((event) => event.type === 'follow-up-injected', 'follow-up-injected');
    expect(injected).toMatchObject({ ref: ack.seq, text: 'and then summarise' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.turns).toBe(2);
    expect(outcome.finalText).toBe('next:and then summarise');
    // Turn 2 started only after turn 1 completed.
    const order = s.events.map((event) => (event.type === 'turn-started' || event.type === 'turn-complete' ? `${event.type}:${event.turn}` : ''));
    expect(order.filter(Boolean)).toEqual(['turn-started:1', 'turn-complete:1', 'turn-started:2', 'turn-complete:2']);
  });

  it('a queued steer and follow-up are dropped by finalize: info.refs, delivery dropped', async () => {
    const s = supervise(firstTurnUntil('finalize'), { task: 'work' });
    await turnStarted(s);
    const steer = await s.control((run) => run.steer('never seen'));
    const followUp = await s.control((run) => run.followUp('never seen either'));
    const finalize = await s.control((run) => run.finalize('wrap up now'));
    expect([steer.status, followUp.status, finalize.status]).toEqual(['accepted', 'accepted', 'accepted']);
    expect(await steer.delivery).toBe('dropped');
    expect(await followUp.delivery).toBe('dropped');
    const info = await s.waitEvent((event) => event.type === 'info' && Array.isArray(event.refs), 'info with refs');
    expect(info.type === 'info' && info.refs).toEqual([steer.seq, followUp.seq]);
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe('final:wrap up now');
    expect(s.events.some((event) => event.type === 'steering-injected' || event.type === 'follow-up-injected')).toBe(false);
  });

  it('two steers with the same text are injected oldest first, each with its own ref', async () => {
    const s = supervise(firstTurnUntil(2), { task: 'work' });
    await turnStarted(s);
    const first = await s.control((run) => run.steer('same words'));
    const second = await s.control((run) => run.steer('same words'));
    expect([await first.delivery, await second.delivery]).toEqual(['injected', 'injected']);
    const refs = s.events.filter((event) => event.type === 'steering-injected').map((event) => event.type === 'steering-injected' && event.ref);
    expect(refs).toEqual([first.seq, second.seq]);
    await s.finish({ status: 'done', mirror: true });
  });

  it('a steer queued when the run is cancelled is dropped', async () => {
    const s = supervise(UNTIL_CANCEL, { task: 'work' });
    await turnStarted(s);
    const steer = await s.control((run) => run.steer('too late'));
    await s.control((run) => run.cancel());
    expect(await steer.delivery).toBe('dropped');
    await s.finish({ status: 'cancelled', mirror: true });
  });
});

/**
 * Tests that expect the child to leave on its own after a cancel (`killed: false`): a kill grace long enough
 * for a loaded machine, which costs nothing when the child leaves promptly.
 */
const ANSWERS_CANCEL_MS = 10_000;

describe('finalize', () => {
  it('mid-turn: the turn is interrupted (aborted), one tool-free turn answers, done', async () => {
    const scenario: Scenario = {
      turns: [{ steps: [{ tool: 'read', durationMs: 3000 }], answer: 'never' }],
      finalTurn: { steps: [{ tool: 'not-run', durationMs: 10 }], answer: { echo: true, prefix: 'final:' } },
    };
    const s = supervise(scenario, { task: 'work' });
    await s.waitEvent((event) => event.type === 'tool-call', 'tool-call');
    const ack = await s.control((run) => run.finalize());
    await expectCell(s, ack, { status: 'accepted', state: 'finalizing' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.turns).toBe(2);
    expect(outcome.finalText).toMatch(/^final:Stop working now/);
    const completes = s.events.filter((event): event is Extract<RunEvent, { type: 'turn-complete' }> => event.type === 'turn-complete');
    expect(completes.map((event) => event.stopReason)).toEqual(['aborted', 'stop']);
    // The interrupted tool call is paired with an error result; the final turn calls no tool.
    const calls = s.events.filter((event) => event.type === 'tool-call');
    expect(calls).toHaveLength(1);
    const result = s.events.find((event) => event.type === 'tool-result');
    expect(result).toMatchObject({ name: 'read', isError: true });
    expect(s.states).toEqual(['starting', 'ready', 'running', 'finalizing', 'done']);
  });

  it('from ready (keepAlive): accepted -> finalizing -> done with the final answer', async () => {
    const s = supervise({ turns: [{ answer: 'first' }], finalTurn: { answer: { echo: true, prefix: 'final:' } } }, { keepAlive: true, task: 'work' });
    await s.waitEvent((event) => event.type === 'turn-complete', 'turn-complete');
    await s.waitState('ready');
    const ack = await s.control((run) => run.finalize('your final words'));
    await expectCell(s, ack, { status: 'accepted', state: 'finalizing' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe('final:your final words');
    expect(outcome.turns).toBe(2);
    expect(s.events.filter((event) => event.type === 'turn-complete').every((event) => event.type === 'turn-complete' && event.stopReason === 'stop')).toBe(true);
  });

  it('ignored by the child: cancel is sent after finalizeGraceMs', async () => {
    const s = supervise({ ...UNTIL_CANCEL, ignore: ['finalize'] }, { task: 'work', finalizeGraceMs: 800, killGraceMs: ANSWERS_CANCEL_MS });
    await turnStarted(s);
    const ack = await s.control((run) => run.finalize());
    expect(ack.status).toBe('accepted');
    await s.run.outcome;
    const controls = s.child.transcript().controls;
    const outcome = await s.finish({ status: 'cancelled', mirror: true });
    const finalize = controls.find((entry) => entry.message?.type === 'finalize');
    const cancel = controls.find((entry) => entry.message?.type === 'cancel');
    expect(cancel?.ack?.status).toBe('accepted');
    expect((cancel?.at ?? 0) - (finalize?.at ?? 0)).toBeGreaterThanOrEqual(700);
    expect(outcome.killed).toBe(false);
  });
});

describe('cancel from every non-terminal state', () => {
  const cases: { from: string; setup: () => Promise<Supervised> }[] = [
    {
      from: 'starting',
      // The kill-after-grace clock starts when the cancel is written: give the slow starter more than its start-up.
      setup: async () => supervise({ ...UNTIL_CANCEL, readyDelayMs: 800 }, { task: 'work', killGraceMs: 10_000 }),
    },
    {
      from: 'ready',
      setup: async () => {
        const s = supervise(UNTIL_CANCEL, { keepAlive: true, killGraceMs: ANSWERS_CANCEL_MS });
        await s.waitState('ready');
        return s;
      },
    },
    {
      from: 'running',
      setup: async () => {
        const s = supervise(UNTIL_CANCEL, { task: 'work', killGraceMs: ANSWERS_CANCEL_MS });
        await turnStarted(s);
        return s;
      },
    },
    {
      from: 'closing',
      setup: async () => {
        const s = supervise(UNTIL_CANCEL, { task: 'work', keepAlive: true, killGraceMs: ANSWERS_CANCEL_MS });
        await turnStarted(s);
        expect((await s.control((run) => run.close())).status).toBe('accepted');
        return s;
      },
    },
    {
      from: 'finalizing',
      setup: async () => {
        const s = supervise({ ...UNTIL_CANCEL, finalTurn: { steps: [holdUntil('cancel')], answer: 'x' } }, { keepAlive: true, killGraceMs: ANSWERS_CANCEL_MS });
        await s.waitState('ready');
        expect((await s.control((run) => run.finalize())).status).toBe('accepted');
        return s;
      },
    },
  ];
  it.each(cases)('$from', async ({ from, setup }) => {
    const s = await setup();
    expect(s.run.state).toBe(from);
    const ack = await s.control((run) => run.cancel());
    expect(ack.status).toBe('accepted');
    expect(s.run.state).toBe('cancelled');
    const outcome = await s.finish({ status: 'cancelled', mirror: true });
    expect(outcome.finalText).toBeUndefined();
    expect(outcome.killed).toBe(false);
    expect(s.events.some((event) => event.type === 'result')).toBe(false);
    const exit = s.events[s.events.length - 1];
    expect(exit).toMatchObject({ type: 'exit', status: 'cancelled' });
    expect(exit?.type === 'exit' && exit.synthetic).toBeFalsy();
  });
});

it('cancel while starting, the child slower to start than killGraceMs: killed, cancelled, the ack unanswered', async () => {
  const s = supervise({ ...UNTIL_CANCEL, readyDelayMs: 60_000 }, { task: 'work', killGraceMs: 200 });
  expect(s.run.state).toBe('starting');
  const ack = await s.control((run) => run.cancel());
  expect(ack.status).toBe('unanswered');
  const outcome = await s.finish({ status: 'cancelled' });
  expect(outcome.killed).toBe(true);
});

describe('close and keepAlive', () => {
  it('keepAlive false (default): subvisor closes the run once ready with every control answered', async () => {
    const s = supervise({ turns: [{ answer: { echo: true, prefix: 'echo:' } }] }, { task: 'the task' });
    const outcome = await s.run.outcome;
    const controls = s.child.transcript().controls.map((entry) => [entry.message?.type, entry.ack?.status]);
    expect(controls).toEqual([
      ['prompt', 'accepted'],
      ['close', 'accepted'],
    ]);
    expect(outcome.finalText).toBe('echo:the task');
    await s.finish({ status: 'done', mirror: true });
  });

  it('keepAlive true: several prompts, one turn each, the run waits in ready, then close()', async () => {
    const s = supervise('echo', { keepAlive: true, task: 'one' });
    const answers: string[] = [];
    s.run.on('event', (event) => {
      if (event.type === 'assistant-text' && event.final && event.text !== undefined) answers.push(event.text);
    });
    for (const [index, text] of ['one', 'two', 'three'].entries()) {
      if (index > 0) {
        const ack = await s.control((run) => run.prompt(text));
        expect(ack.status).toBe('accepted');
      }
      await s.waitEvent((event) => event.type === 'turn-complete' && event.turn === index + 1, `turn ${index + 1}`);
      await s.waitState('ready');
    }
    // Nothing closed it: only our prompts were sent.
    expect(s.child.transcript().controls.map((entry) => entry.message?.type)).toEqual(['prompt', 'prompt', 'prompt']);
    expect(s.run.ended).toBe(false);
    const close = await s.control((run) => run.close());
    await expectCell(s, close, { status: 'accepted', state: 'done' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.turns).toBe(3);
    expect(answers).toHaveLength(3);
    expect(answers[0]).toContain('one');
    expect(answers[2]).toContain('three');
    expect(outcome.finalText).toBe(answers[2]);
  });
});

describe('controls refused locally (no line written)', () => {
  it('empty steer/follow-up text and lines of 65536 bytes or more', async () => {
    const s = supervise(UNTIL_CANCEL, { task: 'work' });
    await turnStarted(s);
    const empty = await refusal(s.run.steer(''));
    expect(empty).toBeInstanceOf(ControlRefusedError);
    expect((empty as ControlRefusedError).code).toBe('empty-text');
    const emptyFollowUp = await refusal(s.run.followUp(''));
    expect((emptyFollowUp as ControlRefusedError).code).toBe('empty-text');
    const huge = await refusal(s.run.steer('x'.repeat(MAX_LINE_BYTES)));
    expect(huge).toBeInstanceOf(ControlRefusedError);
    expect((huge as ControlRefusedError).code).toBe('too-large');
    // Multi-byte: under 65536 UTF-16 units but over 65536 UTF-8 bytes.
    const multiByte = await refusal(s.run.followUp('é'.repeat(40_000)));
    expect((multiByte as ControlRefusedError).code).toBe('too-large');
    const hugePrompt = await refusal(s.run.prompt('x'.repeat(70_000)));
    expect((hugePrompt as ControlRefusedError).code).toBe('too-large');
    // The biggest legal steer still goes through.
    const steer = await s.control((run) => run.steer('y'.repeat(60_000)));
    expect(steer.status).toBe('accepted');
    // No line was written for the refusals: the big steer follows the task prompt directly, and the child read
    // exactly those two lines.
    expect(steer.seq).toBe(2);
    await waitChildControl(s, steer.seq);
    expect(s.child.transcript().controls.map((entry) => entry.message?.type)).toEqual(['prompt', 'steer']);
    await s.control((run) => run.cancel());
    await s.finish({ status: 'cancelled' });
  });
});

describe('acks that are never answered', () => {
  it('ackTimeoutMs: a control the child never acks resolves unanswered', async () => {
    const scenario: Scenario = { ...UNTIL_CANCEL, misbehaviours: [{ at: 'turn-start', do: { stopAcking: 'ignore' } }] };
    const s = supervise(scenario, { task: 'work', ackTimeoutMs: 500 });
    await turnStarted(s);
    const started = Date.now();
    const ack = await s.control((run) => run.steer('anyone there?'));
    expect(ack.status).toBe('unanswered');
    expect(ack.reason).toMatch(/500 ms/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    const outcome = await s.run.terminate('test over');
    expect(outcome.status).toBe('cancelled');
    await s.finish({ status: 'cancelled' });
  });

  it('an ack arriving after ackTimeoutMs: the caller got unanswered, but the mirror still follows the child', async () => {
    const scenario: Scenario = {
      turns: [{ steps: [{ pause: 300 }], answer: { echo: true } }],
      misbehaviours: [{ at: { control: 'prompt' }, do: { delay: 1500 } }],
    };
    const s = supervise(scenario, { keepAlive: true, ackTimeoutMs: 300 });
    await s.waitState('ready');
    const ack = await s.control((run) => run.prompt('slow to answer'));
    expect(ack.status).toBe('unanswered');
    await s.waitEvent((event) => event.type === 'turn-complete', 'turn-complete');
    await s.waitState('ready');
    await s.control((run) => run.close());
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe('slow to answer');
  });

  it('the run ending before the ack: unanswered, and a pending delivery settles', async () => {
    const scenario: Scenario = { ...UNTIL_CANCEL, misbehaviours: [{ at: { control: 'follow-up' }, do: { crash: { code: 7 } } }] };
    const s = supervise(scenario, { task: 'work' });
    await turnStarted(s);
    const ack = await s.control((run) => run.followUp('crash now'));
    expect(ack.status).toBe('unanswered');
    const outcome = await s.finish({ status: 'failed' });
    expect(outcome.exitCode).toBe(7);
  });
});
