// A parent process for the pool's signal test: a supervisor of 2 slots with 6 runs whose children spawn
// grandchildren (one in its own session), all ignoring SIGTERM. Prints each start, READY once both running
// runs reported their grandchildren, the signal handler counts, then waits to be signalled by the test.
// Usage: node pool-parent.mjs <stateDir>
import { createSupervisor } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

const [stateDir] = process.argv.slice(2);
const scenario = {
  name: 'pool-shutdown-victim',
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
const child = fakeChild(scenario, { turnTickMs: 5, idleTickMs: 20, transcript: false });
const sup = createSupervisor({ concurrency: 2, defaults: { command: child.command, args: child.args, env: child.env, stateDir, killGraceMs: 300 } });
const reported = [];
sup.on('start', (run) => {
  process.stdout.write(`START ${run.id}\n`);
  let grandchildren = 0;
  reported.push(
    new Promise((resolve) => {
      run.on('event', (event) => {
        if (typeof event.extra?.grandchildPid === 'number' && ++grandchildren === 2) resolve();
      });
    }),
  );
});
for (let index = 0; index < 6; index++) sup.spawn({ task: `task ${index}`, runId: `run-${index}` });
while (reported.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
await Promise.all(reported);
const handlers = { SIGINT: process.listenerCount('SIGINT'), SIGTERM: process.listenerCount('SIGTERM') };
process.stdout.write(`READY ${JSON.stringify({ token: child.token, handlers })}\n`);
