// Runs test/helpers/hostile-fen-child.mjs under spawnRun with a plan; the stateDir and scratch dir are the test's to check.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnRun } from '../../src/index.js';
import type { Run, RunOptions } from '../../src/index.js';

const CHILD = fileURLToPath(new URL('./hostile-fen-child.mjs', import.meta.url));

/** One step of the hostile child's plan (see hostile-fen-child.mjs). */
export type HostileStep = Record<string, unknown>;

export interface HostileRun {
  run: Run;
  stateDir: string;
  /** Whatever is left in the stateDir (empty once the run ended and cleaned up). */
  leftovers(): string[];
  /** Removes the stateDir (call at the end of the test). */
  cleanup(): void;
}

/** Starts the hostile child with `steps`, a task prompt and short graces, in a fresh stateDir. */
export function hostileRun(steps: HostileStep[], options: Partial<RunOptions> = {}): HostileRun {
  const stateDir = mkdtempSync(join(tmpdir(), 'subvisor-hostile-'));
  const run = spawnRun({
    command: process.execPath,
    args: [CHILD, JSON.stringify({ steps })],
    task: 'go',
    killGraceMs: 300,
    readyTimeoutMs: 20_000,
    ...options,
    stateDir,
  });
  return {
    run,
    stateDir,
    leftovers: () => readdirSync(stateDir),
    cleanup: () => rmSync(stateDir, { recursive: true, force: true }),
  };
}

/** A scratch directory for files a test hands the child (answer files and their targets). */
export function scratchDir(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'subvisor-hostile-scratch-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
