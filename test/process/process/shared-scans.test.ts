// Trees signalled or left by their root together share one /proc pass: the marker index, the shared signal and sweep, and runs ending together.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import { procPasses, scanMarkers } from '../../../src/process/proc-table.js';
import { ProcessTree } from '../../../src/process/process-tree.js';
import { refreshTogether, signalTogether, sweepTogether } from '../../../src/process/shared-scans.js';
import { SupervisedProcess } from '../../../src/process/supervised-process.js';
import { alivePids, isAlive, waitUntilGone } from '../../../src/testing/index.js';

const NAME = 'SUBVISOR_SCAN_TEST';
const started: ChildProcess[] = [];
/** Processes that are nobody's child here (sleeps in their own session): killed by pid. */
const orphans: number[] = [];

afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
  for (const pid of orphans.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** A `sleep` in its own process group whose environment is exactly `env` (in this order) plus PATH. */
async function sleeper(env: string[], seconds = 60): Promise<number> {
  const environment: Record<string, string> = {};
  for (const entry of env) {
    const at = entry.indexOf('=');
    environment[entry.slice(0, at)] = entry.slice(at + 1);
  }
  environment['PATH'] = process.env['PATH'] ?? '/usr/bin:/bin';
  const child = spawn('sleep', [String(seconds)], { env: environment, detached: true, stdio: 'ignore' });
  started.push(child);
  await once(child, 'spawn');
  return child.pid!;
}

/**
 * A shell in its own group that starts a `sleep` in a new session (it leaves the group) and exits when
 * told (`exitRoot`): the sleep is then an orphan that only the environment marker, or a walk made while
 * the shell lived, still ties to the tree.
 */
async function orphanMaker(marker?: string): Promise<{ root: number; orphan: number; exitRoot: () => Promise<void> }> {
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
  if (marker !== undefined) env[marker.slice(0, marker.indexOf('='))] = marker.slice(marker.indexOf('=') + 1);
  const root = spawn('sh', ['-c', 'setsid sleep 60 & echo $!; read _'], { env, detached: true, stdio: ['pipe', 'pipe', 'ignore'] });
  started.push(root);
  const [line] = (await once(root.stdout!, 'data')) as [Buffer];
  const orphan = Number(line.toString().trim());
  orphans.push(orphan);
  const exitRoot = async () => {
    root.stdin!.end('\n');
    await once(root, 'exit');
  };
  return { root: root.pid!, orphan, exitRoot };
}

describe('scanMarkers', () => {
  it('finds every marked process in one pass, whatever the entry position, and only exact entries', async () => {
    const first = await sleeper([`${NAME}=one`, 'OTHER=x']);
    const middle = await sleeper(['OTHER=x', `${NAME}=one`, 'MORE=y']);
    const second = await sleeper([`${NAME}=two`]);
    const longer = await sleeper([`${NAME}=one-and-more`]);
    const lookalike = await sleeper([`X${NAME}=one`]);
    const accented = await sleeper([`${NAME}=été`]);
    const before = procPasses().environ;
    const found = scanMarkers([`${NAME}=one`, `${NAME}=two`, `${NAME}=nobody`, `${NAME}=été`]);
    expect(procPasses().environ - before).toBe(1);
    expect([...(found.get(`${NAME}=one`) ?? [])].sort()).toEqual([first, middle].sort());
    expect(found.get(`${NAME}=two`)).toEqual([second]);
    expect(found.has(`${NAME}=nobody`)).toBe(false);
    expect(found.get(`${NAME}=été`), 'a value outside ASCII, as UTF-8 in the environment').toEqual([accented]);
    for (const pid of [longer, lookalike]) expect([...found.values()].flat()).not.toContain(pid);
  });

  it('asks nothing of /proc when no marker is wanted', () => {
    const before = procPasses();
    expect(scanMarkers([]).size).toBe(0);
    expect(procPasses()).toEqual(before);
  });
});

describe('signalTogether and sweepTogether', () => {
  it('trees signalled in one turn share one table and one environ pass, and each is signalled', async () => {
    const trees: ProcessTree[] = [];
    for (let index = 0; index < 12; index++) {
      const marker = `${NAME}=tree-${index}`;
      trees.push(new ProcessTree(await sleeper([marker]), marker));
    }
    const before = procPasses();
    const signalled = await Promise.all(trees.map((tree) => signalTogether(tree, 'SIGTERM')));
    const after = procPasses();
    expect(after.table - before.table).toBe(1);
    expect(after.environ - before.environ).toBe(1);
    signalled.forEach((pids, index) => expect(pids).toEqual([trees[index]!.root]));
    expect(await waitUntilGone(() => trees.map((tree) => tree.root), 5_000)).toEqual([]);
  });

  it('the shared sweep after a root exited finds its orphan by the marker, and the shared signal ends it', async () => {
    const makers = await Promise.all([orphanMaker(`${NAME}=orphans-a`), orphanMaker(`${NAME}=orphans-b`)]);
    const trees = makers.map(({ root }, index) => new ProcessTree(root, `${NAME}=orphans-${'ab'[index]}`));
    for (const { exitRoot } of makers) await exitRoot();
    for (const { orphan } of makers) expect(isAlive(orphan)).toBe(true);
    const before = procPasses();
    const tables = await Promise.all(trees.map((tree) => sweepTogether(tree)));
    expect(procPasses().table - before.table).toBe(1);
    expect(tables[0]).toBe(tables[1]);
    trees.forEach((tree, index) => expect(tree.alive(tables[index])).toEqual([makers[index]!.orphan]));
    const signalled = await Promise.all(trees.map((tree) => signalTogether(tree, 'SIGKILL')));
    signalled.forEach((pids, index) => expect(pids).toEqual([makers[index]!.orphan]));
    expect(await waitUntilGone(() => makers.map(({ orphan }) => orphan), 5_000)).toEqual([]);
  });
});

describe('refreshTogether', () => {
  it('walks every tree of the turn against one table, recording a descendant that left the group while its parent lives', async () => {
    // No marker: only the walk while the root lives ties the sleep in its own session to the tree.
    const makers = await Promise.all([orphanMaker(), orphanMaker()]);
    const trees = makers.map(({ root }) => new ProcessTree(root));
    const before = procPasses();
    await Promise.all(trees.map((tree) => refreshTogether(tree)));
    expect(procPasses().table - before.table).toBe(1);
    expect(procPasses().environ - before.environ).toBe(0);
    for (const { exitRoot } of makers) await exitRoot();
    trees.forEach((tree, index) => expect(tree.alive()).toEqual([makers[index]!.orphan]));
  });
});

describe('the kill ladder', () => {
  it('signals the tree when nobody listens for its steps', async () => {
    let trapped!: () => void;
    const ready = new Promise<void>((resolve) => (trapped = resolve));
    const child = new SupervisedProcess({
      command: 'sh',
      args: ['-c', 'trap "" TERM; echo trapped; sleep 60 & wait'],
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
      killGraceMs: 50,
      outputTailBytes: 0,
      // Only the output is listened to, not the kill steps (no onKill).
      onOutput: () => trapped(),
    });
    const root = child.pid!;
    await ready;
    child.startKillLadder(true);
    const report = await child.reaped;
    expect(report.killed).toBe(true);
    expect(report.escalated).toBe(true);
    expect(report.signal).toBe('SIGKILL');
    expect(alivePids([root])).toEqual([]);
  });
});

describe('runs ending together', () => {
  it('twenty runs terminated at once each end cancelled, leave nothing alive, and share their /proc passes', async () => {
    const SLEEPING = {
      command: 'sh',
      args: ['-c', 'printf \'{"v":1,"seq":1,"type":"ready","run":"%s"}\\n\' "$FEN_WIRE_RUN_ID" >> "$FEN_WIRE_EVENT_PATH" && exec sleep 60'],
      env: {},
      killGraceMs: 100,
    };
    const runs = Array.from({ length: 20 }, () => spawnRun(SLEEPING));
    for (const run of runs) {
      const first = await run[Symbol.asyncIterator]().next();
      expect(first.value?.type).toBe('ready');
    }
    const pids = runs.map((run) => run.pid!);
    const before = procPasses();
    const outcomes = await Promise.all(runs.map((run) => run.terminate()));
    const after = procPasses();
    expect(outcomes.map((outcome) => outcome.status)).toEqual(runs.map(() => 'cancelled'));
    expect(alivePids(pids)).toEqual([]);
    // A run terminated alone makes two of each (its SIGTERM's, its exit's): twenty one at a time, forty.
    expect(after.table - before.table).toBeLessThan(20);
    expect(after.environ - before.environ).toBeLessThan(20);
  });
});
