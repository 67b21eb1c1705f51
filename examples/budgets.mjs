// examples/budgets.mjs: a child that would call tools forever is asked for its answer at maxToolCalls; then a pool
// whose runs share a total cost budget stops starting runs once it is spent, and its usage ledger adds up the bill.
import { createSupervisor, spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

// A real agent would be { command: 'fen', args: ['--presenter', 'rpc'] }. This fake calls grep 200 times in its
// turn, and answers in the tool-free turn a finalize asks for.
const looping = fakeChild({
  turns: [{ steps: Array.from({ length: 200 }, () => ({ tool: 'grep', durationMs: 5 })) }],
  finalTurn: { answer: 'Stopped early: here is what the first searches found.' },
});
const run = spawnRun({ ...looping, task: 'Find every caller of parse()', budget: { maxToolCalls: 10 } });
const outcome = await run.outcome;
console.log(outcome.status, '-', outcome.finalText);
console.log('budget:', outcome.budget.exceeded); // { limit: 'maxToolCalls', scope: 'run', at: { toolCalls: 10, ... }, action: 'finalize' }
looping.cleanup();

// Each task costs $0.40 (a real child reports its own cost); the pool may spend $1 in all.
const paid = fakeChild({ turns: [{ answer: { echo: true }, usage: { input: 1200, output: 300, cost: { total: 0.4 } } }] });
const sup = createSupervisor({ concurrency: 1, defaults: { ...paid, timeoutMs: 60_000 }, budget: { total: { maxCostUsd: 1 } } });
const runs = ['one', 'two', 'three', 'four'].map((task) => sup.spawn({ task: `Summarise chapter ${task}` }));
for (const pooled of runs) {
  const { status, errorCode, budget } = await pooled.outcome;
  console.log(`${status}${errorCode ? ` (${errorCode}${budget?.exceeded ? `, ${budget.exceeded.action}` : ''})` : ''}`);
}
const { total, byStatus, complete } = sup.usage();
console.log(`spent $${total.costUsd.toFixed(2)} over ${total.runs} runs, ${total.tokens} tokens; done: ${byStatus.done?.runs}; complete: ${complete}`);
await sup.shutdown();
paid.cleanup();
