// Budgets and output schemas in the run core, over the in-memory driver: finalize or cancel at a limit, the repair turn, the verdicts; no process.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { connectRun, createSupervisor, sharedBudget, spawnRun } from '../../../src/index.js';
import type { Outcome, PoolRun, Run } from '../../../src/index.js';
import { createInMemoryRun } from '../../../src/testing/index.js';
import type { InMemoryChild, InMemoryProtocol } from '../../../src/testing/index.js';
import { endRun } from '../../helpers/in-memory-play.js';

/**
 * A child like Fen's: each prompt (or follow-up, from ready) runs `turn` (which may call tools and ends its turn,
 * or leaves it open to be interrupted), a finalize interrupts the open turn and answers `final`, close and cancel end the run.
 */
function play(child: InMemoryChild, turn: (text: string, n: number) => void, final = 'the final answer'): void {
  let open = false;
  let prompts = 0;
  let last = '';
  child.onControl = ({ ref, control }) => {
    switch (control.type) {
      case 'prompt':
      case 'follow-up':
        child.ack(ref, 'accepted');
        child.turnStarted();
        open = true;
        turn(control.text, ++prompts);
        return;
      case 'finalize':
        child.ack(ref, 'accepted');
        if (open) child.turnComplete('aborted');
        child.turnStarted();
        child.text(final);
        last = final;
        child.turnComplete('stop');
        child.result(last);
        child.exit('done');
        child.gone();
        return;
      case 'close':
        endRun(child, ref, 'done', last);
        return;
      case 'cancel':
        endRun(child, ref, 'cancelled');
        return;
      default:
        child.ack(ref, 'accepted');
    }
  };
  const complete = child.turnComplete.bind(child);
  child.turnComplete = (stopReason, usage) => {
    open = false;
    complete(stopReason, usage);
  };
  const text = child.text.bind(child);
  child.text = (delta) => {
    last = delta;
    text(delta);
  };
  child.ready();
}

/** A turn that calls tools until it is stopped (each call on a later tick, like a child that works). */
function endlessTools(child: InMemoryChild): () => void {
  return () => {
    let calls = 0;
    const next = () => {
      if (calls++ > 1000 || child.disconnected) return;
      child.toolCall('grep');
      setImmediate(next);
    };
    next();
  };
}

const PERSON = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };

