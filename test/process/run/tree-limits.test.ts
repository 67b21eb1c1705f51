// limits on a run's process tree, on real processes of every protocol with one: memory, processes and CPU sampled from /proc, the child's own rlimits, and nothing left behind.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createSupervisor, spawnRun } from '../../../src/index.js';
import type { Outcome, Run, TreeLimits } from '../../../src/index.js';
import { fakeChild, fakeFa, fakeFuseraft } from '../../../src/testing/index.js';
import type { HogSpec } from '../../../src/testing/process/hog.js';
import { builtScript } from '../../../src/testing/kit.js';
import { BOUND_MS, FAST_CHILD } from '../../helpers/spawn-harness.js';
import { finished, freePort, treeRuns } from '../../helpers/tree-runs.js';

const { start, fake, cleanup } = treeRuns();
afterEach(cleanup);

/** Sampled often, so a test waits little; the figures are generous for a loaded 2-core machine. */
const FAST_SAMPLES = { sampleIntervalMs: 100 };
const MiB = 1024 * 1024;
/** A hog far over the memory limit below: a Node process alone is 30-50 MiB of RssAnon. */
const BIG_HOG: HogSpec = { allocateBytes: 400 * MiB };
const MEMORY_LIMIT = 250 * MiB;

function expectLimit(outcome: Outcome, code: Outcome['errorCode'], limit: string, max: number): void {
  expect(outcome, JSON.stringify(outcome.limits)).toMatchObject({ status: 'failed', errorCode: code, killed: true });
  expect(outcome.limits?.exceeded).toMatchObject({ limit, max });
  expect(outcome.limits!.exceeded!.seen).toBeGreaterThan(max);
  expect(outcome.error).toContain(`limits.${limit}`);
}

/** A run of `protocol` whose child starts `hog` and then waits a minute, under `limits`. */
async function hoggingRun(protocol: 'fen' | 'hep' | 'fuseraft' | 'fuseraft-bridge' | 'mew', hog: HogSpec, limits: TreeLimits): Promise<Run> {
  const common = { killGraceMs: 500, readyTimeoutMs: BOUND_MS, limits, task: 'go' };
  switch (protocol) {
    case 'fen': {
      const child = fake(fakeChild({ turns: [{ steps: [{ misbehave: { hog } }, { pause: 60_000 }] }] }, FAST_CHILD));
      return start({ ...common, command: child.command, args: child.args, env: child.env });
    }
    case 'hep': {
      const { command, args, env } = fake(fakeFa({ rounds: [{ steps: [{ hog }, { pause: 60_000 }] }] }));
      return start({ ...common, protocol: 'hep', command, args, env });
    }
    case 'fuseraft': {
      const { command, args, env } = fake(fakeFuseraft('repl', { turns: [{ steps: [{ hog }, { pause: 60_000 }] }] }));
      return start({ ...common, protocol: 'fuseraft', command, args, env });
    }
    case 'fuseraft-bridge': {
      const { command, args, env } = fake(fakeFuseraft('bridge', { bridge: [{ hog }, { pause: 60_000 }] }));
      return start({ ...common, protocol: 'fuseraft-bridge', command, args, env });
    }
    case 'mew': {
      const port = await freePort();
      const args = [builtScript('fake-mew.js'), 'daemon', '--port', `127.0.0.1:${port}`, '--scenario', 'chat', '--listen-delay', '60000', '--hog', JSON.stringify(hog)];
      return start({ ...common, protocol: 'mew', command: process.execPath, args, url: `ws://127.0.0.1:${port}`, readyTimeoutMs: 60_000 });
    }
  }
}

const PROTOCOLS = ['fen', 'hep', 'fuseraft', 'fuseraft-bridge', 'mew'] as const;

describe.each(PROTOCOLS)('limits on a %s tree', (protocol) => {
  it('memoryBytes: a grandchild that allocates past it gets the tree killed, memory-limit with the figure seen', async () => {
    const run = await hoggingRun(protocol, BIG_HOG, { memoryBytes: MEMORY_LIMIT, ...FAST_SAMPLES });
    const outcome = await finished(run);
    expectLimit(outcome, 'memory-limit', 'memoryBytes', MEMORY_LIMIT);
    expect(outcome.limits!.peak!.memoryBytes).toBeGreaterThan(MEMORY_LIMIT);
    expect(outcome.limits!.samples).toBeGreaterThan(0);
  });

  it('processes: a grandchild that starts processes past it gets the tree killed, process-limit', async () => {
    const run = await hoggingRun(protocol, { processes: 12 }, { processes: 8, ...FAST_SAMPLES });
    const outcome = await finished(run);
    expectLimit(outcome, 'process-limit', 'processes', 8);
  });
});

