// Helpers of the pool tests: fake children with fast cadence, a private stateDir, and a /proc sampler of live trees.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeChild } from '../../src/testing/index.js';
import type { BuiltinScenarioName, FakeChild, Scenario } from '../../src/testing/index.js';
import type { RunOptions } from '../../src/index.js';

/** Every fake child and stateDir a test made, removed by {@link cleanupPoolKit}. */
const made: FakeChild[] = [];
const dirs: string[] = [];

/** Run options (command, args, env, stateDir) of a fast fake child playing `scenario`. */
export function fake(scenario: Scenario | BuiltinScenarioName): RunOptions & { child: FakeChild } {
  const child = fakeChild(scenario, { turnTickMs: 5, idleTickMs: 20 });
  made.push(child);
  return { command: child.command, args: child.args, env: child.env, child };
}

/** Strips the `child` field `fake()` adds, for spreading into spawn options. */
export function runOptions(options: RunOptions & { child: FakeChild }): RunOptions {
  const { child: _child, ...rest } = options;
  return rest;
}

export function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'subvisor-pool-test-'));
  dirs.push(dir);
  return dir;
}

/** Removes the fake children's files and the state dirs; throws when a state dir is not empty (a leak). */
export function cleanupPoolKit(): void {
  for (const child of made.splice(0)) child.cleanup();
  const leftovers: string[] = [];
  for (const dir of dirs.splice(0)) {
    leftovers.push(...readdirSync(dir).map((entry) => join(dir, entry)));
    rmSync(dir, { recursive: true, force: true });
  }
  if (leftovers.length > 0) throw new Error(`run files left behind: ${leftovers.join(', ')}`);
}

/** The tree marker subvisor puts into the environment of every process of a run's tree. */
const TREE_MARKER = 'SUBVISOR_TREE=';

/**
 * The distinct run trees alive right now among processes of the fake children with one of `tokens`
 * (the kit's per-child token, in a process's environment or its command line), found by the tree marker
 * in /proc/<pid>/environ. Zombies have an empty environ and do not count.
 */
export function liveTrees(tokens: ReadonlySet<string>): Set<string> {
  const trees = new Set<string>();
  for (const entry of readdirSync('/proc')) {
    if (entry.charCodeAt(0) > 57) continue; // not a pid
    let environ: string;
    let cmdline: string;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
      if (!environ.includes(TREE_MARKER)) continue;
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1');
    } catch {
      continue;
    }
    if (![...tokens].some((token) => environ.includes(token) || cmdline.includes(token))) continue;
    const tree = environ.split('\0').find((variable) => variable.startsWith(TREE_MARKER));
    if (tree !== undefined) trees.add(tree);
  }
  return trees;
}

/** Samples {@link liveTrees} every `everyMs` until `stop()`, which returns the largest count seen and every tree seen. */
export function sampleLiveTrees(tokens: ReadonlySet<string>, everyMs = 5): { stop(): { max: number; seen: Set<string>; samples: number } } {
  let max = 0;
  let samples = 0;
  const seen = new Set<string>();
  const sample = () => {
    const trees = liveTrees(tokens);
    samples++;
    max = Math.max(max, trees.size);
    for (const tree of trees) seen.add(tree);
  };
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { max, seen, samples };
    },
  };
}
