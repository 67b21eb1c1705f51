// A parent that starts one sandboxed run whose child starts grandchildren (one in its own session) ignoring SIGTERM, prints READY with what a test needs to find the tree, then waits to be killed.
// Usage: node sandbox-parent.mjs <stateDir> <cwd>
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

const [stateDir, cwd] = process.argv.slice(2);
const scenario = {
  ignore: ['cancel', 'sigterm'],
  turns: [{ steps: [{ misbehave: [{ grandchildren: { count: 1, session: false } }, { grandchildren: { count: 1, session: true } }] }, { pause: 60_000 }] }],
};
const child = fakeChild(scenario, { turnTickMs: 5, idleTickMs: 20, transcript: false });
const run = spawnRun({ command: child.command, args: child.args, env: child.env, task: 'go', stateDir, cwd, killGraceMs: 300, sandbox: true });
let grandchildren = 0;
run.on('event', (event) => {
  if (typeof event.extra?.grandchildPid !== 'number' || ++grandchildren < 2) return;
  process.stdout.write(`READY ${JSON.stringify({ pid: run.pid, token: child.token })}\n`);
});
setInterval(() => undefined, 60_000);
