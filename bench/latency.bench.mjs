// Benchmark 1, event latency: from the child's append of a stamped event to the parent receiving it, for
// subvisor's `for await`, Fen's 30 ms polling parent and a bare fs.watch reader (the floor).
import { spawnRun } from 'subvisor';
import { childOptions, FLOOD_TASK, floodScenario, spawnBare } from './lib/children.mjs';
import { nsToMs, percentile, row, sized } from './lib/harness.mjs';
import { pollingReader, rawStamp, watchReader } from './lib/readers.mjs';

const BYTES = 200;
const RATE = 400;
/** The latency budget the scale benchmark's coalescing cases use (RunOptions.latencyBudgetMs). */
const BUDGET_MS = 30;
/** A sparse stream: one event every 50 ms. */
const SPARSE_RATE = 20;
/** The busy runs beside it: as in the scale benchmark, 100 events/s each (together enough to coalesce them). */
const BUSY_RATE = 100;

function summary(latenciesMs) {
  return {
    count: latenciesMs.length,
    p50: percentile(latenciesMs, 50),
    p99: percentile(latenciesMs, 99),
    max: Math.max(...latenciesMs),
  };
}

/** Pushes the latency (ms) of each stamped event `run` yields onto `latencies`; resolves when the run ends. */
async function stampLatencies(run, latencies) {
  for await (const event of run) {
    const received = process.hrtime.bigint();
    if (typeof event.extra?.monoNs === 'string') latencies.push(nsToMs(received - BigInt(event.extra?.monoNs)));
  }
}

/** Latencies (ms) of every stamped event as subvisor's async iterator yields it. */
async function subvisorLatencies(scenario, count, runOptions = {}) {
  const latencies = [];
  const run = spawnRun({ ...childOptions(scenario), ...runOptions, task: FLOOD_TASK, killGraceMs: 1000 });
  await stampLatencies(run, latencies);
  const outcome = await run.outcome;
  if (outcome.status !== 'done') throw new Error(`latency run ended ${outcome.status}: ${outcome.error ?? ''}`);
  if (latencies.length !== count) throw new Error(`subvisor yielded ${latencies.length} of ${count} stamped events`);
  return latencies;
}

/**
 * A sparse stream's latencies (one event per 50 ms, default settings) while `busyCount` busy runs stream
 * beside it in the same parent, and the busy runs' own latencies (the default coalesces those once the
 * parent wakes for reads often enough: the trade the sparse run must not pay).
 */
async function besideBusy(count, busyCount) {
  const busyScenario = floodScenario({ count: BUSY_RATE * 600, bytes: BYTES, rate: BUSY_RATE });
  const busyLatencies = [];
  const busy = Array.from({ length: busyCount }, () => spawnRun({ ...childOptions(busyScenario), task: FLOOD_TASK, keepAlive: true, killGraceMs: 200 }));
  const consumed = busy.map((run) => stampLatencies(run, busyLatencies));
  try {
    // Let the busy runs reach their stream before the sparse one starts.
    while (busyLatencies.length < busyCount * BUSY_RATE) await new Promise((resolve) => setTimeout(resolve, 50));
    const sparse = await subvisorLatencies(floodScenario({ count, bytes: BYTES, rate: SPARSE_RATE }), count);
    return { sparse, busy: busyLatencies.slice(busyCount * BUSY_RATE) };
  } finally {
    await Promise.all(busy.map((run) => run.terminate()));
    await Promise.all(consumed);
  }
}

/** Fen's parent: every line is JSON.parsed on its 30 ms tick. */
function pollingStamps(path, onStamp) {
  return pollingReader(path, (event, receivedNs) => {
    if (typeof event['mono-ns'] === 'string') onStamp(BigInt(event['mono-ns']), receivedNs);
  });
}

/** The floor: the stamp is cut out of the raw line. */
function watchStamps(path, onStamp) {
  return watchReader(path, (line, receivedNs) => {
    const stamp = rawStamp(line);
    if (stamp !== null) onStamp(stamp, receivedNs);
  });
}

/** Latencies (ms) of every stamped event as a baseline reader sees it, tailing a bare child's event file. */
async function baselineLatencies(scenario, count, makeReader) {
  const child = spawnBare(scenario, { task: FLOOD_TASK });
  const latencies = [];
  let reader;
  try {
    await new Promise((resolve, reject) => {
      const timeout = setTimeout(
        () => reject(new Error(`baseline reader saw ${latencies.length} of ${count} events in time`)),
        (count / RATE) * 1000 + 30_000,
      );
      reader = makeReader(child.eventPath, (stampNs, receivedNs) => {
        latencies.push(nsToMs(receivedNs - stampNs));
        if (latencies.length === count) {
          clearTimeout(timeout);
          resolve();
        }
      });
      child.exited.then(({ code, signal }) => {
        clearTimeout(timeout);
        reject(new Error(`bare child exited early (${signal ?? code}) after ${latencies.length} events`));
      });
    });
  } finally {
    reader?.close();
    await child.stop();
  }
  return latencies;
}

