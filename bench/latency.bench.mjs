// Benchmark 1, event latency: from the child's append of a stamped event to the parent receiving it, for
// subvisor's `for await`, Fen's 30 ms polling parent and a bare fs.watch reader (the floor).
import { spawnRun } from 'subvisor';
import { childOptions, FLOOD_TASK, floodScenario, spawnBare } from './lib/children.mjs';
import { nsToMs, percentile, row, sized } from './lib/harness.mjs';
import { pollingReader, rawStamp, watchReader } from './lib/readers.mjs';

const BYTES = 200;
const RATE = 400;

function summary(latenciesMs) {
  return {
    count: latenciesMs.length,
    p50: percentile(latenciesMs, 50),
    p99: percentile(latenciesMs, 99),
    max: Math.max(...latenciesMs),
  };
}

/** Latencies (ms) of every stamped event as subvisor's async iterator yields it. */
async function subvisorLatencies(scenario, count) {
  const latencies = [];
  const run = spawnRun({ ...childOptions(scenario), task: FLOOD_TASK, killGraceMs: 1000 });
  for await (const event of run) {
    const received = process.hrtime.bigint();
    if (typeof event.extra?.monoNs === 'string') latencies.push(nsToMs(received - BigInt(event.extra?.monoNs)));
  }
  const outcome = await run.outcome;
  if (outcome.status !== 'done') throw new Error(`latency run ended ${outcome.status}: ${outcome.error ?? ''}`);
  if (latencies.length !== count) throw new Error(`subvisor yielded ${latencies.length} of ${count} stamped events`);
  return latencies;
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
  const scenario = floodScenario({ count, bytes: BYTES, rate: RATE });
  const pace = `${count} x ${BYTES} B at ${RATE}/s`;

  const subvisor = summary(await subvisorLatencies(scenario, count));
  const poller = summary(await baselineLatencies(scenario, count, pollingStamps));
  const floor = summary(await baselineLatencies(scenario, count, watchStamps));

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
  ];
}
