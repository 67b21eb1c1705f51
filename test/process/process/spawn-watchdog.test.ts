// The watchdog, against real processes: a parent that dies by SIGKILL or out of memory leaves nothing behind; nothing else is touched.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import { watchdogPid } from '../../../src/process/watchdog.js';
import { alivePids, fakeChild, liveFakeProcesses, waitUntilGone } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { BOUND_MS, FAST_CHILD, freshStateDir, within } from '../../helpers/spawn-harness.js';
import { procInfo } from '../../helpers/spawn-procs.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const PARENT_SCRIPT = join(root, 'test', 'helpers', 'spawn-parent.mjs');
const REAPER = join(root, 'dist', 'process', 'reaper.js');
/** The parent script's killGraceMs. */
const PARENT_GRACE_MS = 300;
/** What the issue allows after the parent's death: killGraceMs + 3 s. */
const AFTER_DEATH_MS = PARENT_GRACE_MS + 3000;

interface ParentReport {
  pid: number;
  token: string;
  grandchildren: number[];
}

/** Everything a test started, killed and removed in afterEach whatever happened. */
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function killQuietly(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** A process of this user that belongs to no run: it must never be signalled. */
function bystander(): ChildProcess {
  const child = spawn('sleep', ['120'], { detached: true, stdio: 'ignore' });
  cleanups.push(() => killQuietly(child.pid));
  return child;
}

/** Pids whose parent is `parent` and whose command line names the watchdog. */
function watchdogsOf(parent: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (procInfo(Number(entry))?.ppid !== parent) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'latin1').includes('subvisor-watchdog')) found.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return found;
}

/** utime + stime of a process, in clock ticks. */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

