// examples/test-kit.mjs: check that your code survives a child that crashes mid-turn, and that nothing is left.
import assert from 'node:assert/strict';
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

const crash = fakeChild('crash', { turnTickMs: 5, idleTickMs: 20 });
const outcome = await spawnRun({ ...crash, task: 'Summarise the README', killGraceMs: 300 }).outcome;

assert.equal(outcome.status, 'failed');
assert.equal(outcome.exitCode, 2);
assert.deepEqual(crash.livePids(), []); // no process of the child's tree survives
crash.cleanup();
console.log(`crash handled: ${outcome.status} (${outcome.error})`);
