// Budgets and output schemas against real processes, every protocol where a limit applies: finalized or cancelled at the limit, the repair turn, a pool's total, the ledger.
import { afterEach, describe, expect, it } from 'vitest';
import { connectRun, createSupervisor, spawnRun, totalTokens } from '../../../src/index.js';
import type { Outcome, Run, RunEvent } from '../../../src/index.js';
import { fakeChild, fakeFa, fakeFuseraft, fakeFuseraftServe, fakeMewDaemon } from '../../../src/testing/index.js';
import type { FakeChild, FakeFa, FakeFuseraft, TurnScript } from '../../../src/testing/index.js';

type Fake = FakeChild | FakeFa | FakeFuseraft;
const fakes: Fake[] = [];
const daemons: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  for (const fake of fakes.splice(0)) {
    expect(fake.livePids(), 'processes of a fake left behind').toEqual([]);
    fake.cleanup();
  }
  await Promise.all(daemons.splice(0).map((daemon) => daemon.close()));
});

function kept<F extends Fake>(fake: F): F {
  fakes.push(fake);
  return fake;
}

/** Every event of the run, and its outcome. */
async function finish<T>(run: Run<T>): Promise<{ events: RunEvent[]; outcome: Outcome<T> }> {
  const events: RunEvent[] = [];
  for await (const event of run) events.push(event);
  return { events, outcome: await run.outcome };
}

const toolCalls = (events: RunEvent[]) => events.filter((event) => event.type === 'tool-call').length;

/** A turn that would call tools far longer than any test waits. */
const FEN_TOOL_LOOP: TurnScript = { steps: Array.from({ length: 200 }, () => ({ tool: 'grep', durationMs: 5 })), answer: 'never reached' };
const QUICK = { killGraceMs: 300, readyTimeoutMs: 15_000 } as const;
const PERSON = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false } as const;