describe('cpuSeconds', () => {
  it("the tree's CPU time, summed over processes that each stay under their own RLIMIT_CPU, ends the run cpu-limit (sampled)", async () => {
    const hog: HogSpec = { spinMs: 1400 };
    const child = fake(fakeChild({ turns: [{ steps: [{ misbehave: [{ hog }, { hog }] }, { pause: 60_000 }] }] }, FAST_CHILD));
    const run = start({ command: child.command, args: child.args, env: child.env, task: 'go', killGraceMs: 500, limits: { cpuSeconds: 2, ...FAST_SAMPLES } });
    const outcome = await finished(run);
    expectLimit(outcome, 'cpu-limit', 'cpuSeconds', 2);
    expect(outcome.limits!.exceeded!.source).toBe('sampled');
  });

  it("the child's own RLIMIT_CPU (SIGXCPU) ends the run cpu-limit (rlimit) when the samples are too slow to see it first", async () => {
    const child = fake(fakeChild({ turns: [{ steps: [{ misbehave: { spin: 30_000 } }] }] }, FAST_CHILD));
    const run = start({ command: child.command, args: child.args, env: child.env, task: 'go', killGraceMs: 500, limits: { cpuSeconds: 1, sampleIntervalMs: 600_000 } });
    const outcome = await finished(run);
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'cpu-limit', signal: 'SIGXCPU' });
    expect(outcome.limits!.exceeded).toEqual({ limit: 'cpuSeconds', max: 1, seen: 1, source: 'rlimit' });
  });
});

describe('in a pool', () => {
  it("defaults.limits bound every run's tree, and a spawn's own limits override them limit by limit", async () => {
    const hogging = fake(fakeChild({ turns: [{ steps: [{ misbehave: { hog: { processes: 12 } } }, { pause: 60_000 }] }] }, FAST_CHILD));
    await using sup = createSupervisor({ concurrency: 2, defaults: { killGraceMs: 500, limits: { processes: 8, memoryBytes: 4096 * MiB, ...FAST_SAMPLES } } });
    const bounded = sup.spawn({ command: hogging.command, args: hogging.args, env: hogging.env, task: 'go' });
    const loosened = sup.spawn({ command: hogging.command, args: hogging.args, env: hogging.env, task: 'go', limits: { processes: 100 }, timeoutMs: 3000 });
    const [first, second] = await Promise.all([finished(bounded), finished(loosened)]);
    expectLimit(first, 'process-limit', 'processes', 8);
    expect(second.status, JSON.stringify(second.limits)).toBe('timed-out');
    expect(second.limits?.exceeded).toBeUndefined();
    expect(second.limits?.limits).toEqual({ processes: 100, memoryBytes: 4096 * MiB, sampleIntervalMs: 100 });
  });
});

describe('the rlimits are set before the child runs', () => {
  it('openFiles and cpuSeconds are in the child process own limits (through prlimit, which execs it in place)', async () => {
    const child = fake(fakeChild({ turns: [{ steps: [{ pause: 60_000 }] }] }, FAST_CHILD));
    const run = start({ command: child.command, args: child.args, env: child.env, task: 'go', killGraceMs: 300, limits: { openFiles: 200, cpuSeconds: 30 } });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'turn-started' && resolve()));
    const limits = readFileSync(`/proc/${run.pid}/limits`, 'utf8');
    expect(limits).toMatch(/Max open files\s+200\s+200/);
    expect(limits).toMatch(/Max cpu time\s+30\s+35\s+seconds/);
    expect(readFileSync(`/proc/${run.pid}/cmdline`, 'utf8')).toContain('fake-child.js');
    await run.terminate();
    const outcome = await finished(run);
    expect(outcome.errorCode).toBe('aborted');
    expect(outcome.limits?.limits).toEqual({ openFiles: 200, cpuSeconds: 30, sampleIntervalMs: 1000 });
  });

  it('a run under its limits ends done, with the peaks it was sampled at', async () => {
    const child = fake(fakeChild({ turns: [{ steps: [{ pause: 400 }], answer: 'fine' }] }, FAST_CHILD));
    const run = start({ command: child.command, args: child.args, env: child.env, task: 'go', limits: { memoryBytes: 1024 * MiB, processes: 50, cpuSeconds: 60, ...FAST_SAMPLES } });
    const outcome = await finished(run);
    expect(outcome).toMatchObject({ status: 'done', finalText: 'fine' });
    expect(outcome.limits!.exceeded).toBeUndefined();
    expect(outcome.limits!.peak!.processes).toBeGreaterThanOrEqual(1);
    expect(outcome.limits!.peak!.memoryBytes).toBeGreaterThan(MiB);
  });

  it('refuses limits that are not integers >= 1, unknown ones, and a durable run with limits', () => {
    const base = { command: 'fen' };
    expect(() => spawnRun({ ...base, limits: { memoryBytes: 0 } })).toThrow(/limits.memoryBytes must be an integer >= 1/);
    expect(() => spawnRun({ ...base, limits: { memory: 5 } as TreeLimits })).toThrow(/limits.memory is not a limit/);
    expect(() => spawnRun({ ...base, limits: { processes: 4, sampleIntervalMs: 1 } })).toThrow(/sampleIntervalMs/);
    expect(() => spawnRun({ ...base, runId: 'd1', durable: {}, limits: { processes: 4 } })).toThrow(/does not apply to a durable run/);
  });
});
