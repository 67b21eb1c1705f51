// Benchmark 8, backpressure: peak parent RSS while a control's ack is withheld during a flood, and while
// the consumer pulls the rest of a large event file after the child already exited.
import { spawnRun } from 'subvisor';
import { childOptions, FLOOD_TASK } from './lib/children.mjs';
import { collectGarbage, inFreshProcess, row, rssSampler, sized, sleep } from './lib/harness.mjs';

const MB = 2 ** 20;

/**
 * A child that, once its first turn starts, stops acking (acting on controls silently) and floods:
 * the steer the consumer sends at `turn-started` is never answered while the flood lasts.
 */
function withheldAckScenario({ count, bytes }) {
  return {
    name: 'bench-withheld-ack',
    misbehaviours: [{ at: 'turn-start', do: [{ stopAcking: 'apply' }, { flood: { count, bytes, stamp: true } }] }],
  };
}

/** Peak RSS of a slow consumer (1 ms sleep every 50 events) of a flood during which its steer's ack is withheld. */
export async function withheldAckFlood({ count, bytes }) {
  collectGarbage();
  const startRss = process.memoryUsage.rss();
  const sampler = rssSampler(5);
  const run = spawnRun({ ...childOptions(withheldAckScenario({ count, bytes })), task: FLOOD_TASK, killGraceMs: 1000 });
  let received = 0;
  let steer;
  for await (const event of run) {
    if (event.type === 'turn-started' && steer === undefined) steer = run.steer('an ack the child withholds');
    if (typeof event.extra?.monoNs !== 'string') continue;
    received++;
    if (received % 50 === 0) {
      sampler.sample();
      await sleep(1);
    }
    if (received === count) void run.close(); // acted on silently: the child closes and exits
  }
  const peakRss = sampler.stop();
  const outcome = await run.outcome;
  await steer;
  if (received !== count) throw new Error(`withheld-ack run yielded ${received} of ${count} events (${outcome.status})`);
  return { startRss, peakRss };
}

/**
 * The child floods and exits while the consumer holds still after its first event; the consumer awaits
 * the outcome (RSS then: what the parent loaded without being asked), then pulls everything.
 */
export async function exitThenPull({ count, bytes }) {
  collectGarbage();
  const startRss = process.memoryUsage.rss();
  const sampler = rssSampler(5);
  const scenario = { name: 'bench-exit-flood', misbehaviours: [{ at: 'turn-start', do: { flood: { count, bytes, stamp: true } } }] };
  const run = spawnRun({ ...childOptions(scenario), task: FLOOD_TASK, killGraceMs: 1000 });
  const events = run[Symbol.asyncIterator]();
  await events.next();
  const outcome = await run.outcome;
  collectGarbage();
  const atOutcomeRss = process.memoryUsage.rss();
  let received = 0;
  for (let next = await events.next(); !next.done; next = await events.next()) {
    if (typeof next.value.extra?.monoNs === 'string') received++;
    if (received % 50 === 0) sampler.sample();
  }
  const peakRss = sampler.stop();
  if (outcome.status !== 'done' || received !== count) throw new Error(`exit-then-pull: ${outcome.status}, ${received} of ${count} events`);
  return { startRss, atOutcomeRss, peakRss };
}

export async function run(options = {}) {
  const bench = 'backpressure';
  const small = { count: sized(options, { full: 200_000, quick: 50_000, smoke: 2_000 }), bytes: 1024 };
  // Full size: a child that writes about a gigabyte and exits must not load it into the parent.
  const large = { count: sized(options, { full: 87_000, quick: 4_000, smoke: 100 }), bytes: 12 * 1024 };
  const moduleUrl = import.meta.url;
  const withheld = await inFreshProcess(moduleUrl, 'withheldAckFlood', small, { timeoutMs: 600_000 });
  const pulled = await inFreshProcess(moduleUrl, 'exitThenPull', large, { timeoutMs: 600_000 });
  const floodMb = (flood) => `${flood.count} x ~${Math.round(flood.bytes / 1024)} KB (${Math.round((flood.count * flood.bytes) / MB)} MB)`;
  return [
    row({ bench, metric: `peak RSS, slow consumer, a steer's ack withheld during ${floodMb(small)}`, value: withheld.peakRss / MB, unit: 'MB', baseline: 'RSS at start', baselineValue: withheld.startRss / MB }),
    row({ bench, metric: `RSS once the outcome settled, child wrote ${floodMb(large)} and exited, consumer not pulling`, value: pulled.atOutcomeRss / MB, unit: 'MB', baseline: 'RSS at start', baselineValue: pulled.startRss / MB }),
    row({ bench, metric: `peak RSS, then pulling all of it`, value: pulled.peakRss / MB, unit: 'MB', baseline: 'RSS at start', baselineValue: pulled.startRss / MB }),
  ];
}