describe('budgets in the run core', () => {
  it('finalizes at maxToolCalls where the protocol can: the run ends done with an answer, the limit and its figures in outcome.budget', async () => {
    const { run, child } = createInMemoryRun({ task: 'loop', budget: { maxToolCalls: 3 } });
    play(child, endlessTools(child));
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'the final answer' });
    expect(outcome.errorCode).toBeUndefined();
    expect(outcome.budget).toMatchObject({ limits: { maxToolCalls: 3 }, exceeded: { limit: 'maxToolCalls', scope: 'run', at: { toolCalls: 3 }, action: 'finalize' } });
    const finalize = child.controls.find(({ control }) => control.type === 'finalize')?.control;
    expect(finalize).toEqual({ type: 'finalize', note: 'the run reached its budget: maxToolCalls 3 (3 tool calls). Stop working on the task now and do not call any more tools: give your final answer.' });
  });

  it('cancels where the protocol has no finalize: cancelled, budget-exceeded', async () => {
    const { run, child } = createInMemoryRun({ task: 'loop', budget: { maxToolCalls: 2 } }, { capabilities: { finalize: false } });
    play(child, endlessTools(child));
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded', error: 'the run reached its budget: maxToolCalls 2 (2 tool calls); cancelled' });
    expect(outcome.budget?.exceeded).toMatchObject({ limit: 'maxToolCalls', action: 'cancel', at: { toolCalls: 2 } });
    expect(child.controls.map(({ control }) => control.type)).toEqual(['prompt', 'cancel']);
  });

  it('a refused finalize is followed by a cancel', async () => {
    const { run, child } = createInMemoryRun({ task: 'loop', budget: { maxToolCalls: 1 }, killGraceMs: 50 });
    play(child, endlessTools(child));
    const onControl = child.onControl!;
    child.onControl = (received) => (received.control.type === 'finalize' ? child.ack(received.ref, 'rejected', 'not now') : onControl(received));
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded' });
    expect(child.controls.map(({ control }) => control.type)).toEqual(['prompt', 'finalize', 'cancel']);
    expect(outcome.budget?.exceeded?.action).toBe('cancel');
  });

  it('a finalize that never ends the run: cancelled at finalizeGraceMs, still budget-exceeded, the error says what happened', async () => {
    const { run, child } = createInMemoryRun({ task: 'loop', budget: { maxToolCalls: 1 }, finalizeGraceMs: 30, killGraceMs: 30 });
    play(child, endlessTools(child));
    const onControl = child.onControl!;
    child.onControl = (received) => (received.control.type === 'finalize' ? child.ack(received.ref, 'accepted') : onControl(received));
    const outcome = await run.outcome;
    expect(outcome.status).toBe('cancelled');
    expect(outcome.errorCode).toBe('budget-exceeded');
    expect(outcome.error).toMatch(/^the run reached its budget: maxToolCalls 1 \(1 tool call\); then: finalize did not end the run within 30 ms; cancelled$/);
  });

  it('a run idle with its answer at the limit is closed: done, nothing more starts (keepAlive too)', async () => {
    const { run, child } = createInMemoryRun({ task: 'one', keepAlive: true, budget: { maxTurns: 1 } });
    play(child, (text) => {
      child.text(`answer to ${text}`);
      child.turnComplete('stop', { inputTokens: 5, outputTokens: 5 });
    });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'answer to one', budget: { exceeded: { limit: 'maxTurns', action: 'close', at: { turns: 1, tokens: 10 } } } });
    expect(child.controls.map(({ control }) => control.type)).toEqual(['prompt', 'close']);
  });

  it('counts tokens and cost from model calls while a turn is open', async () => {
    const { run, child } = createInMemoryRun({ task: 'spend', budget: { maxCostUsd: 0.05 } }, { capabilities: { finalize: false } });
    play(child, () => {
      const next = () => {
        if (child.disconnected) return;
        child.modelCallEnded({ inputTokens: 100, outputTokens: 10, costUsd: 0.02 });
        setImmediate(next);
      };
      next();
    });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded', budget: { exceeded: { limit: 'maxCostUsd', at: { tokens: 330 } } } });
    expect(outcome.budget?.exceeded?.at.costUsd).toBe(0.06);
  });

  it('refuses at once a limit on a figure the protocol does not report', () => {
    const played: InMemoryProtocol = { reports: { costUsd: false, toolCalls: false } };
    expect(() => createInMemoryRun({ task: 'x', budget: { maxCostUsd: 1 } }, played)).toThrow(
      "options.budget.maxCostUsd cannot be enforced: protocol 'in-memory' does not report cost (it reports turns, tokens)",
    );
    expect(() => createInMemoryRun({ task: 'x', budget: { shared: sharedBudget({ maxToolCalls: 3 }) } }, played)).toThrow(/options\.budget\.shared\.maxToolCalls cannot be enforced/);
    expect(() => createInMemoryRun({ task: 'x', budget: {} })).toThrow(/sets no limit/);
    expect(() => createInMemoryRun({ task: 'x', budget: { shared: { limits: {}, used: {}, exceeded: undefined } as never } })).toThrow(/made by sharedBudget/);
  });

  it('a shared budget: one run’s spending stops every run drawing on it; a run on a spent one never starts', async () => {
    const shared = sharedBudget({ maxToolCalls: 4 });
    const busy = createInMemoryRun({ task: 'a', budget: { shared } }, { capabilities: { finalize: false } });
    const other = createInMemoryRun({ task: 'b', budget: { shared } }, { capabilities: { finalize: false } });
    play(busy.child, endlessTools(busy.child));
    play(other.child, () => undefined);
    const [a, b] = await Promise.all([busy.run.outcome, other.run.outcome]);
    for (const outcome of [a, b]) {
      expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded', budget: { sharedLimits: { maxToolCalls: 4 }, exceeded: { scope: 'shared', limit: 'maxToolCalls', sharedAt: { toolCalls: 4 } } } });
    }
    expect(b.error).toBe('the shared budget was spent: maxToolCalls 4 (4 tool calls); cancelled');
    expect(shared.exceeded).toBe('maxToolCalls');
    const late = createInMemoryRun({ task: 'c', budget: { shared } });
    const outcome = await late.run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded', turns: 0, budget: { exceeded: { action: 'not-started' } } });
    expect(late.child.controls).toEqual([]);
  });

  it('outcome.model is the model the child last named', async () => {
    const { run, child } = createInMemoryRun({ task: 'x' });
    play(child, () => {
      child.event({ type: 'agent-started', model: 'm-1' });
      child.event({ type: 'llm-start', model: 'm-2' });
      child.turnComplete('stop');
    });
    expect((await run.outcome).model).toBe('m-2');
  });
});