export async function run(options = {}) {
  const count = sized(options, { full: 2000, quick: 500, smoke: 40 });
  const sparseCount = sized(options, { full: 200, quick: 60, smoke: 6 });
  const busyCount = sized(options, { full: 10, quick: 10, smoke: 2 });
  const scenario = floodScenario({ count, bytes: BYTES, rate: RATE });
  const pace = `${count} x ${BYTES} B at ${RATE}/s`;

  const subvisor = summary(await subvisorLatencies(scenario, count));
  const poller = summary(await baselineLatencies(scenario, count, pollingStamps));
  const floor = summary(await baselineLatencies(scenario, count, watchStamps));
  const budget = summary(await subvisorLatencies(scenario, count, { latencyBudgetMs: BUDGET_MS }));
  const sparseAlone = summary(await subvisorLatencies(floodScenario({ count: sparseCount, bytes: BYTES, rate: SPARSE_RATE }), sparseCount));
  const beside = await besideBusy(sparseCount, busyCount);
  const sparseBeside = summary(beside.sparse);
  const busy = summary(beside.busy);
  const sparse = `sparse: ${sparseCount} x ${BYTES} B at ${SPARSE_RATE}/s`;

  const bench = 'latency';
  const vsPoller = '30 ms poller';
  const vsFloor = 'fs.watch floor';
  const p50Met = subvisor.p50 <= 1 && subvisor.p50 / poller.p50 <= 0.1;
  return [
    row({ bench, metric: `p50, ${pace}`, value: subvisor.p50, unit: 'ms', baseline: vsPoller, baselineValue: poller.p50, target: '<= 1 ms and ratio <= 0.1', met: p50Met }),
    row({ bench, metric: 'p99', value: subvisor.p99, unit: 'ms', baseline: vsPoller, baselineValue: poller.p99, target: '<= 5 ms', met: subvisor.p99 <= 5 }),
    row({ bench, metric: 'max', value: subvisor.max, unit: 'ms', baseline: vsPoller, baselineValue: poller.max }),
    row({ bench, metric: 'p50', value: subvisor.p50, unit: 'ms', baseline: vsFloor, baselineValue: floor.p50 }),
    row({ bench, metric: 'p99', value: subvisor.p99, unit: 'ms', baseline: vsFloor, baselineValue: floor.p99 }),
    row({ bench, metric: 'max', value: subvisor.max, unit: 'ms', baseline: vsFloor, baselineValue: floor.max }),
    // The explicit trade: a stream faster than the budget is read on the shared tick, so each event waits up to the budget.
    row({ bench, metric: `p50, latencyBudgetMs ${BUDGET_MS}`, value: budget.p50, unit: 'ms', baseline: vsPoller, baselineValue: poller.p50, target: 'ratio <= 1', met: budget.p50 <= poller.p50 }),
    row({ bench, metric: `p99, latencyBudgetMs ${BUDGET_MS}`, value: budget.p99, unit: 'ms', baseline: vsPoller, baselineValue: poller.p99 }),
    // The default coalesces busy runs only while the parent wakes for reads faster than 500/s: a sparse run never waits.
    row({ bench, metric: `p50, ${sparse}`, value: sparseAlone.p50, unit: 'ms', baseline: vsPoller, baselineValue: poller.p50, target: '<= 1 ms', met: sparseAlone.p50 <= 1 }),
    row({ bench, metric: `p50, ${sparse}, beside ${busyCount} busy runs (${BUSY_RATE}/s each)`, value: sparseBeside.p50, unit: 'ms', baseline: vsPoller, baselineValue: poller.p50, target: '<= 1 ms', met: sparseBeside.p50 <= 1 }),
    row({ bench, metric: `p99, ${sparse}, beside ${busyCount} busy runs`, value: sparseBeside.p99, unit: 'ms', baseline: vsPoller, baselineValue: poller.p99 }),
    row({ bench, metric: `p50, the ${busyCount} busy runs beside it (coalesced by default)`, value: busy.p50, unit: 'ms', baseline: vsPoller, baselineValue: poller.p50 }),
    row({ bench, metric: `p99, the ${busyCount} busy runs beside it`, value: busy.p99, unit: 'ms', baseline: vsPoller, baselineValue: poller.p99 }),
  ];
}
