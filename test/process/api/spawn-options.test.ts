// spawnRun matrix, careless options: refused before anything starts, or ended as spawn-failed at once; a shared AbortSignal.
import { getEventListeners } from 'node:events';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import { resolveOptions } from '../../../src/api/spawn-run.js';
import type { Outcome, RunEvent, RunOptions } from '../../../src/index.js';
import { alivePids, waitUntilGone } from '../../../src/testing/index.js';
import { BOUND_MS, checkStream, expectEmptyStateDir, freshStateDir, PRINT_DEADLINE, secondsLeft, within } from '../../helpers/spawn-harness.js';

let stateDir: string;
beforeEach(() => {
  stateDir = freshStateDir();
});
afterEach(() => {
  rmSync(stateDir, { recursive: true, force: true });
});

/** Options of a run that would start a real, harmless process if nothing refused them. */
function base(extra: Partial<RunOptions> = {}): RunOptions {
  return { command: process.execPath, args: ['-e', '0'], task: 'go', stateDir, killGraceMs: 50, ...extra };
}

describe('NUL bytes: a TypeError naming the option, before anything starts', () => {
  it.each([
    ['command', { command: `${process.execPath}\0x` }, /options\.command .*NUL/],
    ['args', { args: ['-e', '0\0'] }, /options\.args\[1\] .*NUL/],
    ['runId', { runId: 'run\0id' }, /options\.runId .*NUL/],
    ['cwd', { cwd: '/tmp\0/x' }, /options\.cwd .*NUL/],
    ['env key', { env: { 'BAD\0KEY': 'v' } }, /options\.env key .*NUL/],
    ['env value', { env: { GOOD_KEY: 'v\0v' } }, /options\.env\.GOOD_KEY .*NUL/],
    ['stateDir', { stateDir: '/tmp/\0' }, /options\.stateDir .*NUL/],
  ] as const)('%s', (_name, extra, message) => {
    expect(() => spawnRun(base(extra as Partial<RunOptions>))).toThrow(TypeError);
    expect(() => spawnRun(base(extra as Partial<RunOptions>))).toThrow(message);
    expectEmptyStateDir(stateDir);
  });
});

describe('what the OS refuses at spawn time ends as failed / spawn-failed, at once, with nothing left', () => {
  async function refusedBySpawn(extra: Partial<RunOptions>): Promise<Outcome> {
    const started = Date.now();
    const run = spawnRun(base(extra));
    const events: RunEvent[] = [];
    run.on('event', (event) => events.push(event));
    // Pending forever before the fix: the bound only keeps a regression from hanging the suite.
    const outcome = await within(run.outcome, BOUND_MS, 'the outcome of a refused spawn');
    expect(Date.now() - started, 'settled without waiting on any timer').toBeLessThan(BOUND_MS);
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'spawn-failed', spawnFailed: true, exitCode: null });
    expect(run.pid).toBeUndefined();
    expect(run.ended).toBe(true);
    checkStream(events, outcome);
    expectEmptyStateDir(stateDir);
    return outcome;
  }

  it('one argument longer than 128 KiB (E2BIG)', async () => {
    const outcome = await refusedBySpawn({ args: ['-e', `// ${'x'.repeat(200 * 1024)}`] });
    expect(outcome.error).toMatch(/E2BIG/);
  });

  it('one environment string longer than 128 KiB (E2BIG)', async () => {
    const outcome = await refusedBySpawn({ env: { SUBVISOR_TEST_HUGE: 'y'.repeat(200 * 1024) } });
    expect(outcome.error).toMatch(/E2BIG/);
  });

  it('a command line in command (ENOENT) says that arguments go in args', async () => {
    const outcome = await refusedBySpawn({ command: 'node --version', args: [] });
    expect(outcome.error).toMatch(/ENOENT/);
    expect(outcome.error).toMatch(/arguments go in args/);
    expect(outcome.error).toContain('"node"');
  });

  it('a program file without the execute bit (EACCES, reported after spawn() returned)', async () => {
    const dir = mkdtempSync(join(os.tmpdir(), 'subvisor-noexec-'));
    try {
      const program = join(dir, 'agent');
      writeFileSync(program, '#!/bin/sh\nexit 0\n');
      chmodSync(program, 0o600);
      const outcome = await refusedBySpawn({ command: program, args: [] });
      expect(outcome.error).toMatch(/EACCES/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a plain missing program gets no such hint', async () => {
    const outcome = await refusedBySpawn({ command: '/nonexistent/subvisor-no-such-agent' });
    expect(outcome.error).toMatch(/ENOENT/);
    expect(outcome.error).not.toMatch(/arguments go in args/);
  });
});