describe('output schemas in the run core', () => {
  const answers = (...texts: string[]) => (_text: string, n: number) => {
    const child = current!;
    child.text(texts[Math.min(n, texts.length) - 1]!);
    child.turnComplete('stop');
  };
  let current: InMemoryChild | undefined;

  it('sends the task with the instructions and validates the answer into outcome.data', async () => {
    const { run, child } = createInMemoryRun<{ name: string }>({ task: 'Who?', outputSchema: PERSON });
    current = child;
    play(child, answers('```json\n{"name":"Ada"}\n```'));
    const outcome: Outcome<{ name: string }> = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', data: { name: 'Ada' } });
    expect(outcome.data?.name).toBe('Ada');
    const task = child.controls[0]!.control;
    expect(task.type === 'prompt' && task.text.startsWith('Who?\n\nGive your final answer as one JSON value')).toBe(true);
  });

  it('an invalid answer gets one repair turn naming the errors before the automatic close', async () => {
    const { run, child } = createInMemoryRun({ task: 'Who?', outputSchema: PERSON, outputInstructions: 'Answer as JSON.' });
    current = child;
    play(child, answers('{"nom":"Ada"}', '{"name":"Ada"}'));
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', data: { name: 'Ada' }, turns: 2 });
    expect(child.controls.map(({ control }) => ('text' in control ? control.text : control.type))).toEqual([
      'Who?\n\nAnswer as JSON.',
      "Your answer does not match the required JSON Schema:\n- (the value): must have required property 'name'\nReply with the corrected JSON value only, in one fenced code block marked json.",
      'close',
    ]);
  });

  it('still invalid after the repair: failed, invalid-output, the errors and the raw answer kept', async () => {
    const { run, child } = createInMemoryRun({ task: 'Who?', outputSchema: PERSON, outputInstructions: false });
    current = child;
    play(child, answers('I do not know'));
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({
      status: 'failed',
      errorCode: 'invalid-output',
      finalText: 'I do not know',
      outputErrors: [{ path: '', message: expect.stringMatching(/^the answer holds no JSON value/) }],
    });
    expect(outcome.error).toMatch(/^the answer does not match outputSchema after the repair turn: \(the value\): the answer holds no JSON value/);
    expect(child.controls.map(({ control }) => control.type)).toEqual(['prompt', 'follow-up', 'close']);
    expect(child.controls[0]!.control).toEqual({ type: 'prompt', text: 'Who?' });
  });

  it('no repair turn where the protocol cannot continue the conversation', async () => {
    const { run, child } = createInMemoryRun({ task: 'Who?', outputSchema: PERSON }, { capabilities: { continueConversation: false } });
    current = child;
    play(child, answers('{}'));
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'invalid-output', outputErrors: [{ path: '', message: "must have required property 'name'" }] });
    expect(child.controls.map(({ control }) => control.type)).toEqual(['prompt', 'close']);
  });

  it('no repair after a budget stop: the finalized answer is judged as it is', async () => {
    const { run, child } = createInMemoryRun({ task: 'loop', outputSchema: PERSON, budget: { maxToolCalls: 2 } });
    play(child, endlessTools(child), '{"name":"Bo"}');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', data: { name: 'Bo' }, budget: { exceeded: { action: 'finalize' } } });
    const finalize = child.controls.find(({ control }) => control.type === 'finalize')!.control;
    expect(finalize).toMatchObject({ note: expect.stringMatching(/give your final answer in the JSON shape the task asked for\.$/) });
  });

  it('a finalized answer that fails the schema: budget-exceeded (the limit came first), its error the limit then the schema, the errors kept', async () => {
    const { run, child } = createInMemoryRun({ task: 'loop', outputSchema: PERSON, budget: { maxToolCalls: 2 } });
    play(child, endlessTools(child), 'not json at all');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'budget-exceeded', budget: { exceeded: { limit: 'maxToolCalls', action: 'finalize' } } });
    expect(outcome.error).toMatch(/^the run reached its budget: maxToolCalls 2 .*; then: the answer does not match outputSchema/);
    expect(outcome.outputErrors?.length).toBeGreaterThan(0);
    expect(outcome.finalText).toBe('not json at all');
    expect(child.controls.filter(({ control }) => control.type === 'follow-up')).toEqual([]);
  });

  it('types outcome.data through the generic parameter of spawnRun, connectRun and sup.spawn', () => {
    type Person = { name: string };
    expectTypeOf(spawnRun<Person>).returns.toEqualTypeOf<Run<Person>>();
    expectTypeOf(connectRun<Person>).returns.toEqualTypeOf<Run<Person>>();
    expectTypeOf(createSupervisor({ concurrency: 1 }).spawn<Person>).returns.toEqualTypeOf<PoolRun<Person>>();
    expectTypeOf<Awaited<Run<Person>['outcome']>['data']>().toEqualTypeOf<Person | undefined>();
    expectTypeOf<Outcome['data']>().toEqualTypeOf<unknown>();
    // A typed run is still a Run.
    expectTypeOf<Run<Person>>().toMatchTypeOf<Run>();
  });

  it('refuses a schema it cannot compile, and instructions without a schema', () => {
    expect(() => createInMemoryRun({ task: 'x', outputSchema: { type: 'nope' } })).toThrow(/options\.outputSchema cannot be compiled/);
    expect(() => createInMemoryRun({ task: 'x', outputInstructions: 'JSON please' })).toThrow(/needs options\.outputSchema/);
  });
});
