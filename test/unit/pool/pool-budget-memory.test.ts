// The pool's budget (a total and per-run limits) and its usage ledger, over the in-memory driver (the pool's start seam); asAgent's budget and schema terminals.
import { describe, expect, it } from 'vitest';
import { asAgent, collect } from '../../../src/agent/index.js';
import { createSupervisor } from '../../../src/index.js';
import type { Outcome, Run, RunOptions, Usage } from '../../../src/index.js';
import { createInMemoryRun } from '../../../src/testing/index.js';
import type { InMemoryChild, InMemoryProtocol } from '../../../src/testing/index.js';
import { endRun } from '../../helpers/in-memory-play.js';
import { UsageBook } from '../../../src/pool/ledger.js';
import { childlessOutcome } from '../../../src/run/outcome.js';

/** How the played child handles a task: its answer and usage, or a failure, or hanging until stopped. */
type Plan = { answer: string; usage?: Usage; tools?: number } | { fail: string } | { hang: true };

/** A `start` whose children follow `plan(task)` (over a protocol that can do what `played` says); it records the tasks started. */
function playedStart(plan: (task: string) => Plan, played: InMemoryProtocol = {}) {
  const started: string[] = [];
  const start = (options: RunOptions): Run => {
    const { run, child } = createInMemoryRun(stripped(options), played);
    started.push(options.task ?? '');
    play(child, plan);
    return run;
  };
  return { start, started };
}

function play(child: InMemoryChild, plan: (task: string) => Plan): void {
  let answer = '';
  child.onControl = ({ ref, control }) => {
    if (control.type === 'prompt') {
      child.ack(ref, 'accepted');
      const step = plan(control.text.split('\n')[0]!);
      if ('fail' in step) {
        child.exit('failed', step.fail);
        child.gone();
        return;
      }
      child.turnStarted();
      if ('hang' in step) return;
      for (let i = 0; i < (step.tools ?? 0); i++) child.toolCall('grep');
      answer = step.answer;
      child.text(step.answer);
      child.turnComplete('stop', step.usage);
    } else if (control.type === 'close' || control.type === 'finalize') {
      endRun(child, ref, 'done', answer);
    } else if (control.type === 'cancel') {
      endRun(child, ref, 'cancelled');
    }
  };
  child.ready();
}

describe('the pool budget', () => {
  it('a total cost budget: the run that spends it is stopped, the queued ones end budget-exceeded and never start', async () => {
    const fake = playedStart((task) => ({ answer: `did ${task}`, usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.4 } }));
    const sup = createSupervisor({ concurrency: 1, start: fake.start, handleParentSignals: false, budget: { total: { maxCostUsd: 1 } } });
    const runs = ['a', 'b', 'c', 'd', 'e'].map((task) => sup.spawn({ task }));
    const outcomes = await Promise.all(runs.map((run) => run.outcome));
    expect(outcomes.map((outcome) => [outcome.status, outcome.errorCode])).toEqual([
      ['done', undefined],
      ['done', undefined],
      ['done', undefined],
      ['cancelled', 'budget-exceeded'],
      ['cancelled', 'budget-exceeded'],
    ]);
    expect(fake.started).toEqual(['a', 'b', 'c']);
    expect(outcomes[2]!.budget?.exceeded).toMatchObject({ scope: 'shared', limit: 'maxCostUsd', action: 'close' });
    expect(outcomes[3]).toMatchObject({
      turns: 0,
      spawnFailed: false,
      error: 'the shared budget was spent before the run started: maxCostUsd 1 ($1.2000); it never started',
      budget: { sharedLimits: { maxCostUsd: 1 }, used: {}, exceeded: { scope: 'shared', action: 'not-started', sharedAt: { turns: 3, tokens: 360 } } },
    });
    expect(sup.budget?.exceeded).toBe('maxCostUsd');
    expect(sup.budget?.used.costUsd).toBe(1.2);
    const late = sup.spawn({ task: 'f' });
    expect(await late.outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded' });
    expect(fake.started).toEqual(['a', 'b', 'c']);
    expect(sup.counts).toMatchObject({ done: 3, cancelled: 3, queued: 0, running: 0 });
    await sup.shutdown();
  });

  it('running runs are stopped when the total is spent by another: finalized (the protocol can), budget-exceeded left to what they end as', async () => {
    const fake = playedStart((task) => (task === 'spender' ? { answer: 'spent', usage: { inputTokens: 900, outputTokens: 200 } } : { hang: true }));
    const sup = createSupervisor({ concurrency: 3, start: fake.start, handleParentSignals: false, budget: { total: { maxTokens: 1000 } } });
    const waiting = sup.spawn({ task: 'waits' });
    const spender = sup.spawn({ task: 'spender' });
    const [first, second] = await Promise.all([waiting.outcome, spender.outcome]);
    expect(first).toMatchObject({ status: 'done', budget: { exceeded: { scope: 'shared', action: 'finalize', at: { tokens: 0 } } } });
    expect(second).toMatchObject({ status: 'done', finalText: 'spent', budget: { exceeded: { scope: 'shared', action: 'close' } } });
    await sup.shutdown();
  });

  it('perRun limits every run (a spawn overrides them limit by limit); a budget-exceeded run is never retried', async () => {
    const fake = playedStart(() => ({ answer: 'x', tools: 5 }), { capabilities: { finalize: false } });
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false, retry: { attempts: 3, when: () => true }, budget: { perRun: { maxToolCalls: 3, maxTurns: 9 } } });
    const limited = sup.spawn({ task: 'limited' });
    const roomy = sup.spawn({ task: 'roomy', budget: { maxToolCalls: 10 } });
    expect(await limited.outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded', budget: { limits: { maxToolCalls: 3, maxTurns: 9 }, exceeded: { limit: 'maxToolCalls', action: 'cancel' } } });
    expect(limited.nextAttempt).toBeUndefined();
    expect((await roomy.outcome).budget).toEqual({ limits: { maxToolCalls: 10, maxTurns: 9 }, used: { turns: 1, toolCalls: 5, tokens: 0, costUsd: 0 } });
    expect(fake.started).toEqual(['limited', 'roomy']);
    await sup.shutdown();
  });

  it('refuses a bad pool budget at once', () => {
    const start = playedStart(() => ({ answer: 'x' })).start;
    expect(() => createSupervisor({ concurrency: 1, start, budget: { perRun: { maxTurns: 1 } }, defaults: { budget: { maxTurns: 2 } } })).toThrow(/give per-run limits once/);
    expect(() => createSupervisor({ concurrency: 1, start, budget: { total: {} } })).toThrow(/options\.budget\.total needs at least one limit/);
    expect(() => createSupervisor({ concurrency: 1, start, budget: { totals: {} } as never })).toThrow(/options\.budget\.totals is not a pool budget field/);
    const sup = createSupervisor({ concurrency: 1, budget: { total: { maxCostUsd: 1 } }, handleParentSignals: false });
    expect(() => sup.spawn({ command: 'x', protocol: 'fuseraft' })).toThrow(/options\.budget\.shared\.maxCostUsd cannot be enforced: protocol 'fuseraft' does not report cost/);
    expect(() => sup.spawn({ command: 'x', budget: { shared: sup.budget! } })).toThrow(/draws on the pool's total/);
  });
});

