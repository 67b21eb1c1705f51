// examples/basic-run.mjs: supervises the fake child's demo run: prints events as they arrive, steers once mid-turn,
// then prints the whole answer and the outcome.
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

// A real agent would be e.g. { command: 'fen', args: ['--presenter', 'rpc'] }.
const child = fakeChild('demo');

const run = spawnRun({
  command: child.command,
  args: child.args,
  env: child.env,
  task: 'Inspect the README and summarise it',
  timeoutMs: 60_000,
});
console.log(`run ${run.id} started as pid ${run.pid}`);
run.on('state', (state, previous) => console.log(`  state: ${previous} -> ${state}`));

let steered = false;
for await (const event of run) {
  if (event.type === 'tool-call') console.log(`  tool call: ${event.name} ${JSON.stringify(event.arguments)}`);
  if (event.type === 'turn-complete') console.log(`  turn ${event.turn} complete (${event.stopReason})`);
  // Steer once, while the first turn is still working.
  if (event.type === 'tool-result' && !steered) {
    steered = true;
    const ack = await run.steer('Also list the section headings.');
    console.log(`  steer #${ack.seq}: ${ack.status}`);
    ack.delivery?.then((delivery) => console.log(`  steer #${ack.seq} delivery: ${delivery}`));
  }
}

const outcome = await run.outcome;
console.log('\nanswer:\n' + (outcome.finalText ?? '(none)'));
console.log('\noutcome:', {
  status: outcome.status,
  turns: outcome.turns,
  stopReason: outcome.stopReason,
  truncated: outcome.truncated,
  killed: outcome.killed,
  usage: outcome.usage,
  durationMs: outcome.durationMs,
});
child.cleanup();
