// examples/fan-out.mjs: fans eight tasks out over three slots with createSupervisor, shows progress from
// sup.events() and the counts, retries a flaky task once, and shuts the pool down (`await using` in TypeScript;
// Node 20 itself has no `using` syntax, hence the try/finally).
import { createSupervisor } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

// A real agent would be e.g. { command: 'fen', args: ['--presenter', 'rpc'] }.
const child = fakeChild('echo');
const flaky = fakeChild('crash');

const sup = createSupervisor({
  concurrency: 3,
  defaults: { command: child.command, args: child.args, env: child.env, timeoutMs: 60_000 },
  retry: { attempts: 2, backoff: 100 },
});

try {
  const files = ['api.md', 'cli.md', 'testing.md', 'protocol.md', 'reliability.md', 'performance.md', 'architecture.md'];
  const tasks = new Map();
  for (const file of files) tasks.set(sup.spawn({ task: `Summarise docs/${file}` }), file);
  // This one crashes each time: it is retried once (a new run, linked to the first), then given up.
  tasks.set(sup.spawn({ command: flaky.command, args: flaky.args, env: flaky.env, task: 'Summarise a file that breaks the agent', priority: 1 }), 'flaky');

  const label = (run) => tasks.get(run) ?? `${tasks.get(run.retryOf)} (attempt ${run.attempt})`;
  const progress = () => {
    const { running, queued, done, failed } = sup.counts;
    return `[${running} running, ${queued} queued, ${done} done, ${failed} failed]`;
  };

  // One stream for every run; it ends once the pool is idle.
  for await (const { run, event } of sup.events({ untilIdle: true })) {
    if (event.type === 'turn-started') console.log(`${progress()} ${label(run)}: working`);
    if (event.type === 'exit') console.log(`${progress()} ${label(run)}: ${event.status}`);
  }

  for (const [run, name] of tasks) {
    const outcome = await run.finalOutcome; // the last attempt's outcome when the run was retried
    console.log(`${name}: ${outcome.status}${outcome.finalText ? ` -> ${outcome.finalText}` : ''}`);
  }
  console.log('counts:', sup.counts);
} finally {
  await sup.shutdown({ mode: 'cancel' }); // stops whatever is left; here nothing is
  child.cleanup();
  flaky.cleanup();
}
