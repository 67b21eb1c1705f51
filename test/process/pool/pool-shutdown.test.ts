// Stopping a pool: shutdown() in each mode (queued runs never start, running trees are finalized, cancelled or
// killed, a later spawn fails), the grace that escalates to SIGKILL, `await using`, and parent signals.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createSupervisor, SupervisorClosedError } from '../../../src/index.js';
import type { PoolRun } from '../../../src/index.js';
import { liveFakeProcesses, waitUntilGone } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { cleanupPoolKit, fake, freshDir, runOptions } from '../../helpers/pool-kit.js';

afterEach(() => cleanupPoolKit());

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** Waits until `run` reaches `state` (a keepAlive echo child sits in ready). */
function reach(run: PoolRun, state: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (run.state === state) return resolve();
    run.on('state', (next) => next === state && resolve());
    void run.outcome.then((outcome) => reject(new Error(`ended ${outcome.status} before ${state}: ${outcome.error ?? ''}`)));
  });
}

/** Ignores finalize, cancel and SIGTERM mid-turn: only SIGKILL ends it. */
const IMMOVABLE: Scenario = { name: 'immovable', ignore: ['finalize', 'cancel', 'sigterm'], turns: [{ steps: [{ pause: 60_000 }] }] };

describe('sup.shutdown()', () => {
  it("finalize (default): running runs give their answer, queued ones never start, spawn() then throws", async () => {
    const stateDir = freshDir();
    const echo = fake('echo');
    const sup = createSupervisor({ concurrency: 2, defaults: { ...runOptions(echo), stateDir, keepAlive: true } });
    const running = [sup.spawn({ task: 'first' }), sup.spawn({ task: 'second' })];
    const queued = [sup.spawn({ task: 'third' }), sup.spawn({ task: 'fourth' })];
    await Promise.all(running.map((run) => reach(run, 'ready')));
    const counts = await sup.shutdown();
    expect(liveFakeProcesses(echo.child.token)).toEqual([]);
    for (const run of running) expect((await run.outcome).status).toBe('done');
    for (const run of queued) expect(await run.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted', spawnFailed: false });
    expect(counts).toEqual({ queued: 0, running: 0, done: 2, failed: 0, timedOut: 0, cancelled: 2, retried: 0, warm: 0 });
    expect(sup.closed).toBe(true);
    expect(() => sup.spawn({ task: 'late' })).toThrow(SupervisorClosedError);
  });

  it('cancel: terminates running runs through the kill ladder; kill: SIGKILLs at once', async () => {
    const stateDir = freshDir();
    for (const mode of ['cancel', 'kill'] as const) {
      const immovable = fake(IMMOVABLE);
      const sup = createSupervisor({ concurrency: 1, defaults: { ...runOptions(immovable), stateDir, killGraceMs: 200 } });
      const run = sup.spawn({ task: 'busy' });
      const queued = sup.spawn({ task: 'never' });
      await reach(run, 'running');
      await sup.shutdown({ mode });
      expect(liveFakeProcesses(immovable.child.token)).toEqual([]);
      const outcome = await run.outcome;
      expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted', killed: true });
      if (mode === 'cancel') expect(outcome.escalated).toBe(true);
      expect((await queued.outcome).status).toBe('cancelled');
      expect(queued.pid).toBeUndefined();
    }
  });

  it('graceMs: what is still running when it runs out is killed; a stronger second call escalates', async () => {
    const stateDir = freshDir();
    const immovable = fake(IMMOVABLE);
    const sup = createSupervisor({ concurrency: 2, defaults: { ...runOptions(immovable), stateDir, killGraceMs: 20_000, finalizeGraceMs: 60_000 } });
    const runs = [sup.spawn({ task: 'a' }), sup.spawn({ task: 'b' })];
    await Promise.all(runs.map((run) => reach(run, 'running')));
    const started = performance.now();
    await sup.shutdown({ mode: 'finalize', graceMs: 500 });
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(450);
    expect(took).toBeLessThan(15_000); // far below the 20 s kill grace and 60 s finalize grace of the runs
    for (const run of runs) expect((await run.outcome).status).toBe('cancelled');

    const again = createSupervisor({ concurrency: 1, defaults: { ...runOptions(fake(IMMOVABLE)), stateDir, killGraceMs: 20_000 } });
    const run = again.spawn({ task: 'c' });
    await reach(run, 'running');
    const gentle = again.shutdown({ mode: 'cancel' });
    const hard = again.shutdown({ mode: 'kill' });
    await Promise.all([gentle, hard]);
    expect((await run.outcome).killed).toBe(true);
  });

  it('await using shuts the pool down at the end of the scope', async () => {
    const stateDir = freshDir();
    const immovable = fake(IMMOVABLE);
    let run: PoolRun;
    {
      await using sup = createSupervisor({ concurrency: 1, defaults: { ...runOptions(immovable), stateDir, killGraceMs: 100 } });
      run = sup.spawn({ task: 'scoped' });
      await reach(run, 'running');
    }
    expect(run.ended).toBe(true);
    expect(liveFakeProcesses(immovable.child.token)).toEqual([]);
  });

  it('uses the run core\'s signal handlers: a pool adds none of its own', async () => {
    const stateDir = freshDir();
    const before = process.listenerCount('SIGINT');
    const sup = createSupervisor({ concurrency: 2, defaults: { ...runOptions(fake('echo')), stateDir, keepAlive: true } });
    const runs = [sup.spawn({ task: 'a' }), sup.spawn({ task: 'b' }), sup.spawn({ task: 'c' })];
    await Promise.all(runs.slice(0, 2).map((run) => reach(run, 'ready')));
    expect(process.listenerCount('SIGINT')).toBe(before + 1);
    await sup.shutdown({ mode: 'cancel' });
    expect(process.listenerCount('SIGINT')).toBe(before);
  });
});

describe('parent signals', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)('%s stops the whole pool in one go: nothing more starts, every tree is reaped', async (signal) => {
    const stateDir = freshDir();
    const parent = spawn(process.execPath, [join(root, 'test/helpers/pool-parent.mjs'), stateDir], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let token: string | undefined;
    let handlers: Record<string, number> = {};
    parent.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    parent.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const ready = /^READY (.*)$/m.exec(stdout);
      if (ready !== null && token === undefined) {
        ({ token, handlers } = JSON.parse(ready[1]!) as { token: string; handlers: Record<string, number> });
        parent.kill(signal);
      }
    });
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      const timer = setTimeout(() => parent.kill('SIGKILL'), 30_000);
      parent.on('exit', (code, how) => {
        clearTimeout(timer);
        resolve({ code, signal: how });
      });
    });
    try {
      expect(token, `stdout: ${stdout}\nstderr: ${stderr}`).toBeDefined();
      expect(exit.signal ?? exit.code).toSatisfy((how: unknown) => how === signal || how === (signal === 'SIGTERM' ? 143 : 130));
      // One handler per signal: the run core's registry, shared by the pool and its runs.
      expect(handlers).toEqual({ SIGINT: 1, SIGTERM: 1 });
      // Only the two runs holding slots ever started; the four queued ones never did.
      expect(stdout.match(/^START /gm)).toHaveLength(2);
      expect(await waitUntilGone(() => liveFakeProcesses(token), 5_000)).toEqual([]);
    } finally {
      if (token !== undefined) for (const pid of liveFakeProcesses(token)) process.kill(pid, 'SIGKILL');
    }
  });
});
