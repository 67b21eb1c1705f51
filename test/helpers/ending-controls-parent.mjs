// A program written the common way: `setTimeout(() => run.cancel(), limit)` with no catch, on runs that end first.
// Usage: node ending-controls-parent.mjs <stateDir>. Prints one JSON line of the acks; an unhandled rejection would crash it.
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

const [stateDir] = process.argv.slice(2);
const child = fakeChild({ turns: [{ answer: 'quick' }] }, { turnTickMs: 5, idleTickMs: 20, transcript: false });
const run = spawnRun({ command: child.command, args: child.args, env: child.env, task: 'go', stateDir, killGraceMs: 200 });
const late = [];
// The limit passes long after the run finished: each of these used to reject (unhandled) and kill the program.
setTimeout(() => late.push(run.cancel()), 300);
setTimeout(() => late.push(run.close()), 300);
setTimeout(() => late.push(run.finalize('too late')), 300);
const outcome = await run.outcome;
await new Promise((resolve) => setTimeout(resolve, 400));
const acks = await Promise.all(late);
child.cleanup();
console.log(JSON.stringify({ status: outcome.status, acks }));
