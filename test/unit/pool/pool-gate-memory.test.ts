// The pool's rate-limit gate over the in-memory driver, on a manual clock: shut by limited news, reopened one run then twice as many, keyed, visible, and leaving no timer behind.
import { describe, expect, it } from 'vitest';
import { createSupervisor } from '../../../src/index.js';
import type { RateLimitFields, RateLimitGateState } from '../../../src/index.js';
import { manualClock, memoryStart, settle } from '../../helpers/in-memory-pool.js';

const LIMITED: RateLimitFields = { status: 'limited', nativeType: 'system/api_retry', retryAfterMs: 5000, httpStatus: 429, agentRetries: true };

/** Tasks named `limit*` report LIMITED in their turn (with `report` instead when given), every other one answers. */
function limitingStart(report: RateLimitFields = LIMITED, hold?: (task: string) => boolean) {
  return memoryStart({
    script: (task) => ({ ...(task.startsWith('limit') ? { rateLimit: report } : {}), ...(hold?.(task) === true ? { hold: true } : {}) }),
  });
}

describe('the rate-limit gate over the in-memory driver', () => {
  it('limited news shuts it: nothing starts until the retry-after, then one, two, then all as slots allow; every run ends done', async () => {
    const time = manualClock();
    const fake = limitingStart();
    const changes: RateLimitGateState[] = [];
    const sup = createSupervisor({ concurrency: 4, start: fake.start, handleParentSignals: false, clock: time.clock, rateLimit: { rampMs: 1000 } });
    sup.on('rate-limit', (gate) => changes.push(gate));
    const first = sup.spawn({ task: 'limit' });
    expect(await first.outcome).toMatchObject({ status: 'done' });
    const waiting = Array.from({ length: 8 }, (_, index) => sup.spawn({ task: `t${index}` }));
    await settle();
    expect(fake.tasks()).toEqual(['limit']);
    expect(sup.rateLimited).toEqual({
      default: { key: 'default', state: 'shut', until: time.now() + 5000, waiting: 8, cause: { runId: first.id, report: LIMITED, at: time.now() } },
    });
    expect(sup.counts).toMatchObject({ queued: 8, running: 0 });
    // While runs wait, the gate's one timer keeps the process alive.
    expect([time.pending, time.held]).toEqual([1, 1]);

    time.advance(4999);
    await settle();
    expect(fake.tasks()).toHaveLength(1);
    time.advance(1);
    await settle();
    expect(fake.tasks()).toEqual(['limit', 't0']);
    expect(sup.rateLimited['default']).toMatchObject({ state: 'ramping', allowance: 0, waiting: 7 });
    time.advance(1000);
    await settle();
    expect(fake.tasks()).toEqual(['limit', 't0', 't1', 't2']);
    time.advance(1000);
    await Promise.all(waiting.map((run) => run.outcome));
    expect(fake.tasks()).toEqual(['limit', 't0', 't1', 't2', 't3', 't4', 't5', 't6', 't7']);
    for (const run of waiting) expect((await run.outcome).status).toBe('done');
    expect(sup.rateLimited).toEqual({});
    // Each change of its state (waiting runs coming and going aside): shut, a step of one, of two, open.
    const steps = changes.filter((change, index) => index === 0 || change.state !== changes[index - 1]!.state || change.allowance !== changes[index - 1]!.allowance);
    expect(steps.map(({ state, allowance }) => [state, allowance])).toEqual([['shut', undefined], ['ramping', 1], ['ramping', 2], ['open', undefined]]);
    expect(fake.peak()).toBeLessThanOrEqual(4);
    expect(time.pending).toBe(0);
    await sup.shutdown();
  });

  it('runs already going are not touched: a run holding its turn finishes after the gate shut', async () => {
    const time = manualClock();
    const fake = limitingStart(LIMITED, (task) => task === 'long');
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false, clock: time.clock });
    const long = sup.spawn({ task: 'long' });
    const limiting = sup.spawn({ task: 'limit' });
    await limiting.outcome;
    const later = sup.spawn({ task: 'later' });
    await settle();
    expect(long.state).toBe('running');
    expect(fake.tasks()).toEqual(['long', 'limit']);
    fake.children[0]!.release();
    expect(await long.outcome).toMatchObject({ status: 'done', finalText: 'done: long' });
    expect(later.state).toBe('queued');
    time.advance(5000);
    expect(await later.outcome).toMatchObject({ status: 'done' });
    await sup.shutdown();
    expect(time.pending).toBe(0);
  });

  it("is keyed: with rateLimitKey one account's shut gate holds only its own runs", async () => {
    const time = manualClock();
    const fake = limitingStart();
    const sup = createSupervisor({
      concurrency: 4,
      start: fake.start,
      handleParentSignals: false,
      clock: time.clock,
      rateLimitKey: (options) => options.env?.['ACCOUNT'] ?? 'none',
    });
    await sup.spawn({ task: 'limit-a', env: { ACCOUNT: 'a' } }).outcome;
    const a = sup.spawn({ task: 'a-waits', env: { ACCOUNT: 'a' } });
    const b = sup.spawn({ task: 'b-goes', env: { ACCOUNT: 'b' } });
    expect(await b.outcome).toMatchObject({ status: 'done' });
    expect(Object.keys(sup.rateLimited)).toEqual(['a']);
    expect(a.state).toBe('queued');
    time.advance(5000);
    expect(await a.outcome).toMatchObject({ status: 'done' });
    expect(() => createSupervisor({ concurrency: 1, rateLimitKey: 'a' as never })).toThrow(TypeError);
    const bad = createSupervisor({ concurrency: 1, start: fake.start, handleParentSignals: false, rateLimitKey: () => '' });
    expect(() => bad.spawn({ task: 'x' })).toThrow(/rateLimitKey must return a non-empty string/);
    await Promise.all([sup.shutdown(), bad.shutdown()]);
  });

  it('the hold: the later of retryAfterMs and resetsAt, holdMs without either, never past maxHoldMs; warning and allowed change nothing', async () => {
    const time = manualClock();
    const reports: RateLimitFields[] = [
      { status: 'warning', nativeType: 'rate_limit_event' },
      { status: 'allowed', nativeType: 'rate_limit_event' },
      { status: 'limited', nativeType: 'error' },
      { status: 'limited', nativeType: 'rate_limit_event', retryAfterMs: 1000, resetsAt: time.now() + 7000 },
      { status: 'limited', nativeType: 'rate_limit_event', resetsAt: time.now() + 10 * 3_600_000 },
      { status: 'limited', nativeType: 'rate_limit_event', retryAfterMs: Number.NaN, resetsAt: -5 },
    ];
    let next = 0;
    const fake = memoryStart({ script: () => ({ rateLimit: reports[next++] }) });
    const sup = createSupervisor({ concurrency: 1, start: fake.start, handleParentSignals: false, clock: time.clock, rateLimit: { holdMs: 3000, maxHoldMs: 60_000 } });
    await sup.spawn({ task: 'warning' }).outcome;
    await sup.spawn({ task: 'allowed' }).outcome;
    expect(sup.rateLimited).toEqual({});
    const until = () => sup.rateLimited['default']?.until;
    await sup.spawn({ task: 'limited, no time' }).outcome;
    expect(until()).toBe(time.now() + 3000);
    // The gate stays shut while each next run waits for it: start them by moving the clock, as the gate lets one through.
    const later = sup.spawn({ task: 'reset in 7 s' });
    time.advance(3000);
    await later.outcome;
    expect(until()).toBe(time.now() + 4000);
    const far = sup.spawn({ task: 'reset in 10 hours' });
    time.advance(4000);
    await far.outcome;
    expect(until()).toBe(time.now() + 60_000);
    const nonsense = sup.spawn({ task: 'nonsense times' });
    time.advance(60_000);
    await nonsense.outcome;
    expect(until()).toBe(time.now());
    await sup.shutdown();
    expect(time.pending).toBe(0);
  });

  it('shutdown while shut: the runs waiting at the gate end cancelled without starting, and no timer is left', async () => {
    const time = manualClock();
    const fake = limitingStart();
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false, clock: time.clock });
    await sup.spawn({ task: 'limit' }).outcome;
    const waiting = [sup.spawn({ task: 'w1' }), sup.spawn({ task: 'w2' })];
    await settle();
    expect(sup.rateLimited['default']?.waiting).toBe(2);
    const counts = await sup.shutdown();
    for (const run of waiting) expect(await run.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(counts).toMatchObject({ done: 1, cancelled: 2, queued: 0, running: 0 });
    expect(fake.tasks()).toEqual(['limit']);
    expect(time.pending).toBe(0);
  });

  it('a run cancelled while it waits at the gate leaves it; the timer stops keeping the process alive once none waits', async () => {
    const time = manualClock();
    const fake = limitingStart();
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false, clock: time.clock });
    await sup.spawn({ task: 'limit' }).outcome;
    const waiting = sup.spawn({ task: 'w' });
    await settle();
    expect(time.held).toBe(1);
    await waiting.cancel();
    expect(await waiting.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(sup.rateLimited['default']?.waiting).toBe(0);
    expect([time.pending, time.held]).toEqual([1, 0]);
    await sup.shutdown();
    expect(time.pending).toBe(0);
  });

  it('rateLimit: false has no gate; its options are checked', async () => {
    const fake = limitingStart();
    const sup = createSupervisor({ concurrency: 1, start: fake.start, handleParentSignals: false, rateLimit: false });
    await sup.spawn({ task: 'limit' }).outcome;
    expect(await sup.spawn({ task: 'goes' }).outcome).toMatchObject({ status: 'done' });
    expect(sup.rateLimited).toEqual({});
    await sup.shutdown();
    expect(() => createSupervisor({ concurrency: 1, rateLimit: { holdMs: -1 } })).toThrow(RangeError);
    expect(() => createSupervisor({ concurrency: 1, rateLimit: { holdMS: 1 } as never })).toThrow(/not an option of the gate/);
    expect(() => createSupervisor({ concurrency: 1, clock: {} as never })).toThrow(/options.clock/);
  });
});
