// A parent process for the shutdown and watchdog tests: starts runs whose children spawn grandchildren (one
// in its own session), all ignoring SIGTERM, prints what it started, then waits to be signalled by the test,
// or (mode `oom`) exhausts its heap and dies the way a process out of memory does, running no hook.
// Usage: node [--max-old-space-size=N] spawn-parent.mjs <stateDir> <runs> [wait|oom]
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

const [stateDir, runsArg, mode = 'wait'] = process.argv.slice(2);
const runs = Number(runsArg ?? '2');

const scenario = {
  name: 'shutdown-victim',
  ignore: ['cancel', 'sigterm'],
  turns: [
    {
      steps: [
        { misbehave: [{ grandchildren: { count: 1, session: false } }, { grandchildren: { count: 1, session: true } }] },
        { pause: 60_000 },
      ],
    },
  ],
};

const started = [];
for (let index = 0; index < runs; index++) {
  const child = fakeChild(scenario, { turnTickMs: 5, idleTickMs: 20, transcript: false });
  const run = spawnRun({ command: child.command, args: child.args, env: child.env, task: `task ${index}`, stateDir, killGraceMs: 300 });
  const grandchildren = [];
  const reported = new Promise((resolve) => {
    run.on('event', (event) => {
      if (typeof event.extra?.grandchildPid === 'number') {
        grandchildren.push(event.extra.grandchildPid);
        if (grandchildren.length === 2) resolve();
      }
    });
  });
  // Written at once (stdout to a pipe is synchronous): shows the parent's own ladder ran before it died.
  run.on('kill', (step) => process.stdout.write(`KILL ${JSON.stringify({ index, signal: step.signal })}\n`));
  run.on('outcome', (outcome) => {
    process.stdout.write(`OUTCOME ${JSON.stringify({ index, status: outcome.status, killed: outcome.killed, escalated: outcome.escalated })}\n`);
  });
  started.push({ run, child, grandchildren, reported });
}
await Promise.all(started.map((entry) => entry.reported));
const report = started.map(({ run, child, grandchildren }) => ({ pid: run.pid, token: child.token, grandchildren }));
process.stdout.write(`READY ${JSON.stringify(report)}\n`);
if (mode === 'oom') {
  const hoard = [];
  setImmediate(() => {
    for (;;) hoard.push(Array.from({ length: 100_000 }, (_, index) => ({ index })));
  });
}
