// Benchmark 6, the pool: N short runs through createSupervisor at concurrency 8 against p-queue + spawnRun
// written by hand in the same process and run, and the parent's CPU while 1000 runs wait in the queue.
import PQueue from 'p-queue';
import { createSupervisor, spawnRun } from 'subvisor';
import { childOptions, IDLE_SCENARIO } from './lib/children.mjs';
import { nsToMs, row, sized } from './lib/harness.mjs';

const CONCURRENCY = 8;
const SHORT_TASK = 'short';

function checkDone(outcome) {
  if (outcome.status !== 'done') throw new Error(`a short run ended ${outcome.status}: ${outcome.error ?? ''}`);
}

/** `count` short runs (an echo child answers its task and is closed) through the pool; milliseconds. */
async function throughPool(options, count) {
  const started = process.hrtime.bigint();
  const sup = createSupervisor({ concurrency: CONCURRENCY, defaults: { ...options, task: SHORT_TASK, retainEvents: false } });
  const runs = [];
  for (let index = 0; index < count; index++) runs.push(sup.spawn());
  await sup.onIdle();
  const ms = nsToMs(process.hrtime.bigint() - started);
  for (const run of runs) checkDone(await run.outcome);
  await sup.shutdown();
  return ms;
}

/** The same runs with p-queue and spawnRun by hand: each task resolves once the run's tree is reaped. */
async function byHand(options, count) {
  const started = process.hrtime.bigint();
  const queue = new PQueue({ concurrency: CONCURRENCY });
  const outcomes = [];
  for (let index = 0; index < count; index++) {
    queue.add(async () => {
      const run = spawnRun({ ...options, task: SHORT_TASK, retainEvents: false });
      outcomes.push(await run.outcome);
    });
  }
  await queue.onIdle();
  const ms = nsToMs(process.hrtime.bigint() - started);
  for (const outcome of outcomes) checkDone(outcome);
  return ms;
}

/** CPU of this process (user + system) over `windowMs`, as % of one core. */
async function cpuPercent(windowMs) {
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const used = process.cpuUsage(cpu);
  return ((used.user + used.system) / 1000 / nsToMs(process.hrtime.bigint() - started)) * 100;
}

/**
 * The parent's CPU with 8 idle runs holding every slot, without and then with `queued` more runs waiting
 * behind them; the queued runs hold no process, timer or file.
 */
async function queuedCpu(options, queued, windowMs) {
  const sup = createSupervisor({ concurrency: CONCURRENCY, defaults: { ...options, keepAlive: true, retainEvents: false } });
  const holders = Array.from({ length: CONCURRENCY }, () => sup.spawn());
  await Promise.all(
    holders.map(
      (run) =>
        new Promise((resolve, reject) => {
          run.on('state', (state) => state === 'ready' && resolve());
          run.outcome.then((outcome) => reject(new Error(`an idle run ended ${outcome.status} before ready`)));
        }),
    ),
  );
  const idleOnly = await cpuPercent(windowMs);
  for (let index = 0; index < queued; index++) sup.spawn();
  if (sup.queued !== queued) throw new Error(`expected ${queued} queued runs, found ${sup.queued}`);
  const withQueue = await cpuPercent(windowMs);
  const counts = await sup.shutdown({ mode: 'cancel' });
  if (counts.cancelled !== queued + CONCURRENCY) throw new Error(`shutdown cancelled ${counts.cancelled} runs`);
  return { idleOnly, withQueue };
}

export async function run(options = {}) {
  const bench = 'pool';
  const child = childOptions(IDLE_SCENARIO);
  const count = sized(options, { full: 1000, quick: 100, smoke: 2 });
  // Warm-up (module loading, first spawns), not counted.
  const warmUp = sized(options, { full: CONCURRENCY, quick: CONCURRENCY, smoke: 1 });
  await throughPool(child, warmUp);
  await byHand(child, warmUp);
  // Halves in the order pool, hand, hand, pool: a machine whose load drifts during the run favours neither.
  const half = count / 2;
  const firstPool = await throughPool(child, half);
  const hand = (await byHand(child, half)) + (await byHand(child, half));
  const poolTotal = firstPool + (await throughPool(child, half));
  const ratio = poolTotal / hand;

  const queued = sized(options, { full: 1000, quick: 1000, smoke: 20 });
  const windowMs = sized(options, { full: 5000, quick: 2000, smoke: 200 });
  const cpu = await queuedCpu(child, queued, windowMs);
  return [
    row({ bench, metric: `${count} short runs, concurrency ${CONCURRENCY}, wall time`, value: poolTotal, unit: 'ms', baseline: 'p-queue + spawnRun by hand', baselineValue: hand, target: 'ratio <= 1.1', met: ratio <= 1.1 }),
    row({ bench, metric: `parent CPU, ${queued} runs queued behind ${CONCURRENCY} idle ones`, value: cpu.withQueue, unit: '% of a core', baseline: `${CONCURRENCY} idle runs, nothing queued`, baselineValue: cpu.idleOnly, target: '< 1 %', met: cpu.withQueue < 1 }),
  ];
}
