// Benchmark 3, scale: parent CPU (% of one core) and parent RSS per child with many concurrent children,
// for subvisor and for a Fen-style parent (bare execa spawns, each event file polled every 30 ms).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import v8 from 'node:v8';
import { spawnRun } from 'subvisor';
import { childOptions, FLOOD_TASK, floodScenario, IDLE_SCENARIO, spawnBare } from './lib/children.mjs';
import { collectGarbage, inFreshProcess, nsToMs, row, sized, sleep } from './lib/harness.mjs';
import { isAlive } from './lib/hygiene.mjs';
import { pollingReader } from './lib/readers.mjs';

const KB = 1024;
/** Children started at once: enough to be quick, few enough that 2 cores start them well within readyTimeoutMs. */
const BATCH = 25;
const BUSY_RATE = 100;
const READY_TIMEOUT_MS = 60_000;

/** Scenario and task: an idle child waits in `ready`; a busy one streams for longer than any measurement here lasts (teardown cuts it short). */
function childFor(busy) {
  return busy
    ? { scenario: floodScenario({ count: BUSY_RATE * 600, bytes: 200, rate: BUSY_RATE }), task: FLOOD_TASK }
    : { scenario: IDLE_SCENARIO, task: undefined };
}

/** A supervised child: consumed with `for await` like an orchestrator would, resolved once `ready`. */
async function startSupervised({ scenario, task }, counter) {
  const run = spawnRun({ ...childOptions(scenario), task, keepAlive: true, killGraceMs: 200, readyTimeoutMs: READY_TIMEOUT_MS });
  const ready = new Promise((resolve, reject) => {
    const onState = (state) => {
      if (state === 'ready') {
        run.off('state', onState);
        resolve();
      }
    };
    run.on('state', onState);
    run.outcome.then((outcome) =>
      reject(new Error(`run ended before ready: ${outcome.status} ${outcome.error ?? ''}\n${outcome.outputTail}`)),
    );
  });
  const consumed = (async () => {
    for await (const event of run) if (event.type === 'assistant-text-delta') counter.events++;
  })();
  try {
    await ready;
  } catch (error) {
    await run.terminate();
    await consumed;
    throw error;
  }
  return {
    pid: run.pid,
    async stop() {
      await run.terminate();
      await consumed;
    },
  };
}

/** A bare child tailed Fen-style: one 30 ms polling reader per event file, each line JSON.parsed. */
async function startFenStyle({ scenario, task }, counter) {
  const child = spawnBare(scenario, { task });
  let reader;
  try {
    await new Promise((resolve, reject) => {
      reader = pollingReader(child.eventPath, (event) => {
        if (event.type === 'ready') resolve();
        else if (event.type === 'assistant-text-delta') counter.events++;
      });
      child.exited.then(({ code, signal }) => reject(new Error(`bare child exited before ready (${signal ?? code})`)));
    });
  } catch (error) {
    reader?.close();
    await child.stop(500);
    throw error;
  }
  return {
    pid: child.pid,
    async stop() {
      reader.close();
      await child.stop(500);
    },
  };
}

