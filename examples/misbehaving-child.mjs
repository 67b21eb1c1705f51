// examples/misbehaving-child.mjs: your own orchestration code against fake children that crash and leave stubborn grandchildren.
import assert from 'node:assert/strict';
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

// Your orchestration code: ask an agent for a summary, give up after a time budget.
async function summarise(child, text, timeoutMs = 5_000) {
  const run = spawnRun({ ...child, task: `Summarise: ${text}`, timeoutMs, killGraceMs: 300 });
  const outcome = await run.outcome;
  if (outcome.status !== 'done') throw new Error(`agent ${outcome.status}: ${outcome.error ?? 'no reason'}`);
  return outcome.finalText;
}

const fast = { turnTickMs: 5, idleTickMs: 20 };

// The happy path: `echo` answers with the prompt itself.
const echo = fakeChild('echo', fast);
try {
  assert.equal(await summarise(echo, 'the README'), 'Summarise: the README');
  assert.equal(echo.transcript().finalState, 'done'); // what the child itself saw
} finally {
  echo.cleanup();
}

// A child that crashes mid-turn: the caller gets an error, not a hang.
const crash = fakeChild('crash', fast);
try {
  await assert.rejects(summarise(crash, 'the README'), /agent failed/);
} finally {
  crash.cleanup();
}

// A child that ignores cancel and SIGTERM and leaves SIGTERM-proof grandchildren, one in its own session:
// the deadline passes, the whole tree is killed, nothing survives.
const stubborn = fakeChild('grandchildren', fast);
try {
  await assert.rejects(summarise(stubborn, 'the README', 1_500), /agent timed-out/);
  assert.deepEqual(stubborn.livePids(), []);
} finally {
  stubborn.cleanup();
}
console.log('all good');
