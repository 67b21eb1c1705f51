// examples/durable-attach.mjs: a parent killed with SIGKILL mid-turn, and a new parent that re-attaches to the same live child.
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attachRun, spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

if (process.argv[2] === 'first-parent') {
  // The first parent: starts a durable run, says when its turn started, and waits to be killed.
  const { child, stateDir } = JSON.parse(process.argv[3]);
  const run = spawnRun({ ...child, task: 'audit the repository', runId: 'audit-1', stateDir, durable: { leaseMs: 10_000 } });
  run.on('event', (event) => event.type === 'turn-started' && process.send({ pid: run.pid }));
  setInterval(() => {}, 1000);
} else {
  const stateDir = mkdtempSync(join(tmpdir(), 'durable-example-'));
  // A fake child that keeps running when its parent dies, as a real Fen child does; its turn takes a second.
  const child = fakeChild({ outlivesParent: true, turns: [{ steps: [{ text: 'Reading. ' }, { pause: 1000 }], answer: 'Three findings.' }] });
  try {
    const first = fork(new URL(import.meta.url).pathname, ['first-parent', JSON.stringify({ child: { command: child.command, args: child.args, env: child.env }, stateDir })]);
    const { pid } = await new Promise((resolve) => first.once('message', resolve));
    first.kill('SIGKILL'); // a crash, a deploy, an OOM kill: no cleanup ran
    await new Promise((resolve) => first.once('exit', resolve));

    const run = attachRun({ runId: 'audit-1', stateDir });
    assert.equal(run.pid, pid); // the same child, still working
    const types = [];
    for await (const event of run) types.push(event.type); // every event from the first, once
    const outcome = await run.outcome;
    assert.equal(outcome.status, 'done');
    assert.deepEqual(types.slice(0, 2), ['agent-started', 'ready']);
    console.log(`re-attached to pid ${pid}: ${outcome.finalText}`);
  } finally {
    child.cleanup();
    rmSync(stateDir, { recursive: true, force: true });
  }
}
