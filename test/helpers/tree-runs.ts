// Runs of the limits and sandbox tests: each with its own state directory (checked empty after the test), its fakes cleaned up, its tree watched until nothing of it is left.
import { readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { expect } from 'vitest';
import { spawnRun } from '../../src/index.js';
import type { Outcome, Run, RunOptions } from '../../src/index.js';
import { waitUntilGone } from '../../src/testing/index.js';
import { descendantsOf } from '../../src/testing/liveness.js';
import { freshStateDir } from './spawn-harness.js';

/** What the tests of one file made, undone by {@link TreeRuns.cleanup} (its afterEach). */
export interface TreeRuns {
  /** A run started with a state directory of its own (and `defaults` under `options`). */
  start(options: RunOptions): Run;
  /** A fake (or anything with `cleanup()`), cleaned up after the test. */
  fake<T extends { cleanup(): void }>(value: T): T;
  /** A path removed after the test (a directory with what is in it). */
  remove(path: string): string;
  /** Terminates what still runs, cleans the fakes, and checks that each run's state directory is empty. */
  cleanup(): Promise<void>;
}

export function treeRuns(defaults: Partial<RunOptions> = {}): TreeRuns {
  const runs: Run[] = [];
  const fakes: Array<{ cleanup(): void }> = [];
  const stateDirs: string[] = [];
  const paths: string[] = [];
  return {
    start(options) {
      const stateDir = freshStateDir();
      stateDirs.push(stateDir);
      const run = spawnRun({ stateDir, ...defaults, ...options });
      runs.push(run);
      return run;
    },
    fake(value) {
      fakes.push(value);
      return value;
    },
    remove(path) {
      paths.push(path);
      return path;
    },
    async cleanup() {
      await Promise.all(runs.splice(0).map((run) => run.terminate('test cleanup')));
      for (const fake of fakes.splice(0)) fake.cleanup();
      const leftovers = stateDirs.flatMap((dir) => readdirSync(dir));
      for (const path of [...stateDirs.splice(0), ...paths.splice(0)]) rmSync(path, { recursive: true, force: true });
      expect(leftovers, 'files left in the state directories (a sandbox private tmp among them)').toEqual([]);
    },
  };
}

/** The outcome, once no process of the tree (its root and descendants, polled while it lived) is left. */
export async function finished(run: Run): Promise<Outcome> {
  const pids = new Set<number>();
  const poll = setInterval(() => {
    if (run.pid === undefined) return;
    pids.add(run.pid);
    for (const pid of descendantsOf(run.pid)) pids.add(pid);
  }, 25);
  const outcome = await run.outcome;
  clearInterval(poll);
  expect(await waitUntilGone([...pids], 5000), 'processes of the tree left').toEqual([]);
  return outcome;
}

/** A loopback port nothing listens on (it was free a moment ago). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
