// examples/sdk-basics.mjs: supervise one child, print its tool calls as they happen, steer it, print the answer.
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

// The bundled fake child stands in for a real agent such as { command: 'fen', args: ['--presenter', 'rpc'] }.
const child = fakeChild('demo');
const run = spawnRun({ ...child, task: 'Inspect the README and summarise it', timeoutMs: 60_000 });

for await (const event of run) {
  if (event.type === 'tool-call') console.log(`tool: ${event.name}`);
  if (event.type === 'tool-result' && event.name === 'read_file') {
    const ack = await run.steer('Also say how the tests are run.');
    console.log(`steer: ${ack.status}, ${await ack.delivery}`);
  }
}

const outcome = await run.outcome; // settles exactly once, never rejects
console.log(outcome.status, outcome.finalText);
child.cleanup();