/** Bytes V8's young generation holds (it grows with the allocation rate, and RSS with it). */
function youngGenerationBytes() {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

/**
 * With SCALE_PROFILE_DIR set, a CPU profile and a sampling heap profile (what was allocated where) of the
 * measured window only (not the start-up) are written there as <parent>-<count>-<busy|idle>.cpuprofile
 * and .heapprofile (the profile summary in docs/performance.md).
 */
async function windowProfiler() {
  const dir = process.env.SCALE_PROFILE_DIR;
  if (!dir) return undefined;
  const session = new Session();
  session.connect();
  const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
  await post('Profiler.enable');
  await post('Profiler.start');
  await post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  return {
    async stop(name) {
      const { profile } = await post('Profiler.stop');
      const { profile: heap } = await post('HeapProfiler.stopSampling');
      session.disconnect();
      writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
      writeFileSync(join(dir, `${name}.heapprofile`), JSON.stringify(heap));
    },
  };
}

/**
 * One scale case in a fresh process: starts `count` children (in batches), then measures this
 * process's CPU over `windowMs` and its RSS growth per child, then tears everything down.
 */
export async function scaleCase({ parent, count, busy, windowMs }) {
  const start = parent === 'subvisor' ? startSupervised : startFenStyle;
  const child = childFor(busy);
  const counter = { events: 0 };
  const children = [];
  collectGarbage();
  const rssBefore = process.memoryUsage.rss();
  const heapBefore = process.memoryUsage().heapUsed;
  const youngBefore = youngGenerationBytes();
  try {
    for (let started = 0; started < count; started += BATCH) {
      const batch = Math.min(BATCH, count - started);
      const results = await Promise.allSettled(Array.from({ length: batch }, () => start(child, counter)));
      for (const result of results) if (result.status === 'fulfilled') children.push(result.value);
      const failure = results.find((result) => result.status === 'rejected');
      if (failure) throw failure.reason;
    }
    // Let start-up work (module loading, first reads) settle before measuring.
    await sleep(500);
    collectGarbage();
    const rssReady = process.memoryUsage.rss();
    const heapReady = process.memoryUsage().heapUsed;
    const youngReady = youngGenerationBytes();
    const eventsBefore = counter.events;
    const profiler = await windowProfiler();
    const cpuBefore = process.cpuUsage();
    const startedNs = process.hrtime.bigint();
    await sleep(windowMs);
    const cpu = process.cpuUsage(cpuBefore);
    await profiler?.stop(`${parent}-${count}-${busy ? 'busy' : 'idle'}`);
    const elapsedMs = nsToMs(process.hrtime.bigint() - startedNs);
    return {
      cpuPercent: ((cpu.user + cpu.system) / 1000 / elapsedMs) * 100,
      rssPerChildKB: (rssReady - rssBefore) / count / KB,
      heapPerChildKB: (heapReady - heapBefore) / count / KB,
      youngGrowthKB: (youngReady - youngBefore) / KB,
      eventsPerSecond: ((counter.events - eventsBefore) / elapsedMs) * 1000,
    };
  } finally {
    const pids = children.map((child) => child.pid);
    await Promise.all(children.map((child) => child.stop()));
    const alive = pids.filter((pid) => isAlive(pid));
    if (alive.length > 0) throw new Error(`children still alive after teardown: ${alive.join(' ')}`);
  }
}

export async function run(options = {}) {
  const windowMs = sized(options, { full: 5000, quick: 2000, smoke: 300 });
  const cases = sized(options, {
    full: [
      { count: 1, busy: false },
      { count: 50, busy: false },
      { count: 200, busy: false },
      { count: 50, busy: true },
    ],
    quick: [
      { count: 1, busy: false },
      { count: 20, busy: false },
      { count: 10, busy: true },
    ],
    smoke: [{ count: 2, busy: true }],
  });
  const bench = 'scale';
  const baseline = 'execa + 30 ms poll';
  const rows = [];
  for (const { count, busy } of cases) {
    const arg = { count, busy, windowMs };
    const subvisor = await inFreshProcess(import.meta.url, 'scaleCase', { ...arg, parent: 'subvisor' });
    const fen = await inFreshProcess(import.meta.url, 'scaleCase', { ...arg, parent: 'fen-style' });
    const label = busy ? `${count} busy (${BUSY_RATE} ev/s each)` : `${count} idle`;
    const idleTarget = !busy && count >= 200;
    const memoryTarget = count >= 50;
    if (busy) {
      const expected = count * BUSY_RATE;
      if (subvisor.eventsPerSecond < expected * 0.5) {
        throw new Error(`busy children delivered ${subvisor.eventsPerSecond.toFixed(0)} of ${expected} events/s`);
      }
    }
    rows.push(
      row({ bench, metric: `parent CPU, ${label}`, value: subvisor.cpuPercent, unit: '% core', baseline, baselineValue: fen.cpuPercent, target: idleTarget ? '< 1% core' : null, met: idleTarget ? subvisor.cpuPercent < 1 : null }),
      row({ bench, metric: `parent RSS per run, ${label}`, value: subvisor.rssPerChildKB, unit: 'KB', baseline, baselineValue: fen.rssPerChildKB, target: memoryTarget ? '< 256 KB' : null, met: memoryTarget ? subvisor.rssPerChildKB < 256 : null }),
    );
    // RSS also counts allocator slack and heap headroom; the live heap after a full GC is what each run keeps.
    if (memoryTarget) {
      rows.push(row({ bench, metric: `parent heap per run after GC, ${label}`, value: subvisor.heapPerChildKB, unit: 'KB', baseline, baselineValue: fen.heapPerChildKB }));
    }
  }
  return rows;
}
