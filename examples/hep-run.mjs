// examples/hep-run.mjs: the same Run API over Fa's HEP v1 (seed 001): a fake `fa` answers with tool calls over
// several rounds; prints the tool calls and rounds as they stream, then the answer and the outcome.
import { spawnRun } from 'subvisor';
import { fakeFa } from 'subvisor/testing';

// A real agent would be { protocol: 'hep', command: 'fa', args: ['--output', 'events'] }: the driver appends -p <task>.
const fa = fakeFa('tools');

const run = spawnRun({ protocol: 'hep', command: fa.command, args: fa.args, env: fa.env, task: 'Fix the failing test', timeoutMs: 60_000 });
for await (const event of run) {
  if (event.type === 'tool-call') console.log(`  tool call: ${event.name} ${event.arguments ?? ''}`);
  if (event.type === 'turn-complete') console.log(`  round ${event.turn} done (${event.stopReason})`);
}

const outcome = await run.outcome;
console.log('\nanswer (the last round):\n' + (outcome.finalText ?? '(none)'));
console.log('\noutcome:', { status: outcome.status, turns: outcome.turns, exitCode: outcome.exitCode, usage: outcome.usage });
fa.cleanup();
