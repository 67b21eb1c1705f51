// Benchmark 12, limits on process trees: the parent's CPU while its live runs are sampled for their limits (one
// process-table pass per tick for all of them), against the same runs without limits, in the same process and window.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnRun } from 'subvisor';
import { row, sized, sleep } from './lib/harness.mjs';

/** Generous limits that no idle tree reaches: only the sampling is measured. */
const NEVER_REACHED = { memoryBytes: 64 * 1024 ** 3, processes: 100_000, cpuSeconds: 100_000 };

/** Runs whose child is a plain `sleep`: a live tree to sample, nothing else going on. */
function idleRuns(count, stateDir, limits) {
  return Array.from({ length: count }, () =>
    spawnRun({ command: 'sleep', args: ['120'], stateDir, killGraceMs: 0, readyTimeoutMs: 120_000, retainEvents: false, ...(limits === undefined ? {} : { limits }) }),
  );
}

/** The parent's CPU (user + system, ms per second of wall time) over `windowMs` while `runs` live. */
async function parentCpu(runs, windowMs) {
  await sleep(500); // the spawns settle
  const before = process.cpuUsage();
  const started = process.hrtime.bigint();
  await sleep(windowMs);
  const used = process.cpuUsage(before);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await Promise.all(runs.map((run) => run.kill('bench')));
  return (used.user + used.system) / 1000 / seconds;
}

/**
 * Waits (up to a minute) until this process's watchdog has read every registration and exited: on a loaded
 * machine its shell falls behind the pipe, and the pending write would keep this process from exiting.
 */
async function watchdogGone() {
  for (let waited = 0; waited < 60_000; waited += 200) {
    const alive = readdirSync('/proc').some((entry) => {
      if (!/^\d+$/.test(entry)) return false;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes('subvisor-watchdog');
      } catch {
        return false;
      }
    });
    if (!alive) return;
    await sleep(200);
  }
}

function processesOnMachine() {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).length;
}

export async function run(options = {}) {
  const bench = 'limits';
  // 30: with 50 or 100 runs started and ended three times, at load 25-30, the watchdog's shell fell behind its pipe and a pending write kept the process alive.
  const count = sized(options, { full: 30, quick: 10, smoke: 2 });
  const windowMs = sized(options, { full: 10_000, quick: 4_000, smoke: 500 });
  const stateDir = mkdtempSync(join(tmpdir(), 'subvisor-bench-limits-'));
  try {
    const load = loadavg()[0];
    const plain = await parentCpu(idleRuns(count, stateDir, undefined), windowMs);
    const machine = processesOnMachine();
    const every1s = await parentCpu(idleRuns(count, stateDir, { ...NEVER_REACHED, sampleIntervalMs: 1000 }), windowMs);
    const every100ms = await parentCpu(idleRuns(count, stateDir, { ...NEVER_REACHED, sampleIntervalMs: 100 }), windowMs);
    await watchdogGone();
    const context = `${count} live runs, ${machine} processes on the machine, load ${load.toFixed(1)}`;
    return [
      row({ bench, metric: `parent CPU, runs without limits (${context})`, value: plain, unit: 'ms/s' }),
      row({ bench, metric: `parent CPU, the same runs sampled every 1 s (default)`, value: every1s, unit: 'ms/s', baseline: 'without limits', baselineValue: plain }),
      row({ bench, metric: `parent CPU, the same runs sampled every 100 ms`, value: every100ms, unit: 'ms/s', baseline: 'without limits', baselineValue: plain }),
      row({ bench, metric: 'sampling every 1 s: added parent CPU', value: (every1s - plain) / 10, unit: '% of a core', target: '< 1 %', met: (every1s - plain) / 10 < 1 }),
    ];
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}
