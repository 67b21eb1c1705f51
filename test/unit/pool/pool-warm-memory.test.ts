// Warm children over the in-memory driver: started without a task, handed one by spawn() with the task's own terms, replaced when they die (with a back-off), closed when idle, reaped at shutdown, held by the rate-limit gate.
import { describe, expect, it } from 'vitest';
import { createSupervisor } from '../../../src/index.js';
import type { RateLimitFields, RunEvent } from '../../../src/index.js';
import { manualClock, memoryStart, settle } from '../../helpers/in-memory-pool.js';

const LIMITED: RateLimitFields = { status: 'limited', nativeType: 'rate_limit_event', retryAfterMs: 3000 };

/** The warm children (started without a task) among what the start made. */
const warmOnes = (fake: ReturnType<typeof memoryStart>) => fake.children.filter((started) => started.options.task === undefined);

describe('warm children over the in-memory driver', () => {
  it('are started at once for the pool profile; spawn() hands its task to a waiting one, which is replaced; exactly one outcome per task', async () => {
    const fake = memoryStart();
    const sup = createSupervisor({ concurrency: 4, start: fake.start, handleParentSignals: false, warm: 2, defaults: { command: 'agent' } });
    await settle();
    expect(warmOnes(fake)).toHaveLength(2);
    expect(sup.counts).toMatchObject({ warm: 2, running: 0, queued: 0 });
    // Started as the profile asks, waiting: no task, kept alive, no deadline, not traced of their own.
    expect(warmOnes(fake)[0]!.options).toMatchObject({ command: 'agent', keepAlive: true, timeoutMs: Infinity, tracing: false });
    const first = warmOnes(fake)[0]!;
    const run = sup.spawn({ task: 'hello' });
    expect(run.id).toBe(first.run.id);
    const outcomes: string[] = [];
    run.on('outcome', (outcome) => outcomes.push(outcome.status));
    const events: RunEvent[] = [];
    const iterated = (async () => {
      for await (const event of run) events.push(event);
    })();
    expect(await run.outcome).toMatchObject({ status: 'done', finalText: 'done: hello', runId: first.run.id });
    await iterated;
    await settle();
    expect(first.prompts).toEqual(['hello']);
    // No child started for the task itself; a third warm child replaced the one it took.
    expect(fake.tasks()).toEqual([]);
    expect(warmOnes(fake)).toHaveLength(3);
    expect(sup.counts).toMatchObject({ warm: 2, done: 1, running: 0 });
    // The child's start events (before the hand-off) reach the task's iterator, then the task's.
    expect(events.map((event) => event.type)).toEqual(['ready', 'control-ack', 'turn-started', 'assistant-text-delta', 'turn-complete', 'control-ack', 'result', 'exit']);
    expect(outcomes).toEqual(['done']);
    expect(await run.taskAck).toMatchObject({ status: 'accepted' });
    await sup.shutdown();
    expect(fake.live()).toBe(0);
    expect(sup.counts.warm).toBe(0);
  });

  it('the per-task terms apply from the hand-off: the deadline and durationMs count from it, the task never knew its deadline and is cancelled at it', async () => {
    const fake = memoryStart({ script: (task) => (task === 'forever' ? { hold: true } : {}) });
    const sup = createSupervisor({ concurrency: 4, start: fake.start, handleParentSignals: false, warm: 2, defaults: { command: 'agent', killGraceMs: 50 } });
    await settle();
    // The warm children wait longer than the task's whole timeout before they are used.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const quick = sup.spawn({ task: 'quick', timeoutMs: 300 });
    expect(await quick.outcome).toMatchObject({ status: 'done', finalText: 'done: quick' });
    expect((await quick.outcome).durationMs).toBeLessThan(300);
    const forever = sup.spawn({ task: 'forever', timeoutMs: 300 });
    const child = fake.children.find((started) => started.run.id === forever.id)!;
    expect(await forever.outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline' });
    expect(child.child.controls.map(({ control }) => control.type)).toEqual(['prompt', 'cancel']);
    await sup.shutdown();
  });

  it('budget, outputSchema and keepAlive are the task\'s: data validated, the automatic close after the answer', async () => {
    const fake = memoryStart({ script: () => ({ answer: '```json\n{"n": 42}\n```' }) });
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false, warm: 1, defaults: { command: 'agent' } });
    await settle();
    const run = sup.spawn<{ n: number }>({ task: 'count', outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }, budget: { maxTurns: 3 } });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', data: { n: 42 }, budget: { limits: { maxTurns: 3 } } });
    const child = fake.children.find((started) => started.run.id === run.id)!;
    expect(child.prompts[0]).toMatch(/^count\n\n/);
    expect(child.child.controls.map(({ control }) => control.type)).toEqual(['prompt', 'close']);
    await sup.shutdown();
  });

  it('a run spawned while its warm child is still starting waits for its ready; a run with its own runId starts cold', async () => {
    const fake = memoryStart({ holdReady: true });
    const sup = createSupervisor({ concurrency: 3, start: fake.start, handleParentSignals: false, warm: 1, defaults: { command: 'agent' } });
    await settle();
    const child = warmOnes(fake)[0]!;
    const bound = sup.spawn({ task: 'waits' });
    expect(bound.id).toBe(child.run.id);
    const named = sup.spawn({ task: 'own id', runId: 'mine' });
    await settle();
    expect(bound.state).toBe('queued');
    expect(child.prompts).toEqual([]);
    child.ready();
    for (const started of fake.children) if (started !== child) started.ready();
    expect(await bound.outcome).toMatchObject({ status: 'done', finalText: 'done: waits' });
    expect(await named.outcome).toMatchObject({ status: 'done', runId: 'mine' });
    expect(fake.tasks()).toEqual(['own id']);
    const closing = sup.shutdown();
    await settle();
    for (const started of fake.children) if (started.run.state === 'starting') started.ready();
    await closing;
    expect(fake.live()).toBe(0);
  });

  it('a warm child that dies waiting is replaced at once, then after 1 s, 2 s, 4 s while replacements keep dying', async () => {
    const time = manualClock();
    const fake = memoryStart({ warmDies: (index) => (index === 0 ? 'before-ready' : index < 4 ? 'after-ready' : undefined) });
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false, warm: 1, clock: time.clock, defaults: { command: 'agent' } });
    await settle();
    // The first death is replaced at once; the second replacement waits 1 s.
    expect(warmOnes(fake)).toHaveLength(2);
    expect(time.pending).toBe(1);
    time.advance(999);
    await settle();
    expect(warmOnes(fake)).toHaveLength(2);
    time.advance(1);
    await settle();
    expect(warmOnes(fake)).toHaveLength(3);
    time.advance(1999);
    await settle();
    expect(warmOnes(fake)).toHaveLength(3);
    time.advance(1);
    await settle();
    expect(warmOnes(fake)).toHaveLength(4);
    time.advance(3999);
    await settle();
    expect(warmOnes(fake)).toHaveLength(4);
    time.advance(1);
    await settle();
    // The fifth lives: waiting, and the back-off is over.
    expect(warmOnes(fake)).toHaveLength(5);
    // Only its idle timer is left, which keeps nothing alive.
    expect([time.pending, time.held]).toEqual([1, 0]);
    expect(sup.counts.warm).toBe(1);
    const run = sup.spawn({ task: 'after the deaths' });
    expect(await run.outcome).toMatchObject({ status: 'done' });
    await sup.shutdown();
    expect(time.pending).toBe(0);
  });

  it('a bound child that dies before the hand-off: its run starts cold under that id and ends once', async () => {
    const fake = memoryStart({ holdReady: true });
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false, warm: 1, defaults: { command: 'agent' } });
    await settle();
    const child = warmOnes(fake)[0]!;
    const run = sup.spawn({ task: 'orphaned' });
    child.child.exit('failed', 'crashed while starting');
    child.child.gone();
    await settle();
    const cold = fake.children.find((started) => started.options.task === 'orphaned')!;
    expect(cold.run.id).toBe(child.run.id);
    cold.ready();
    expect(await run.outcome).toMatchObject({ status: 'done', finalText: 'done: orphaned', runId: child.run.id });
    const closing = sup.shutdown();
    await settle();
    for (const started of fake.children) if (started.run.state === 'starting') started.ready();
    await closing;
  });

  it('an idle child is closed after idleMs and not replaced until its profile is asked for again', async () => {
    const time = manualClock();
    const fake = memoryStart();
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false, warm: { size: 1, idleMs: 5000 }, clock: time.clock, defaults: { command: 'agent' } });
    await settle();
    const child = warmOnes(fake)[0]!;
    expect(time.pending).toBe(1);
    expect(time.held).toBe(0);
    time.advance(5000);
    expect(await child.run.outcome).toMatchObject({ status: 'done' });
    expect(child.child.controls.map(({ control }) => control.type)).toEqual(['close']);
    await settle();
    expect(warmOnes(fake)).toHaveLength(1);
    expect(sup.counts.warm).toBe(0);
    expect(time.pending).toBe(0);
    // Asked for again: that run starts cold, and its profile is warm again for the next.
    expect(await sup.spawn({ task: 'again' }).outcome).toMatchObject({ status: 'done' });
    await settle();
    expect(fake.tasks()).toEqual(['again']);
    expect(warmOnes(fake)).toHaveLength(2);
    await sup.shutdown();
    expect(time.pending).toBe(0);
  });

  it('holds a slot, behind every run waiting for one: a run of another profile gets the slot of a waiting child', async () => {
    const fake = memoryStart({ script: (task) => (task === 'busy' ? { hold: true } : {}) });
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false, warm: 1, defaults: { command: 'agent' } });
    await settle();
    const busy = sup.spawn({ task: 'busy', command: 'other' });
    await settle();
    // One slot runs `busy`, the other holds the warm child: the pool is full.
    expect(fake.live()).toBe(2);
    const other = sup.spawn({ task: 'other profile', command: 'other' });
    expect(await other.outcome).toMatchObject({ status: 'done' });
    expect(fake.peak()).toBeLessThanOrEqual(2);
    fake.children.find((started) => started.options.task === 'busy')!.release();
    await busy.outcome;
    await sup.shutdown();
  });

  it('the rate-limit gate holds warm hand-offs: a bound run waits at the shut gate, its child sent nothing', async () => {
    const time = manualClock();
    const fake = memoryStart({ script: (task) => (task === 'limit' ? { rateLimit: LIMITED } : {}) });
    const sup = createSupervisor({ concurrency: 4, start: fake.start, handleParentSignals: false, warm: 2, clock: time.clock, defaults: { command: 'agent' } });
    await settle();
    await sup.spawn({ task: 'limit' }).outcome;
    await settle();
    const held = sup.spawn({ task: 'held' });
    await settle();
    const child = fake.children.find((started) => started.run.id === held.id)!;
    expect(child.prompts).toEqual([]);
    expect(sup.rateLimited['default']).toMatchObject({ state: 'shut', waiting: 1 });
    time.advance(3000);
    expect(await held.outcome).toMatchObject({ status: 'done', finalText: 'done: held' });
    await sup.shutdown();
    expect(time.pending).toBe(0);
  });

  it('shutdown reaps every warm child like a run; a run bound to a starting child ends cancelled without starting', async () => {
    const fake = memoryStart({ holdReady: true });
    const sup = createSupervisor({ concurrency: 4, start: fake.start, handleParentSignals: false, warm: 3, defaults: { command: 'agent', killGraceMs: 50 } });
    await settle();
    warmOnes(fake)[0]!.ready();
    // One child waits and is handed this task; the next run is bound to a child still starting.
    const handed = sup.spawn({ task: 'handed', keepAlive: true });
    const bound = sup.spawn({ task: 'never handed' });
    await settle();
    expect(handed.state).toBe('ready');
    expect(bound.state).toBe('queued');
    const counts = await sup.shutdown({ mode: 'cancel' });
    expect(await bound.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(await handed.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(counts).toMatchObject({ cancelled: 2, warm: 0 });
    for (const started of fake.children) expect(started.run.ended).toBe(true);
    expect(fake.live()).toBe(0);
    expect(() => sup.spawn({ task: 'late' })).toThrow();
  });

  it('checks its options', () => {
    expect(() => createSupervisor({ concurrency: 1, warm: -1 })).toThrow(RangeError);
    expect(() => createSupervisor({ concurrency: 1, warm: { size: 1, idle: 5 } as never })).toThrow(/not a warm option/);
    expect(() => createSupervisor({ concurrency: 1, warm: null as never })).toThrow(TypeError);
  });
});
