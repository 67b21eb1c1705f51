// examples/pool.mjs: six tasks through a pool of two slots (two live process trees at most), one of them cancelled
// while it waits for a slot; each task's outcome in spawn order, then the pool's counts.
import { createSupervisor } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

// The bundled fake child stands in for a real agent such as { command: 'fen', args: ['--presenter', 'rpc'] }.
const child = fakeChild('echo');
const sup = createSupervisor({ concurrency: 2, defaults: { ...child, timeoutMs: 60_000 } });

const pages = ['api', 'cli', 'agent', 'testing', 'protocol', 'reliability'];
const runs = pages.map((page) => sup.spawn({ task: `Summarise docs/${page}.md` }));
await runs[5].cancel(); // still queued: it never starts

for (const run of runs) {
  const outcome = await run.outcome; // settles once the run's whole process tree is gone
  console.log(`${outcome.status}: ${outcome.finalText ?? outcome.error}`);
}
console.log(await sup.shutdown()); // the final counts
child.cleanup();
