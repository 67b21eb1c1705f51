// Benchmark 4, spawn and teardown: spawnRun to `ready` against a bare execa spawn of the same child to
// its `ready` line, cancel() to outcome for a child that ignores both cancel and SIGTERM, and the parent's
// CPU per run when many runs are terminated at once against one terminated alone.
import { spawnRun } from 'subvisor';
import { childOptions, IDLE_SCENARIO, SLEEPING_CHILD, spawnBare, STUBBORN_SCENARIO } from './lib/children.mjs';
import { median, nsToMs, row, sized } from './lib/harness.mjs';
import { isAlive } from './lib/hygiene.mjs';
import { watchReader } from './lib/readers.mjs';

const KILL_GRACE_MS = 200;

function waitForState(run, wanted) {
  return new Promise((resolve, reject) => {
    if (run.state === wanted) return resolve();
    const onState = (state) => {
      if (state !== wanted) return;
      run.off('state', onState);
      resolve();
    };
    run.on('state', onState);
    run.outcome.then((outcome) => reject(new Error(`run ended ${outcome.status} before ${wanted}: ${outcome.error ?? ''}`)));
  });
}

/** A supervised child, resolved once `ready`, with the milliseconds that took from the spawnRun call. */
async function supervisedReady(scenario, extra = {}) {
  const started = process.hrtime.bigint();
  const run = spawnRun({ ...childOptions(scenario), keepAlive: true, retainEvents: false, ...extra });
  await waitForState(run, 'ready');
  return { run, ms: nsToMs(process.hrtime.bigint() - started) };
}

/** A bare child, resolved once its `ready` line is in the event file, with the milliseconds that took. */
async function bareReady(scenario, options) {
  const started = process.hrtime.bigint();
  const child = spawnBare(scenario, options);
  let reader;
  try {
    await new Promise((resolve, reject) => {
      reader = watchReader(child.eventPath, (line) => {
        if (line.includes('"type":"ready"')) resolve();
      });
      child.exited.then(({ code, signal }) => reject(new Error(`bare child exited before ready (${signal ?? code})`)));
    });
  } catch (error) {
    reader?.close();
    await child.stop();
    throw error;
  }
  const ms = nsToMs(process.hrtime.bigint() - started);
  reader.close();
  return { child, ms };
}

async function spawnTimes(rounds) {
  const supervised = [];
  const bare = [];
  // Round 0 warms up both paths (module loading, first spawn) and is not counted.
  for (let round = 0; round <= rounds; round++) {
    const s = await supervisedReady(IDLE_SCENARIO);
    await s.run.close();
    const outcome = await s.run.outcome;
    if (outcome.status !== 'done') throw new Error(`closed idle run ended ${outcome.status}`);
    const b = await bareReady(IDLE_SCENARIO);
    await b.child.stop();
    if (round > 0) {
      supervised.push(s.ms);
      bare.push(b.ms);
    }
  }
  return { supervised: median(supervised), bare: median(bare) };
}

async function cancelTimes(rounds) {
  const supervised = [];
  const bare = [];
  for (let round = 0; round < rounds; round++) {
    const { run } = await supervisedReady(STUBBORN_SCENARIO, { killGraceMs: KILL_GRACE_MS });
    const pid = run.pid;
    const started = process.hrtime.bigint();
    run.cancel();
    const outcome = await run.outcome;
    supervised.push(nsToMs(process.hrtime.bigint() - started));
    // The child ignores SIGTERM: anything but an escalation to SIGKILL means this measured something else.
    if (!outcome.escalated) throw new Error(`stubborn run ended ${outcome.status} without SIGKILL`);
    if (isAlive(pid)) throw new Error(`stubborn child ${pid} survived its outcome`);

    // The same budget with execa alone: SIGTERM, then SIGKILL after both graces.
    const { child } = await bareReady(STUBBORN_SCENARIO, { forceKillAfterDelay: 2 * KILL_GRACE_MS });
    const killed = process.hrtime.bigint();
    child.child.kill('SIGTERM');
    await child.exited;
    bare.push(nsToMs(process.hrtime.bigint() - killed));
    await child.stop();
  }
  return { supervised, bare };
}

/** Milliseconds of parent CPU (every thread) that `terminate()` of `runs` took, from the call to the last outcome. */
async function terminationCpuMs(runs) {
  const before = process.cpuUsage();
  const outcomes = await Promise.all(runs.map((run) => run.terminate()));
  const used = process.cpuUsage(before);
  for (const [index, outcome] of outcomes.entries()) {
    if (outcome.status !== 'cancelled') throw new Error(`terminated run ended ${outcome.status}: ${outcome.error ?? ''}`);
    if (isAlive(runs[index].pid)) throw new Error(`terminated child ${runs[index].pid} survived its outcome`);
  }
  return (used.user + used.system) / 1000;
}

/** `count` sleeping shells (SLEEPING_CHILD: they read no controls, so the ladder's SIGTERM ends them), each `ready`. */
async function sleepingRuns(count) {
  const runs = [];
  for (let start = 0; start < count; start += 25) {
    const batch = Array.from({ length: Math.min(25, count - start) }, () => spawnRun({ ...SLEEPING_CHILD, killGraceMs: KILL_GRACE_MS, keepAlive: true }));
    await Promise.all(batch.map((run) => waitForState(run, 'ready')));
    runs.push(...batch);
  }
  return runs;
}

/**
 * Parent CPU per run when `count` idle runs are terminated at once, against one idle run terminated
 * alone (median of `rounds`): runs ending together share their /proc passes, one alone pays for its own.
 */
async function teardownCpu(count, rounds) {
  const alone = [];
  for (let round = 0; round <= rounds; round++) {
    const cpu = await terminationCpuMs(await sleepingRuns(1));
    if (round > 0) alone.push(cpu); // round 0 warms the path up
  }
  const together = (await terminationCpuMs(await sleepingRuns(count))) / count;
  return { together, alone: median(alone) };
}

export async function run(options = {}) {
  const bench = 'spawn';
  const spawn = await spawnTimes(sized(options, { full: 15, quick: 5, smoke: 1 }));
  const cancel = await cancelTimes(sized(options, { full: 5, quick: 2, smoke: 1 }));
  const teardownRuns = sized(options, { full: 200, quick: 50, smoke: 10 });
  const teardown = await teardownCpu(teardownRuns, sized(options, { full: 5, quick: 3, smoke: 1 }));
  const budget = 2 * KILL_GRACE_MS + 50;
  const worst = Math.max(...cancel.supervised);
  return [
    row({ bench, metric: 'spawnRun to ready, median', value: spawn.supervised, unit: 'ms', baseline: 'execa to ready line', baselineValue: spawn.bare, target: 'ratio <= 1.2', met: spawn.supervised / spawn.bare <= 1.2 }),
    row({ bench, metric: `cancel() to outcome, SIGTERM ignored, grace ${KILL_GRACE_MS} ms, median`, value: median(cancel.supervised), unit: 'ms', baseline: `execa kill, force after ${2 * KILL_GRACE_MS} ms`, baselineValue: median(cancel.bare) }),
    row({ bench, metric: `cancel() to outcome, worst of ${cancel.supervised.length}`, value: worst, unit: 'ms', baseline: `execa kill, force after ${2 * KILL_GRACE_MS} ms`, baselineValue: Math.max(...cancel.bare), target: `<= ${budget} ms, no survivors`, met: worst <= budget }),
    row({ bench, metric: `parent CPU per run, ${teardownRuns} idle runs terminated at once`, value: teardown.together, unit: 'ms', baseline: 'one idle run terminated alone, median', baselineValue: teardown.alone }),
  ];
}