describe('a child that would call tools forever, stopped at maxToolCalls', () => {
  it('Fen: finalized, ends done with an answer; the limit and its figures in outcome.budget', async () => {
    const fake = kept(fakeChild({ turns: [FEN_TOOL_LOOP], finalTurn: { answer: 'Stopped early: grep found 5 matches.' } }, { turnTickMs: 5 }));
    const { events, outcome } = await finish(spawnRun({ ...fake, task: 'find every match', budget: { maxToolCalls: 5 }, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'done', finalText: 'Stopped early: grep found 5 matches.', protocol: 'fen', model: 'fake-1' });
    expect(outcome.errorCode).toBeUndefined();
    expect(outcome.budget).toMatchObject({ limits: { maxToolCalls: 5 }, exceeded: { limit: 'maxToolCalls', scope: 'run', action: 'finalize', at: { toolCalls: 5 } } });
    // The call in flight when the finalize came is the last: far from the 200 the turn would make.
    expect(toolCalls(events)).toBeGreaterThanOrEqual(5);
    expect(toolCalls(events)).toBeLessThan(10);
    expect(outcome.budget?.used.tokens).toBeGreaterThan(0);
  });

  it('Fen: counted from the facts it reads ahead, so a run nobody iterates (its events held back) is stopped on time too', async () => {
    const fake = kept(fakeChild({ turns: [FEN_TOOL_LOOP] }, { turnTickMs: 5 }));
    const run = spawnRun({ ...fake, task: 'find every match', budget: { maxToolCalls: 30 }, highWaterMark: 4, ...QUICK });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', budget: { exceeded: { limit: 'maxToolCalls', action: 'finalize', at: { toolCalls: 30 } } } });
    expect(outcome.budget?.used.toolCalls).toBeLessThan(35);
    const { events } = await finish(run);
    expect(toolCalls(events)).toBe(outcome.budget?.used.toolCalls);
  });

  it('HEP: no finalize, so cancelled (SIGINT), budget-exceeded', async () => {
    const fake = kept(fakeFa({ rounds: Array.from({ length: 100 }, () => ({ steps: [{ tool: 'grep', durationMs: 5 }] })) }));
    const { events, outcome } = await finish(spawnRun({ ...fake, protocol: 'hep', task: 'find every match', budget: { maxToolCalls: 3 }, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded', exitCode: 130 });
    expect(outcome.error).toBe('the run reached its budget: maxToolCalls 3 (3 tool calls); then: the child was cancelled (exit 130)');
    expect(outcome.budget?.exceeded).toMatchObject({ limit: 'maxToolCalls', action: 'cancel', at: { toolCalls: 3 } });
    expect(toolCalls(events)).toBeLessThan(10);
  });

  it('HEP: maxCostUsd counted from each round\'s usage', async () => {
    const fake = kept(fakeFa({ rounds: Array.from({ length: 100 }, () => ({ steps: [{ tool: 'grep', durationMs: 5 }], usage: { input: 100, output: 10, cost: 0.25 } })) }));
    const { outcome } = await finish(spawnRun({ ...fake, protocol: 'hep', task: 'spend', budget: { maxCostUsd: 1 }, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded', budget: { exceeded: { limit: 'maxCostUsd', at: { turns: 4, tokens: 440, costUsd: 1 } } } });
  });

  it('fuseraft repl: finalized (an interrupt, then one last message), ends done with that answer', async () => {
    const loop = { steps: Array.from({ length: 200 }, () => ({ tool: 'grep', durationMs: 5 })) };
    const fake = kept(fakeFuseraft('repl', { turns: [loop, { steps: [{ token: 'Stopped: 4 matches so far.' }] }] }));
    const { events, outcome } = await finish(spawnRun({ ...fake, protocol: 'fuseraft', task: 'find every match', budget: { maxToolCalls: 4 }, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'done', finalText: 'Stopped: 4 matches so far.', budget: { exceeded: { limit: 'maxToolCalls', action: 'finalize', at: { toolCalls: 4 } } } });
    expect(toolCalls(events)).toBeLessThan(10);
  });

  it('fuseraft repl: a turn whose counts are null is unmetered, and the report says so', async () => {
    const fake = kept(fakeFuseraft('repl', { turns: [{ steps: [{ token: 'done' }], usage: { inputTokens: null, outputTokens: null } }] }));
    const { outcome } = await finish(spawnRun({ ...fake, protocol: 'fuseraft', task: 'x', budget: { maxTokens: 1000 }, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'done', budget: { used: { turns: 1, tokens: 0, toolCalls: 0 }, unmetered: { tokens: 1 } } });
    expect(outcome.budget?.exceeded).toBeUndefined();
  });

  it('fuseraft-bridge: no finalize, so cancelled (interrupt), budget-exceeded', async () => {
    const steps = Array.from({ length: 100 }, () => ({ agent: 'Coder', message: 'still working', tools: [{ name: 'grep' }], ms: 5 }));
    const fake = kept(fakeFuseraft('bridge', { bridge: steps }));
    const { events, outcome } = await finish(spawnRun({ ...fake, protocol: 'fuseraft-bridge', task: 'find every match', budget: { maxToolCalls: 3 }, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded', budget: { exceeded: { limit: 'maxToolCalls', action: 'cancel', at: { toolCalls: 3 } } } });
    expect(toolCalls(events)).toBeLessThan(10);
  });

  it('mew: finalized (the turn cancelled, then one last prompt), ends done with that answer', async () => {
    const daemon = await fakeMewDaemon({ turns: [{ steps: Array.from({ length: 200 }, () => ({ tool: 'grep', ms: 5 })) }, { steps: [{ text: 'Stopped: 3 matches.' }] }] });
    daemons.push(daemon);
    const { events, outcome } = await finish(connectRun({ protocol: 'mew', url: daemon.url, task: 'find every match', budget: { maxToolCalls: 3, maxCostUsd: 5 }, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'done', finalText: 'Stopped: 3 matches.', protocol: 'mew', budget: { exceeded: { limit: 'maxToolCalls', action: 'finalize', at: { toolCalls: 3 } } } });
    expect(outcome.budget?.used.costUsd).toBeGreaterThan(0);
    expect(toolCalls(events)).toBeLessThan(10);
  });

  it('fuseraft serve: turns are its only figure (a tool limit is refused); at maxTurns the run is closed with its answer', async () => {
    const daemon = await fakeFuseraftServe('echo');
    daemons.push(daemon);
    expect(() => connectRun({ protocol: 'fuseraft-serve', url: daemon.url!, task: 'x', budget: { maxToolCalls: 3 } })).toThrow(
      "options.budget.maxToolCalls cannot be enforced: protocol 'fuseraft-serve' does not report tool calls (it reports turns)",
    );
    const run = connectRun({ protocol: 'fuseraft-serve', url: daemon.url!, task: 'one task', keepAlive: true, budget: { maxTurns: 1 }, ...QUICK });
    const { outcome } = await finish(run);
    expect(outcome).toMatchObject({ status: 'done', finalText: 'echo: one task', budget: { used: { turns: 1 }, exceeded: { limit: 'maxTurns', action: 'close' } } });
  });
});

describe('outputSchema against real processes', () => {
  it('Fen: the answer validates into outcome.data; the child was told the shape', async () => {
    const fake = kept(fakeChild({ turns: [{ answer: 'Here it is:\n```json\n{"name":"Ada"}\n```' }] }, { turnTickMs: 5 }));
    const { events, outcome } = await finish(spawnRun<{ name: string }>({ ...fake, task: 'Who wrote the first program?', outputSchema: PERSON, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'done', data: { name: 'Ada' }, turns: 1 });
    expect(outcome.data?.name).toBe('Ada');
    const user = events.find((event) => event.type === 'user');
    expect(user?.type === 'user' && user.text).toMatch(/^Who wrote the first program\?\n\nGive your final answer as one JSON value/);
  });

  it('Fen: a bad answer gets one repair turn naming the errors, then validates', async () => {
    const fake = kept(fakeChild({ turns: [{ answer: '{"nom":"Ada"}' }, { answer: '{"name":"Ada"}' }] }, { turnTickMs: 5 }));
    const { events, outcome } = await finish(spawnRun({ ...fake, task: 'Who?', outputSchema: PERSON, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'done', data: { name: 'Ada' }, turns: 2 });
    const repair = events.find((event) => event.type === 'follow-up-injected');
    expect(repair?.type === 'follow-up-injected' && repair.text).toMatch(/^Your answer does not match the required JSON Schema:\n- \(the value\): must have required property 'name'/);
  });

  it('Fen: still bad after the repair: failed, invalid-output, the errors listed and the raw answer kept', async () => {
    const fake = kept(fakeChild({ turns: [{ answer: 'I would rather not say.' }] }, { turnTickMs: 5 }));
    const { events, outcome } = await finish(spawnRun({ ...fake, task: 'Who?', outputSchema: PERSON, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'invalid-output', finalText: 'I would rather not say.', turns: 2, exitCode: 0 });
    expect(outcome.outputErrors).toEqual([{ path: '', message: expect.stringMatching(/^the answer holds no JSON value/) }]);
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'failed', childStatus: 'done' });
  });

  it('HEP: no repair turn (one prompt per process): invalid-output at once', async () => {
    const fake = kept(fakeFa({ rounds: [{ steps: [{ text: '{"name": 42}' }] }] }));
    const { outcome } = await finish(spawnRun({ ...fake, protocol: 'hep', task: 'Who?', outputSchema: PERSON, ...QUICK }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'invalid-output', turns: 1, outputErrors: [{ path: '/name', message: 'must be string' }] });
  });

  it('fuseraft repl and mew: the repair turn continues the same conversation', async () => {
    const repl = kept(fakeFuseraft('repl', { turns: [{ steps: [{ token: '{}' }] }, { steps: [{ token: '{"name":"Ada"}' }] }] }));
    const daemon = await fakeMewDaemon({ turns: [{ steps: [{ text: '[]' }] }, { steps: [{ text: '```json\n{"name":"Bo"}\n```' }] }] });
    daemons.push(daemon);
    const [fuseraft, mew] = await Promise.all([
      finish(spawnRun({ ...repl, protocol: 'fuseraft', task: 'Who?', outputSchema: PERSON, ...QUICK })),
      finish(connectRun({ protocol: 'mew', url: daemon.url, task: 'Who?', outputSchema: PERSON, ...QUICK })),
    ]);
    expect(fuseraft.outcome).toMatchObject({ status: 'done', data: { name: 'Ada' }, turns: 2 });
    expect(mew.outcome).toMatchObject({ status: 'done', data: { name: 'Bo' }, turns: 2 });
  });
});

describe('a pool with a total budget, and its ledger', () => {
  it('stops starting runs once the total cost is spent; the ledger adds up across mixed outcomes', async () => {
    const paid = kept(fakeChild({ turns: [{ answer: { echo: true }, usage: { input: 100, output: 10, 'total-tokens': 110, cost: { total: 0.4 } } }] }, { turnTickMs: 5 }));
    const crash = kept(fakeChild('crash'));
    const hep = kept(fakeFa({ rounds: [{ steps: [{ text: 'hep answer' }], usage: { input: 50, output: 5, cost: 0.1 } }] }));
    const sup = createSupervisor({ concurrency: 1, defaults: { ...paid, ...QUICK }, budget: { total: { maxCostUsd: 1.2 } }, handleParentSignals: false });
    const runs = [
      sup.spawn({ task: 'hep', protocol: 'hep', command: hep.command, args: hep.args, env: hep.env, priority: 10 }),
      sup.spawn({ task: 'breaks', command: crash.command, args: crash.args, env: crash.env, priority: 9 }),
      ...['a', 'b', 'c', 'd', 'e'].map((task) => sup.spawn({ task })),
    ];
    const outcomes = await Promise.all(runs.map((run) => run.outcome));
    expect(outcomes.map((outcome) => [outcome.status, outcome.errorCode])).toEqual([
      ['done', undefined],
      ['failed', 'child-error'],
      ['done', undefined],
      ['done', undefined],
      ['done', undefined],
      ['cancelled', 'budget-exceeded'],
      ['cancelled', 'budget-exceeded'],
    ]);
    // The cost came with the turn's last model call, before its turn ended: that run was asked for its answer then.
    expect(outcomes[4]!.budget?.exceeded).toMatchObject({ scope: 'shared', limit: 'maxCostUsd', action: 'finalize' });
    expect(outcomes[5]).toMatchObject({ turns: 0, protocol: 'fen', exitCode: null, budget: { exceeded: { action: 'not-started' } } });
    expect(sup.budget?.used.costUsd).toBe(1.3);
    const ledger = sup.usage();
    const ran = outcomes.filter((outcome) => outcome.usage !== undefined);
    expect(ledger.total.runs).toBe(7);
    expect(ledger.total.tokens).toBe(ran.reduce((sum, outcome) => sum + totalTokens(outcome.usage)!, 0));
    expect(ledger.total.costUsd).toBe(1.3);
    expect(ledger.byProtocol['hep']).toMatchObject({ runs: 1, tokens: 55, costUsd: 0.1 });
    const fenTokens = outcomes.filter((outcome) => outcome.protocol === 'fen').reduce((sum, outcome) => sum + (totalTokens(outcome.usage) ?? 0), 0);
    expect(ledger.byProtocol['fen']).toMatchObject({ runs: 6, tokens: fenTokens });
    expect(ledger.byProtocol['fen']!.tokens + ledger.byProtocol['hep']!.tokens).toBe(ledger.total.tokens);
    expect(ledger.byStatus).toMatchObject({ done: { runs: 4 }, failed: { runs: 1 }, cancelled: { runs: 2, tokens: 0 } });
    expect(ledger.byModel['fake-1']?.runs).toBe(4);
    // The crash reported no usage: the sums are a lower bound.
    expect(ledger.complete).toBe(outcomes[1]!.turns === 0);
    await sup.shutdown();
  });
});
