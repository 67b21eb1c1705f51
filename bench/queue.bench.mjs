// Benchmark 8, the queue: N short runs through 1 producer and 2 `supervise worker` processes on a loopback
// redis-server (subvisor/queue) against the in-process pool at the same total concurrency, in the same run;
// and the producer-side event latency (child's write to the producer's iterator) against the pool's.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { createSupervisor } from 'subvisor';
import { createQueueSupervisor } from 'subvisor/queue';
import { childOptions, floodScenario, IDLE_SCENARIO } from './lib/children.mjs';
import { nsToMs, percentile, ROOT, row, sized, sleep } from './lib/harness.mjs';

const WORKERS = 2;
const PER_WORKER = 4;
const CONCURRENCY = WORKERS * PER_WORKER;
const SHORT_TASK = 'short';

function haveRedis() {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A redis-server on a free loopback port with nothing persisted; `stop()` ends it. */
async function startRedis(dir) {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  while (!(await canConnect(port))) {
    if (proc.exitCode !== null) throw new Error('redis-server did not start');
    await sleep(20);
  }
  return { url: `redis://127.0.0.1:${port}`, stop: async () => { proc.kill('SIGTERM'); await exited; } };
}

/** `supervise worker` processes, each resolved once it says it is ready. */
async function startWorker(url, queue, profiles) {
  const proc = spawn(process.execPath, [join(ROOT, 'dist', 'cli', 'supervise.js'), 'worker', '--redis', url, '--queue', queue, '--profiles', profiles, '--concurrency', String(PER_WORKER)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  await new Promise((resolve, reject) => {
    proc.stderr.on('data', (chunk) => {
      stderr += chunk.toString();
      if (stderr.includes('ready on queue')) resolve();
    });
    proc.once('exit', () => reject(new Error(`a worker exited before it was ready: ${stderr}`)));
  });
  return { stop: async () => { proc.kill('SIGTERM'); await exited; } };
}

function checkDone(outcome) {
  if (outcome.status !== 'done') throw new Error(`a run ended ${outcome.status}: ${outcome.error ?? ''}`);
}

/** Wall time (ms) of `count` short runs through the queue; every outcome must be done. */
async function throughQueue(qs, count) {
  const started = process.hrtime.bigint();
  const runs = Array.from({ length: count }, () => qs.spawn({ profile: 'short', task: SHORT_TASK }));
  const outcomes = await Promise.all(runs.map((run) => run.outcome));
  const ms = nsToMs(process.hrtime.bigint() - started);
  outcomes.forEach(checkDone);
  return ms;
}

/** Wall time (ms) of the same runs through the in-process pool at the same concurrency. */
async function throughPool(options, count) {
  const started = process.hrtime.bigint();
  const sup = createSupervisor({ concurrency: CONCURRENCY, defaults: { ...options, task: SHORT_TASK, retainEvents: false } });
  const runs = Array.from({ length: count }, () => sup.spawn());
  await sup.onIdle();
  const ms = nsToMs(process.hrtime.bigint() - started);
  for (const run of runs) checkDone(await run.outcome);
  await sup.shutdown();
  return ms;
}

/** Latencies (ms) of every stamped event of `runs` runs, from the child's write to the consumer's iterator. */
async function latencies(runs, expected) {
  const values = [];
  await Promise.all(
    runs.map(async (run) => {
      for await (const event of run) {
        if (typeof event.extra?.monoNs === 'string') values.push(nsToMs(process.hrtime.bigint() - BigInt(event.extra?.monoNs)));
      }
      checkDone(await run.outcome);
    }),
  );
  if (values.length !== expected) throw new Error(`received ${values.length} of ${expected} stamped events`);
  return values;
}

export async function run(options = {}) {
  const bench = 'queue';
  if (!haveRedis()) {
    console.log('queue: redis-server is not installed; skipped (apt-get install redis-server)');
    return [];
  }
  const count = sized(options, { full: 500, quick: 100, smoke: 2 });
  const latencyRuns = sized(options, { full: 40, quick: 16, smoke: 1 });
  const eventsPerRun = sized(options, { full: 50, quick: 50, smoke: 5 });
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-queue-'));
  const short = childOptions(IDLE_SCENARIO);
  const stamped = childOptions(floodScenario({ count: eventsPerRun, bytes: 100, rate: 100 }));
  const profiles = join(dir, 'profiles.json');
  writeFileSync(profiles, JSON.stringify({ short, stamped }));
  const redis = await startRedis(dir);
  const workers = [];
  let qs;
  try {
    for (let index = 0; index < WORKERS; index++) workers.push(await startWorker(redis.url, 'bench', profiles));
    qs = createQueueSupervisor({ connection: redis.url, queue: 'bench' });
    // Warm-up (module loading, first spawns, Redis scripts), not counted.
    const warmUp = sized(options, { full: CONCURRENCY, quick: CONCURRENCY, smoke: 1 });
    await throughQueue(qs, warmUp);
    await throughPool(short, warmUp);
    // Halves in the order pool, queue, queue, pool: a machine whose load drifts favours neither.
    const half = count / 2;
    const firstPool = await throughPool(short, half);
    const queueMs = (await throughQueue(qs, half)) + (await throughQueue(qs, half));
    const poolMs = firstPool + (await throughPool(short, half));

    const expected = latencyRuns * eventsPerRun;
    const remote = await latencies(Array.from({ length: latencyRuns }, () => qs.spawn({ profile: 'stamped', task: 'flood' })), expected);
    const sup = createSupervisor({ concurrency: CONCURRENCY, defaults: { ...stamped, task: 'flood' } });
    const local = await latencies(Array.from({ length: latencyRuns }, () => sup.spawn()), expected);
    await sup.shutdown();
    const ratio = queueMs / poolMs;
    return [
      row({ bench, metric: `${count} short runs, 1 producer + ${WORKERS} workers x ${PER_WORKER} on loopback Redis, wall time`, value: queueMs, unit: 'ms', baseline: `in-process pool, concurrency ${CONCURRENCY}`, baselineValue: poolMs, target: 'ratio <= 2', met: ratio <= 2 }),
      row({ bench, metric: `event latency p50, child write to producer iterator (${latencyRuns} runs x ${eventsPerRun} events at 100/s)`, value: percentile(remote, 50), unit: 'ms', baseline: 'in-process pool', baselineValue: percentile(local, 50), target: '< 20 ms', met: percentile(remote, 50) < 20 }),
      row({ bench, metric: 'event latency p99, child write to producer iterator', value: percentile(remote, 99), unit: 'ms', baseline: 'in-process pool', baselineValue: percentile(local, 99), target: '< 100 ms', met: percentile(remote, 99) < 100 }),
    ];
  } finally {
    await qs?.close();
    await Promise.all(workers.map((worker) => worker.stop()));
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