describe('unknown and empty options', () => {
  it.each([
    ['timeout', 'timeoutMs'],
    ['killGrace', 'killGraceMs'],
    ['stateDirectory', 'stateDir'],
    ['argv', 'args'],
    ['abortSignal', 'signal'],
    ['keepalive', 'keepAlive'],
  ])('%s is a TypeError naming %s', (key, closest) => {
    const options = { ...base(), [key]: 1 } as RunOptions;
    expect(() => spawnRun(options)).toThrow(TypeError);
    expect(() => spawnRun(options)).toThrow(`options.${key} is not an option of spawnRun; did you mean ${closest}?`);
    expectEmptyStateDir(stateDir);
  });

  it('latencyBudgetMs must be a number of milliseconds from 0 to 1000', () => {
    for (const latencyBudgetMs of [-1, 1001, Number.NaN, '30']) {
      expect(() => spawnRun(base({ latencyBudgetMs } as Partial<RunOptions>))).toThrow(RangeError);
    }
    expectEmptyStateDir(stateDir);
  });

  it("latencyBudgetMs: unset is the adaptive default ('auto'), 0 and a budget are kept as given", () => {
    expect(resolveOptions(base()).latencyBudgetMs).toBe('auto');
    expect(resolveOptions(base({ latencyBudgetMs: 0 })).latencyBudgetMs).toBe(0);
    expect(resolveOptions(base({ latencyBudgetMs: 30 })).latencyBudgetMs).toBe(30);
  });

  it("task: '' is refused like an empty steer", () => {
    expect(() => spawnRun(base({ task: '' }))).toThrow(TypeError);
    expect(() => spawnRun(base({ task: '' }))).toThrow(/options\.task must not be empty/);
    expectEmptyStateDir(stateDir);
  });
});

describe('the default deadline', () => {
  it('is 2700 s (Fen\'s own parent\'s) when neither timeoutMs nor deadline is given; timeoutMs: Infinity opts out', () => {
    const soon = (deadlineMs: number | undefined, ms: number) => Math.abs((deadlineMs ?? 0) - (Date.now() + ms)) < 5000;
    expect(soon(resolveOptions(base()).deadlineMs, 2_700_000)).toBe(true);
    expect(soon(resolveOptions(base({ timeoutMs: 1000 })).deadlineMs, 1000)).toBe(true);
    expect(resolveOptions(base({ deadline: 1_700_000_000_000 })).deadlineMs).toBe(1_700_000_000_000);
    expect(resolveOptions(base({ timeoutMs: Infinity })).deadlineMs).toBeUndefined();
  });

  it('refuses a timeoutMs that is no duration and not Infinity, naming the way out', () => {
    for (const timeoutMs of [-1, -Infinity, Number.NaN, '60']) {
      expect(() => spawnRun(base({ timeoutMs } as Partial<RunOptions>))).toThrow(
        new RangeError('options.timeoutMs must be a number of milliseconds >= 0, or Infinity for a run without a deadline'),
      );
    }
    expectEmptyStateDir(stateDir);
  });

  it('reaches the child as FEN_WIRE_DEADLINE, and no deadline reaches it with timeoutMs: Infinity', async () => {
    const byDefault = await spawnRun({ ...PRINT_DEADLINE, stateDir, killGraceMs: 50 }).outcome;
    expect(secondsLeft(byDefault.outputTail)).toBeGreaterThan(2700 - 60);
    expect(secondsLeft(byDefault.outputTail)).toBeLessThanOrEqual(2701);
    const none = await spawnRun({ ...PRINT_DEADLINE, stateDir, killGraceMs: 50, timeoutMs: Infinity }).outcome;
    expect(none.outputTail).toBe('none');
  });
});

describe('many runs sharing one AbortSignal', () => {
  const RUNS = 50;
  /** A child that waits, never speaks the protocol, and dies by SIGTERM: cheap enough to start 60 of. */
  const idle = (): RunOptions => ({ command: 'sleep', args: ['60'], stateDir, killGraceMs: 50, readyTimeoutMs: BOUND_MS });

  async function withWarnings<T>(body: () => Promise<T>): Promise<{ result: T; warnings: Error[] }> {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const result = await body();
      // Warnings are emitted on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
      return { result, warnings };
    } finally {
      process.off('warning', onWarning);
    }
  }

  it(`${RUNS} runs: one listener on the signal, no MaxListenersExceededWarning, every run cancelled by one abort`, async () => {
    const controller = new AbortController();
    const { result: outcomes, warnings } = await withWarnings(async () => {
      const runs = Array.from({ length: RUNS }, () => spawnRun({ ...idle(), signal: controller.signal }));
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
      controller.abort();
      const pids = runs.map((run) => run.pid as number);
      const outcomes = await within(Promise.all(runs.map((run) => run.outcome)), BOUND_MS, 'every outcome');
      expect(await waitUntilGone(() => alivePids(pids), 5_000)).toEqual([]);
      return outcomes;
    });
    expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
    for (const outcome of outcomes) expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expectEmptyStateDir(stateDir);
  });

  it('runs that end without an abort leave no listener on the signal', async () => {
    const controller = new AbortController();
    const { warnings } = await withWarnings(async () => {
      const runs = Array.from({ length: RUNS }, () => spawnRun({ ...idle(), signal: controller.signal }));
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
      await Promise.all(runs.map((run) => run.kill('test')));
    });
    expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    // The signal still works for a run started afterwards.
    const late = spawnRun({ ...idle(), signal: controller.signal });
    controller.abort();
    expect(await within(late.outcome, BOUND_MS, 'the late run')).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expectEmptyStateDir(stateDir);
  });
});
