// examples/mew-session.mjs: a task on a mew daemon with connectRun, approving one tool; the fake daemon stands in for `mew daemon`.
import assert from 'node:assert/strict';
import { connectRun } from 'subvisor';
import { fakeMewDaemon } from 'subvisor/testing';

// A real daemon: `mew daemon --port 127.0.0.1:7777`, then url: 'ws://127.0.0.1:7777'.
const daemon = await fakeMewDaemon('permission');
const run = connectRun({
  protocol: 'mew',
  url: daemon.url,
  task: 'List the files',
  cwd: process.cwd(),
  approve: (request) => request.kind === 'tool_permission' && request.known && request.toolName === 'bash',
});

for await (const event of run) {
  if (event.type === 'tool-result') console.log(`tool ${event.name}: ${event.isError ? 'failed' : 'ok'}`);
}
const outcome = await run.outcome;
assert.equal(outcome.status, 'done');
assert.deepEqual(daemon.receivedOf('permission_response').map((entry) => entry.message.decision), ['allow_once']);
await daemon.close();
console.log(`${outcome.status}: ${outcome.finalText}`);