async function until<T>(probe: () => T | undefined, boundMs: number, what: string): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${boundMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts the parent script and resolves once it reported its runs (children and grandchildren alive). */
async function startParent(stateDir: string, runs: number, mode: 'wait' | 'oom', nodeFlags: string[] = []) {
  const parent = spawn(process.execPath, [...nodeFlags, PARENT_SCRIPT, stateDir, String(runs), mode], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  parent.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  parent.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    parent.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  let report: ParentReport[] = [];
  cleanups.push(() => {
    killQuietly(parent.pid);
    for (const entry of report) {
      for (const pid of [entry.pid, ...entry.grandchildren, ...liveFakeProcesses(entry.token)]) killQuietly(pid);
    }
  });
  report = await until(
    () => {
      const line = stdout.split('\n').find((each) => each.startsWith('READY '));
      return line === undefined ? undefined : (JSON.parse(line.slice('READY '.length)) as ParentReport[]);
    },
    BOUND_MS,
    `the parent reporting its runs (stderr: ${stderr})`,
  );
  return { parent, exited, report, stderr: () => stderr };
}

/** Every process of the parent's runs, found every way the kit can: pids reported and the kit token. */
function treePids(report: ParentReport[]): number[] {
  return [...new Set(report.flatMap((entry) => [entry.pid, ...entry.grandchildren, ...liveFakeProcesses(entry.token)]))];
}

describe('a parent that dies without running any hook', () => {
  it('SIGKILL: one watchdog for all runs; it reaps every tree (stubborn, own sessions) and run directory within killGraceMs + 3 s', async () => {
    const stateDir = freshStateDir();
    cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
    const other = bystander();
    const { parent, exited, report } = await startParent(stateDir, 3, 'wait');
    expect(report).toHaveLength(3);
    const pids = treePids(report);
    expect(pids.length).toBeGreaterThanOrEqual(9);
    expect(readdirSync(stateDir)).toHaveLength(3);

    const watchdogs = watchdogsOf(parent.pid as number);
    expect(watchdogs, 'one watchdog per parent, not per run').toHaveLength(1);
    const watchdog = watchdogs[0]!;
    cleanups.push(() => killQuietly(watchdog));
    // Its own session: a terminal's signals to the parent's group do not reach it.
    expect(procInfo(watchdog)?.sid).toBe(watchdog);
    // Idle means blocked in read(2): not one clock tick of CPU while the runs go on.
    const ticks = cpuTicks(watchdog);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(cpuTicks(watchdog)).toBe(ticks);

    parent.kill('SIGKILL');
    const death = await within(exited, BOUND_MS, 'the parent dying');
    expect(death.signal).toBe('SIGKILL');
    const survivors = await waitUntilGone(() => [...pids, ...treePids(report), watchdog], AFTER_DEATH_MS - (Date.now() - death.at));
    expect(survivors, 'nothing of the trees, nor the watchdog, after killGraceMs + 3 s').toEqual([]);
    await until(() => (readdirSync(stateDir).length === 0 ? true : undefined), AFTER_DEATH_MS, 'the run directories removed');
    expect(alivePids([other.pid as number]), 'an unrelated process is never signalled').toEqual([other.pid]);
  });

  it('out of memory (V8 heap exhausted, no hook runs): the same', async () => {
    const stateDir = freshStateDir();
    cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
    const other = bystander();
    const { exited, report, stderr } = await startParent(stateDir, 2, 'oom', ['--max-old-space-size=64']);
    const pids = treePids(report);
    const death = await within(exited, BOUND_MS, 'the parent running out of memory');
    expect(stderr()).toMatch(/heap out of memory|Allocation failed/i);
    expect(death.code === 0, 'it did not exit normally').toBe(false);
    const survivors = await waitUntilGone(() => [...pids, ...treePids(report)], AFTER_DEATH_MS - (Date.now() - death.at));
    expect(survivors).toEqual([]);
    await until(() => (readdirSync(stateDir).length === 0 ? true : undefined), AFTER_DEATH_MS, 'the run directories removed');
    expect(alivePids([other.pid as number])).toEqual([other.pid]);
  });
});

describe('the watchdog in this process', () => {
  const LONG_TURN: Scenario = { turns: [{ steps: [{ pause: 60_000 }], answer: 'never' }] };

  function start(stateDir: string) {
    const child = fakeChild(LONG_TURN, { ...FAST_CHILD, transcript: false });
    cleanups.push(() => child.cleanup());
    const run = spawnRun({ ...child, task: 'go', stateDir, killGraceMs: 100 });
    cleanups.push(() => void run.kill('test cleanup'));
    return run;
  }

  it('starts with the first run, serves the runs alive together and the next one soon after, exits when none is left', async () => {
    const stateDir = freshStateDir();
    cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
    expect(watchdogPid()).toBeUndefined();
    const first = start(stateDir);
    const pid = watchdogPid();
    expect(pid).toBeTypeOf('number');
    const second = start(stateDir);
    expect(watchdogPid()).toBe(pid);
    await first.kill('done with it');
    expect(watchdogPid(), 'still watching the second run').toBe(pid);
    await second.kill('done with it');
    // A run started right after the last one ended reuses it (no fork of /bin/sh per run in a loop).
    const third = start(stateDir);
    expect(watchdogPid()).toBe(pid);
    await third.kill('done with it');
    // Then, with no run left, it is let go after a short linger and exits.
    await until(() => (watchdogPid() === undefined ? true : undefined), 10_000, 'the watchdog let go');
    expect(await waitUntilGone([pid as number], 5_000), 'the watchdog exited').toEqual([]);
  });

  it('killed from outside while a run is alive: a new one takes over', async () => {
    const stateDir = freshStateDir();
    cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
    const run = start(stateDir);
    const first = watchdogPid() as number;
    process.kill(first, 'SIGKILL');
    const second = await until(() => {
      const now = watchdogPid();
      return now !== undefined && now !== first ? now : undefined;
    }, 5_000, 'a new watchdog');
    expect(alivePids([second])).toEqual([second]);
    await run.kill('done');
    expect(await waitUntilGone([second], 5_000)).toEqual([]);
  });
});

describe('the reaper never touches what is not a registered tree', () => {
  /** Runs the reaper as the watchdog would, with these registrations. */
  function reap(entries: object[]): void {
    const input = entries.map((entry, index) => `${index + 1} ${JSON.stringify(entry)}`).join('\n');
    const result = spawnSync(process.execPath, [REAPER], { input, encoding: 'utf8', timeout: BOUND_MS });
    expect(result.status, result.stderr).toBe(0);
  }

  it('a registered pid now used by another process (start time differs): not signalled, nor its group', () => {
    const other = bystander();
    const info = procInfo(other.pid as number);
    expect(info?.pgid).toBe(other.pid);
    reap([{ root: other.pid, rootStart: '1', marker: 'SUBVISOR_TREE=not-any-tree', graceMs: 50 }]);
    expect(alivePids([other.pid as number])).toEqual([other.pid]);
  });

  it('a run directory that is a link, holds a file subvisor did not make, or lists a file outside it: nothing removed through or with it', () => {
    const stateDir = freshStateDir();
    cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
    const target = join(stateDir, 'target');
    mkdirSync(target);
    writeFileSync(join(target, 'events.jsonl'), 'precious');
    const link = join(stateDir, 'subvisor-run-link');
    symlinkSync(target, link);
    const mixed = join(stateDir, 'subvisor-run-mixed');
    mkdirSync(mixed);
    writeFileSync(join(mixed, 'control.jsonl'), '');
    writeFileSync(join(mixed, 'notes.txt'), 'mine');
    const plain = join(stateDir, 'subvisor-run-plain');
    mkdirSync(plain);
    writeFileSync(join(plain, 'control.jsonl'), '');
    writeFileSync(join(plain, 'events.jsonl'), '');
    const gone = { rootStart: '1', marker: undefined, graceMs: 50, root: 2 ** 22 + 7 };
    const own = (dir: string) => ({ dir, files: [join(dir, 'control.jsonl'), join(dir, 'events.jsonl'), join(target, 'events.jsonl')] });
    reap([
      { ...gone, ownFiles: own(link) },
      { ...gone, ownFiles: own(mixed) },
      { ...gone, ownFiles: own(plain) },
    ]);
    expect(readFileSync(join(target, 'events.jsonl'), 'utf8')).toBe('precious');
    expect(existsSync(link)).toBe(true);
    expect(readFileSync(join(mixed, 'notes.txt'), 'utf8')).toBe('mine');
    expect(existsSync(plain)).toBe(false);
  });
});
