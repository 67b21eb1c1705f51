// Benchmark 6, the watchdog: what it costs the parent to start, its memory and CPU while it watches,
// and how fast its reaper acts once the parent is gone.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnRun } from 'subvisor';
import { median, nsToMs, ROOT, row, sized, sleep } from './lib/harness.mjs';
import { isAlive } from './lib/hygiene.mjs';

const REAPER = join(ROOT, 'dist', 'process', 'reaper.js');
const CLOCK_TICKS_PER_SECOND = 100;

/** A run whose child is a plain `sleep`: no protocol, nothing but a process to watch. */
function idleRun(stateDir) {
  return spawnRun({ command: 'sleep', args: ['60'], stateDir, killGraceMs: 0, readyTimeoutMs: 60_000, retainEvents: false });
}

/** The watchdogs of this process: its children whose command line names them (one that let go may still be exiting). */
function findWatchdogs() {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes('subvisor-watchdog')) found.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return found;
}

/** The one watchdog of this process, once any earlier one has finished exiting. */
async function theWatchdog() {
  for (let attempt = 0; attempt < 200; attempt++) {
    const found = findWatchdogs();
    if (found.length === 1) return found[0];
    await sleep(25);
  }
  throw new Error('no single watchdog found');
}

function statusKb(pid, field) {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
  return match === null ? Number.NaN : Number(match[1]);
}

function pssKb(pid) {
  const match = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1'));
  return match === null ? Number.NaN : Number(match[1]);
}

function cpuTicks(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function startTime(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/** spawnRun's synchronous cost with no run alive (it starts the watchdog) and with one alive (it does not). */
async function startCosts(stateDir, rounds) {
  const first = [];
  const later = [];
  for (let round = 0; round <= rounds; round++) {
    // The previous round's watchdog lingers a moment after its last run: wait until it is gone.
    for (let waited = 0; findWatchdogs().length > 0 && waited < 20_000; waited += 50) await sleep(50);
    let started = process.hrtime.bigint();
    const a = idleRun(stateDir);
    const firstMs = nsToMs(process.hrtime.bigint() - started);
    started = process.hrtime.bigint();
    const b = idleRun(stateDir);
    const laterMs = nsToMs(process.hrtime.bigint() - started);
    await Promise.all([a.kill('bench'), b.kill('bench')]);
    if (round === 0) continue; // warm-up
    first.push(firstMs);
    later.push(laterMs);
  }
  return { first: median(first), later: median(later) };
}

/** Memory and CPU of the watchdog while a run lives and nothing happens. */
async function idleCost(stateDir, idleMs) {
  const run = idleRun(stateDir);
  const watchdog = await theWatchdog();
  const rss = statusKb(watchdog, 'VmRSS');
  const pss = pssKb(watchdog);
  const ticks = cpuTicks(watchdog);
  await sleep(idleMs);
  const cpuPercent = ((cpuTicks(watchdog) - ticks) / CLOCK_TICKS_PER_SECOND / (idleMs / 1000)) * 100;
  await run.kill('bench');
  return { rss, pss, cpuPercent };
}

/**
 * The reaper as the watchdog starts it at end of file, given one registered tree: a shell that ignores
 * SIGTERM. Measures the time to the first signal (Node start-up, scan, SIGTERM) and the reaper's memory
 * while it waits out the grace.
 */
async function reaperCost(graceMs) {
  const target = spawn('/bin/sh', ['-c', "trap 'echo TERM' TERM; while :; do sleep 0.05; done"], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  await sleep(100);
  const entry = { root: target.pid, rootStart: startTime(target.pid), marker: undefined, graceMs };
  const started = process.hrtime.bigint();
  const reaper = spawn(process.execPath, [REAPER], { stdio: ['pipe', 'ignore', 'inherit'] });
  const termed = new Promise((resolve) => target.stdout.once('data', () => resolve(nsToMs(process.hrtime.bigint() - started))));
  reaper.stdin.end(`1 ${JSON.stringify(entry)}\n`);
  const toTerm = await termed;
  const rss = statusKb(reaper.pid, 'VmRSS');
  await new Promise((resolve) => reaper.once('exit', resolve));
  if (isAlive(target.pid)) throw new Error('the reaper left its target alive');
  return { toTerm, rss };
}

export async function run(options = {}) {
  const bench = 'watchdog';
  const stateDir = mkdtempSync(join(tmpdir(), 'subvisor-bench-watchdog-'));
  try {
    const start = await startCosts(stateDir, sized(options, { full: 15, quick: 5, smoke: 1 }));
    const idle = await idleCost(stateDir, sized(options, { full: 10_000, quick: 3_000, smoke: 500 }));
    const reaps = [];
    for (let round = 0; round < sized(options, { full: 5, quick: 2, smoke: 1 }); round++) reaps.push(await reaperCost(500));
    return [
      row({ bench, metric: 'spawnRun() call that starts the watchdog, median', value: start.first, unit: 'ms', baseline: 'spawnRun() with the watchdog running', baselineValue: start.later }),
      row({ bench, metric: 'watchdog resident memory (RSS) while watching', value: idle.rss, unit: 'kB' }),
      row({ bench, metric: 'watchdog proportional memory (PSS) while watching', value: idle.pss, unit: 'kB' }),
      row({ bench, metric: 'watchdog CPU while idle', value: idle.cpuPercent, unit: '% of a core', target: '< 1 %', met: idle.cpuPercent < 1 }),
      row({ bench, metric: 'reaper: start to first SIGTERM, median', value: median(reaps.map((each) => each.toTerm)), unit: 'ms' }),
      row({ bench, metric: 'reaper resident memory (RSS) during the grace, median', value: median(reaps.map((each) => each.rss)), unit: 'kB' }),
    ];
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}
