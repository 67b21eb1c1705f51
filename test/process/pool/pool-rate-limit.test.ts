// The rate-limit gate with real Fen fake children: a child whose provider answered 429 (Fen's `error`) shuts the pool's gate; no other child runs while it is shut, then one, then the rest; runs going are untouched; warm hand-offs wait too; nothing left.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSupervisor } from '../../../src/index.js';
import { liveFakeProcesses } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { watchGate } from '../../helpers/gate-watch.js';
import { cleanupPoolKit, fake, freshDir, runOptions, sampleLiveTrees } from '../../helpers/pool-kit.js';

afterEach(() => cleanupPoolKit());

const REFUSED = 'HTTP 429: {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}';
/** A Fen child whose model call the provider refused: the error Fen writes once its own retries are spent, and a turn ended on it. */
const PROVIDER_429: Scenario = { name: 'provider-429', turns: [{ steps: [{ error: REFUSED }], answer: `[error] ${REFUSED}`, stopReason: 'error' }] };

describe('the rate-limit gate (Fen fake children)', () => {
  it('shut by a 429: no child starts until it reopens, then one before the next step; every run ends done; nothing left', async () => {
    const stateDir = freshDir();
    const refused = fake(PROVIDER_429);
    const echo = fake('echo');
    const sup = createSupervisor({ concurrency: 3, defaults: { stateDir }, rateLimit: { holdMs: 1500, rampMs: 600 } });
    const watch = watchGate(sup);
    expect(await sup.spawn({ ...runOptions(refused), task: 'go' }).outcome).toMatchObject({ status: 'done', finalText: `[error] ${REFUSED}` });
    expect(sup.rateLimited['default']).toMatchObject({ state: 'shut', cause: { report: { status: 'limited', httpStatus: 429, nativeType: 'error', agentRetries: false } } });
    const sampler = sampleLiveTrees(new Set([echo.child.token]));
    const runs = Array.from({ length: 6 }, (_, index) => sup.spawn({ ...runOptions(echo), task: `task ${index}` }));
    await vi.waitFor(() => expect(sup.rateLimited['default']?.waiting).toBe(6), { timeout: 10_000 });
    const outcomes = await Promise.all(runs.map((run) => run.outcome));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(6).fill('done'));
    const { seen } = sampler.stop();
    expect(seen.size).toBe(6);
    // Nothing started before the gate's time, and only one run before its ramp's second step; its steps: shut, a
    // step of one, of two, open.
    watch.expectHeldWhileShut();
    expect(watch.steps()).toEqual([['shut', undefined], ['ramping', 1], ['ramping', 2], ['open', undefined]]);
    expect(sup.rateLimited).toEqual({});
    await sup.shutdown();
    expect(liveFakeProcesses(echo.child.token)).toEqual([]);
    expect(liveFakeProcesses(refused.child.token)).toEqual([]);
  });

  it("leaves a run going alone, and holds a warm child's hand-off until it reopens", async () => {
    const stateDir = freshDir();
    const refused = fake(PROVIDER_429);
    const echo = fake('echo');
    const long = fake({ name: 'long-turn', turns: [{ steps: [{ pause: 30_000, untilControls: 2 }], answer: 'finished' }] });
    const sup = createSupervisor({ concurrency: 4, warm: 1, defaults: { ...runOptions(echo), stateDir }, rateLimit: { holdMs: 1500, rampMs: 100 } });
    const going = sup.spawn({ ...runOptions(long), task: 'long', keepAlive: true });
    await vi.waitFor(() => expect(going.state).toBe('running'), { timeout: 10_000 });
    await sup.spawn({ ...runOptions(refused), task: 'go' }).outcome;
    expect(sup.rateLimited['default']?.state).toBe('shut');
    // A child of each profile asked for waits (the pool's, the long run's, the refused one's): the run bound to the
    // pool's waits at the gate, its child sent nothing.
    await vi.waitFor(() => expect(sup.counts.warm).toBe(3), { timeout: 10_000 });
    const held = sup.spawn({ task: 'held' });
    const controls: string[] = [];
    held.on('control', (sent) => controls.push(sent.type));
    await vi.waitFor(() => expect(sup.rateLimited['default']?.waiting).toBe(1), { timeout: 10_000 });
    expect(held.state).toBe('queued');
    // The run going is untouched by the gate: it takes its controls and ends by its own turn.
    await going.steer('still there?');
    expect(going.state).toBe('running');
    expect(await held.outcome).toMatchObject({ status: 'done', finalText: 'held' });
    expect(controls[0]).toBe('prompt');
    await going.close();
    expect(await going.outcome).toMatchObject({ status: 'done', finalText: 'finished' });
    await sup.shutdown();
    for (const kit of [refused, echo, long]) expect(liveFakeProcesses(kit.child.token)).toEqual([]);
  });
});
