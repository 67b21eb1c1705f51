// A program written the common way: `setTimeout(() => run.cancel(), limit)` with no catch, on runs that end first.
// Usage: node ending-controls-parent.mjs <stateDir>. Prints one JSON line of the acks; an unhandled rejection would crash it.
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

const [stateDir] = process.argv.slice(2);
const child = fakeChild({ turns: [{ answer: 'quick' }] }, { turnTickMs: 5, idleTickMs: 20, transcript: false });
const run = spawnRun({ command: child.command, args: child.args, env: child.env, task: 'go', stateDir, killGraceMs: 200 });
const late = [];
// Each timer fires once the run is over (its exit read, or its outcome settled): each of these used to
// reject, unhandled, and kill the program.
const lateControls = () => {
  setTimeout(() => late.push(run.cancel()), 0);
  setTimeout(() => late.push(run.close()), 0);
  setTimeout(() => late.push(run.finalize('too late')), 0);
};
run.on('event', (event) => event.type === 'exit' && lateControls());
const outcome = await run.outcome;
lateControls();
await new Promise((resolve) => setTimeout(resolve, 100));
const acks = await Promise.all(late);
child.cleanup();
console.log(JSON.stringify({ status: outcome.status, acks }));