describe('the usage ledger', () => {
  it('sums costs without floating point noise', () => {
    const book = new UsageBook();
    for (const costUsd of [0.1, 0.2]) book.add({ ...childlessOutcome('r', 'done', 'child-error', ''), protocol: 'fen', turns: 1, usage: { costUsd } });
    expect(book.snapshot().total.costUsd).toBe(0.3);
    expect(book.snapshot().byProtocol['fen']?.costUsd).toBe(0.3);
  });

  it('adds up across a pool of mixed outcomes, by status, protocol and model; a run without usage makes it incomplete', async () => {
    const fake = playedStart((task) => {
      if (task === 'boom') return { fail: 'it broke' };
      if (task === 'silent') return { answer: 'no usage' };
      return { answer: task, usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 5, costUsd: 0.01 } };
    });
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false });
    const runs = ['one', 'two', 'boom', 'silent'].map((task) => sup.spawn({ task }));
    const cancelled = sup.spawn({ task: 'never', priority: -1 });
    void cancelled.cancel();
    const outcomes: Outcome[] = await Promise.all([...runs, cancelled].map((run) => run.outcome));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['done', 'done', 'failed', 'done', 'cancelled']);
    expect(fake.started).toEqual(['one', 'two', 'boom', 'silent']);
    const ledger = sup.usage();
    const zero = { runs: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, tokens: 0, costUsd: 0, withoutUsage: 0, withoutCost: 0 };
    expect(ledger.total).toEqual({ ...zero, runs: 5, inputTokens: 200, outputTokens: 20, cacheReadTokens: 10, tokens: 220, costUsd: 0.02, withoutUsage: 1, withoutCost: 1 });
    expect(ledger.complete).toBe(false);
    expect(ledger.byStatus).toEqual({
      cancelled: { ...zero, runs: 1 },
      done: { ...zero, runs: 3, inputTokens: 200, outputTokens: 20, cacheReadTokens: 10, tokens: 220, costUsd: 0.02, withoutUsage: 1, withoutCost: 1 },
      failed: { ...zero, runs: 1 },
    });
    expect(ledger.byProtocol).toEqual({ 'in-memory': { ...ledger.total, runs: 4 } });
    const summed = Object.values(ledger.byStatus).reduce((sum, totals) => sum + totals.tokens, 0);
    expect(summed).toBe(ledger.total.tokens);
    expect(ledger.byModel).toEqual({});
    await sup.shutdown();
  });
});

describe('asAgent with a budget and an output schema', () => {
  it('completed carries the validated data; a run its budget cancelled is budget_exceeded, not retryable', async () => {
    const fake = playedStart((task) => (task === 'json' ? { answer: '{"ok":true}' } : { answer: 'x', tools: 4 }));
    const agent = asAgent({ command: 'unused', start: fake.start, outputSchema: { type: 'object', required: ['ok'] } });
    expect(await collect(agent.invoke({ session: 's1' }, { text: 'json' }))).toEqual({ text: '{"ok":true}', data: { ok: true } });
    await agent.close();
    const stopped = asAgent({
      command: 'unused',
      budget: { maxToolCalls: 2 },
      start: (options) => {
        const { run, child } = createInMemoryRun(stripped(options), { capabilities: { finalize: false } });
        play(child, () => ({ answer: 'x', tools: 5 }));
        return run;
      },
    });
    await expect(collect(stopped.invoke({ session: 's2' }, { text: 'loop' }))).rejects.toMatchObject({
      code: 'budget_exceeded',
      retryable: false,
      details: 'the run reached its budget: maxToolCalls 2 (2 tool calls); cancelled',
    });
    await stopped.close();
  });

  it('refuses outputSchema with keep-alive sessions', () => {
    expect(() => asAgent({ command: 'x', sessions: 'keep-alive', outputSchema: { type: 'object' } })).toThrow(/needs sessions: 'fresh'/);
  });
});

function stripped(options: RunOptions): Omit<RunOptions, 'command' | 'args' | 'protocol'> {
  const { command: _command, args: _args, protocol: _protocol, ...rest } = options;
  return rest;
}
