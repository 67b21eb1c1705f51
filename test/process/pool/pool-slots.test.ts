// The pool bounds live process trees, not promises: /proc is sampled while misbehaving children (grandchildren,
// crashes, spawn failures, SIGTERM ignored, lingering after exit) go through it, and no slot is ever leaked.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSupervisor } from '../../../src/index.js';
import type { Outcome, PoolRun } from '../../../src/index.js';
import { liveFakeProcesses } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { cleanupPoolKit, fake, freshDir, runOptions, sampleLiveTrees } from '../../helpers/pool-kit.js';

afterEach(() => cleanupPoolKit());

/** Grandchildren (one in the child's group, one in its own session) that ignore SIGTERM and outlive a child that ends done. */
const LEAVES_GRANDCHILDREN: Scenario = {
  name: 'leaves-grandchildren',
  turns: [
    {
      steps: [{ misbehave: [{ grandchildren: { count: 1, session: false } }, { grandchildren: { count: 1, session: true } }] }],
      answer: 'left two grandchildren behind',
    },
  ],
};

/** Ignores its deadline, cancel and SIGTERM: only the parent's deadline and SIGKILL end it. */
const STUBBORN: Scenario = { name: 'stubborn-all', ignore: ['cancel', 'sigterm', 'deadline'], turns: [{ steps: [{ pause: 30_000 }] }] };

describe('createSupervisor: live process trees never exceed concurrency', () => {
  it('holds with grandchildren, crashes, spawn failures, SIGTERM-ignoring and lingering children', async () => {
    const stateDir = freshDir();
    const concurrency = 3;
    const kinds = {
      stubborn: fake(STUBBORN),
      linger: fake('linger'),
      grandchildren: fake(LEAVES_GRANDCHILDREN),
      crash: fake('crash'),
      crashSilent: fake('crash-silent'),
      echo: fake('echo'),
      neverReady: fake('never-ready'),
    };
    const tokens = new Set(Object.values(kinds).map((kind) => kind.child.token));
    const sup = createSupervisor({ concurrency, defaults: { stateDir, killGraceMs: 200, task: 'go' } });
    const sampler = sampleLiveTrees(tokens);

    const plan: Array<[PoolRun, Outcome['status'], string?]> = [
      // The long ones first, so that all three slots are busy for a while.
      [sup.spawn({ ...runOptions(kinds.stubborn), timeoutMs: 1500 }), 'timed-out', 'deadline'],
      [sup.spawn(runOptions(kinds.linger)), 'done'],
      [sup.spawn(runOptions(kinds.grandchildren)), 'done'],
      [sup.spawn(runOptions(kinds.crash)), 'failed'],
      [sup.spawn({ command: join(stateDir, 'no-such-agent') }), 'failed', 'spawn-failed'],
      [sup.spawn(runOptions(kinds.crashSilent)), 'failed', 'no-exit-event'],
      [sup.spawn({ ...runOptions(kinds.neverReady), readyTimeoutMs: 800 }), 'failed', 'ready-timeout'],
      [sup.spawn(runOptions(kinds.grandchildren)), 'done'],
      [sup.spawn({ command: join(stateDir, 'no-such-agent-either') }), 'failed', 'spawn-failed'],
      [sup.spawn(runOptions(kinds.echo)), 'done'],
      [sup.spawn({ ...runOptions(kinds.stubborn), timeoutMs: 1000 }), 'timed-out', 'deadline'],
      [sup.spawn(runOptions(kinds.linger)), 'done'],
    ];
    expect(sup.running).toBe(concurrency);
    expect(sup.queued).toBe(plan.length - concurrency);

    await sup.onIdle();
    // onIdle means every tree is gone: not one process of any of these children may be alive now.
    const alive = [...tokens].flatMap((token) => liveFakeProcesses(token));
    const { max, seen, samples } = sampler.stop();
    expect(alive).toEqual([]);
    expect(samples).toBeGreaterThan(10);
    expect(max).toBeLessThanOrEqual(concurrency);
    // The sampler did see the pool full, and at least the six trees that live for seconds (a crash can come
    // and go between two samples on a loaded machine); never more than the ten that had processes.
    expect(max).toBe(concurrency);
    expect(seen.size).toBeGreaterThanOrEqual(6);
    expect(seen.size).toBeLessThanOrEqual(plan.length - 2);

    for (const [run, status, code] of plan) {
      const outcome = await run.outcome;
      expect(outcome.status, `${run.id}: ${outcome.error ?? ''}`).toBe(status);
      if (code !== undefined) expect(outcome.errorCode).toBe(code);
      if (code === 'deadline') expect(outcome.escalated).toBe(true);
    }
    expect(sup.counts).toEqual({ queued: 0, running: 0, done: 5, failed: 5, timedOut: 2, cancelled: 0, retried: 0, warm: 0 });
    await sup.shutdown();
  });

  it('releases a slot only once the outcome is settled: a child that lingers after exit keeps its slot', async () => {
    const stateDir = freshDir();
    const linger = fake('linger');
    const echo = fake('echo');
    const sup = createSupervisor({ concurrency: 1, defaults: { stateDir, killGraceMs: 300, task: 'go' } });
    const first = sup.spawn(runOptions(linger));
    const second = sup.spawn(runOptions(echo));
    let secondStartedAt: number | undefined;
    let firstSettledAt: number | undefined;
    second.on('state', (state, previous) => {
      if (previous === 'queued') secondStartedAt = performance.now();
    });
    void first.outcome.then(() => (firstSettledAt = performance.now()));
    // The first child writes exit done, then lingers ignoring SIGTERM until the ladder SIGKILLs it.
    await first.outcome;
    expect((await first.outcome).escalated).toBe(true);
    await sup.onIdle();
    expect(secondStartedAt).toBeDefined();
    expect(secondStartedAt!).toBeGreaterThanOrEqual(firstSettledAt!);
    expect((await second.outcome).status).toBe('done');
    await sup.shutdown();
  });
});
