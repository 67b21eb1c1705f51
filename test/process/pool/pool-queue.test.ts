// A pooled run's handle before and after it starts: state 'queued', controls while queued, cancelling without
// spawning, listeners and iterators attached early, priorities, counts, onIdle, events() and its backpressure.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlRefusedError, createSupervisor, SupervisorClosedError } from '../../../src/index.js';
import type { PoolEvent, PoolRun, RunEvent, RunHandleState } from '../../../src/index.js';
import { cleanupPoolKit, fake, freshDir, runOptions } from '../../helpers/pool-kit.js';
import { PRINT_DEADLINE, secondsLeft } from '../../helpers/spawn-harness.js';

afterEach(() => cleanupPoolKit());

/** A command that would leave a marker file if it ever ran (it does not speak the protocol: it must never start). */
function markerCommand(dir: string, name: string): { command: string; args: string[] } {
  const marker = join(dir, `${name}.ran`);
  return { command: process.execPath, args: ['-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, '')`] };
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** A pool of one slot held by an idle keepAlive run until `release()`. */
function blockedPool(stateDir: string) {
  const sup = createSupervisor({ concurrency: 1, defaults: { stateDir, killGraceMs: 200 } });
  const holder = sup.spawn({ ...runOptions(fake('echo')), keepAlive: true });
  return { sup, holder, release: () => holder.close() };
}

describe('a queued run', () => {
  it('is a Run handle at once: queued, no pid, listeners and iterators work before it starts', async () => {
    const stateDir = freshDir();
    const { sup, holder, release } = blockedPool(stateDir);
    const run = sup.spawn({ ...runOptions(fake('echo')), task: 'hello' });
    expect(run.state).toBe('queued');
    expect(run.pid).toBeUndefined();
    expect(run.ended).toBe(false);
    expect(run.attempt).toBe(1);
    expect(sup.queued).toBe(1);
    expect(sup.running).toBe(1);

    const states: Array<[RunHandleState, RunHandleState]> = [];
    run.on('state', (state, previous) => states.push([state, previous]));
    const heard: RunEvent[] = [];
    run.on('event', (event) => heard.push(event));
    const iterated = collect(run);

    // Controls that need a child are refused with a typed error; nothing is queued for later.
    const refusal = await run.steer('too early').catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ControlRefusedError);
    expect(refusal).toMatchObject({ code: 'queued', control: 'steer' });
    for (const send of [() => run.prompt('x'), () => run.followUp('x'), () => run.finalize(), () => run.close()]) {
      await expect(send()).rejects.toMatchObject({ code: 'queued' });
    }

    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(run.state).toBe('queued');
    await release();
    const outcome = await run.outcome;
    expect(outcome.status).toBe('done');
    expect(outcome.finalText).toBe('hello');
    expect((await run.taskAck)?.status).toBe('accepted');
    expect(states[0]).toEqual(['starting', 'queued']);
    expect(states.at(-1)?.[0]).toBe('done');
    const events = await iterated;
    expect(events).toEqual(heard);
    expect(events[0]?.type).not.toBe('exit');
    expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'done' });
    // Controls after the end are refused as for any run.
    await expect(run.steer('late')).rejects.toMatchObject({ code: 'run-ended' });
    await holder.outcome;
    await sup.shutdown();
  });

  it('text() attached while queued streams the answer once the run starts', async () => {
    const { sup, release } = blockedPool(freshDir());
    const run = sup.spawn({ ...runOptions(fake('echo')), task: 'streamed answer' });
    const text = collect(run.text());
    await release();
    expect((await text).join('')).toBe('streamed answer');
    await sup.shutdown();
  });

  it.each([
    ['cancel()', (run: PoolRun) => run.cancel()],
    ['terminate()', (run: PoolRun) => run.terminate()],
    ['kill()', (run: PoolRun) => run.kill()],
    ['asyncDispose', (run: PoolRun) => run[Symbol.asyncDispose]()],
  ])('%s before it starts ends it cancelled without ever spawning', async (_name, stop) => {
    const stateDir = freshDir();
    const { sup, release } = blockedPool(stateDir);
    const marker = join(stateDir, 'queued.ran');
    const run = sup.spawn({ ...markerCommand(stateDir, 'queued'), task: 'never' });
    const iterated = collect(run);
    const result = await stop(run);
    if (result !== undefined && 'seq' in result) expect(result).toMatchObject({ status: 'accepted', seq: 0 });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted', spawnFailed: false, exitCode: null, turns: 0 });
    expect(run.state).toBe('cancelled');
    expect(run.pid).toBeUndefined();
    expect(await run.taskAck).toBeUndefined();
    expect(await iterated).toEqual([{ type: 'exit', status: 'cancelled', synthetic: true, run: run.id, error: outcome.error }]);
    await expect(run.cancel()).resolves.toMatchObject({ status: 'unanswered', seq: 0, runEnded: true });
    await expect(run.close()).resolves.toMatchObject({ status: 'unanswered', seq: 0, runEnded: true });
    await expect(run.steer('late')).rejects.toMatchObject({ code: 'run-ended' });
    expect(sup.queued).toBe(0);
    await release();
    await sup.onIdle();
    expect(existsSync(marker)).toBe(false);
    expect(sup.counts).toMatchObject({ done: 1, cancelled: 1 });
    await sup.shutdown();
  });

  it('an abort signal cancels it while queued; a deadline that passes while queued times it out unstarted', async () => {
    const stateDir = freshDir();
    const { sup, release } = blockedPool(stateDir);
    const controller = new AbortController();
    const aborted = sup.spawn({ ...markerCommand(stateDir, 'aborted'), signal: controller.signal });
    const early = sup.spawn({ ...markerCommand(stateDir, 'early'), signal: AbortSignal.abort() });
    const late = sup.spawn({ ...markerCommand(stateDir, 'late'), deadline: Date.now() + 50 });
    // Many queued runs on one signal: one listener on it, no MaxListenersExceededWarning.
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const many = Array.from({ length: 20 }, (_, index) => sup.spawn({ ...markerCommand(stateDir, `many-${index}`), signal: controller.signal }));
    controller.abort();
    expect(await aborted.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    for (const run of many) expect((await run.outcome).status).toBe('cancelled');
    await new Promise((resolve) => setImmediate(resolve));
    process.off('warning', onWarning);
    expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
    expect(await early.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await release();
    expect(await late.outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline', spawnFailed: false });
    await sup.onIdle();
    for (const name of ['aborted', 'early', 'late']) expect(existsSync(join(stateDir, `${name}.ran`))).toBe(false);
    await sup.shutdown();
  });

  it("gets spawnRun's default deadline when neither the spawn nor the defaults give one; timeoutMs: Infinity opts out", async () => {
    const stateDir = freshDir();
    const sup = createSupervisor({ concurrency: 2, defaults: { stateDir, killGraceMs: 50 } });
    const byDefault = sup.spawn(PRINT_DEADLINE);
    const none = sup.spawn({ ...PRINT_DEADLINE, timeoutMs: Infinity });
    expect(secondsLeft((await byDefault.outcome).outputTail)).toBeGreaterThan(2700 - 60);
    expect((await none.outcome).outputTail).toBe('none');
    await sup.shutdown();
  });

  it('timeoutMs counts from the start, not from spawn()', async () => {
    const stateDir = freshDir();
    const { sup, release } = blockedPool(stateDir);
    const run = sup.spawn({ ...runOptions(fake('echo')), task: 'in time', timeoutMs: 2000 });
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await release();
    expect((await run.outcome).status).toBe('done');
    await sup.shutdown();
  });
});

describe('the queue', () => {
  it('starts higher priorities first, equal priorities in spawn order', async () => {
    const stateDir = freshDir();
    const { sup, release } = blockedPool(stateDir);
    const echo = runOptions(fake('echo'));
    const started: string[] = [];
    sup.on('start', (run) => started.push(run.id));
    const runs = [
      sup.spawn({ ...echo, task: 'a', runId: 'p0', priority: 0 }),
      sup.spawn({ ...echo, task: 'b', runId: 'p5a', priority: 5 }),
      sup.spawn({ ...echo, task: 'c', runId: 'p1', priority: 1 }),
      sup.spawn({ ...echo, task: 'd', runId: 'p5b', priority: 5 }),
      sup.spawn({ ...echo, task: 'e', runId: 'pneg', priority: -1 }),
    ];
    expect(runs.map((run) => run.priority)).toEqual([0, 5, 1, 5, -1]);
    await release();
    await sup.onIdle();
    expect(started).toEqual(['p5a', 'p5b', 'p1', 'p0', 'pneg']);
    await sup.shutdown();
  });

  it('counts queued, running and outcomes; onIdle resolves once everything is gone; spawn merges over defaults', async () => {
    const stateDir = freshDir();
    const echo = fake('echo');
    const sup = createSupervisor({
      concurrency: 2,
      defaults: { ...runOptions(echo), stateDir, task: 'default task', env: { ...echo.env, FROM_DEFAULTS: '1' } },
    });
    await sup.onIdle(); // idle at once
    const runs = [
      sup.spawn(),
      sup.spawn({ task: 'own task', env: { EXTRA: 'x' } }),
      sup.spawn({ command: join(stateDir, 'missing-agent') }),
      sup.spawn({ ...runOptions(fake('crash')) }),
    ];
    expect(sup.counts).toMatchObject({ queued: 2, running: 2 });
    const outcomes: string[] = [];
    sup.on('outcome', (outcome, run) => outcomes.push(`${run.id}:${outcome.status}`));
    let idle = 0;
    sup.on('idle', () => idle++);
    await sup.onIdle();
    expect(idle).toBe(1);
    expect(outcomes).toHaveLength(4);
    expect((await runs[0]!.outcome).finalText).toBe('default task');
    expect((await runs[1]!.outcome).finalText).toBe('own task');
    expect((await runs[2]!.outcome).errorCode).toBe('spawn-failed');
    expect(sup.counts).toEqual({ queued: 0, running: 0, done: 2, failed: 2, timedOut: 0, cancelled: 0, retried: 0, warm: 0 });
    await sup.shutdown();
  });

  it('rejects invalid options synchronously and queues nothing', () => {
    const sup = createSupervisor({ concurrency: 1 });
    expect(() => sup.spawn({})).toThrow(TypeError);
    expect(() => sup.spawn({ command: 'x', killGraceMs: -1 })).toThrow(RangeError);
    expect(() => sup.spawn({ command: 'x', priority: Number.NaN })).toThrow(RangeError);
    expect(() => sup.spawn({ command: 'x', retry: { attempts: 0 } })).toThrow(RangeError);
    // The protocol is checked at spawn() too, and passed through to spawnRun when the run starts.
    expect(() => sup.spawn({ command: 'x', protocol: 'no-such-protocol' as 'fen' })).toThrow(/options.protocol/);
    expect(sup.counts.queued).toBe(0);
    expect(() => createSupervisor({ concurrency: 0 })).toThrow(RangeError);
    expect(() => createSupervisor({ concurrency: 1.5 })).toThrow(RangeError);
    expect(() => (sup.concurrency = -1)).toThrow(RangeError);
  });
});

describe('sup.events()', () => {
  it('yields every run event as { run, event }, each run in order and ending with one exit; untilIdle ends it', async () => {
    const stateDir = freshDir();
    const sup = createSupervisor({ concurrency: 2, defaults: { ...runOptions(fake('echo')), stateDir } });
    const stream = sup.events({ untilIdle: true });
    const runs = ['one', 'two', 'three', 'four'].map((task) => sup.spawn({ task }));
    const cancelled = sup.spawn({ task: 'never' });
    await cancelled.cancel();
    const seen = await collect(stream);
    const byRun = new Map<PoolRun, RunEvent[]>();
    for (const { run, event } of seen) byRun.set(run, [...(byRun.get(run) ?? []), event]);
    expect(byRun.size).toBe(5);
    for (const run of runs) {
      const events = byRun.get(run)!;
      expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'done' });
      expect(events.map((event) => event.type)).toContain('result');
    }
    expect(byRun.get(cancelled)).toEqual([expect.objectContaining({ type: 'exit', status: 'cancelled', synthetic: true })]);
    // A run's own iterator created afterwards still gets what the run retained.
    const late = await collect(runs[0]!);
    expect(late).toEqual(byRun.get(runs[0]!));
    // An untilIdle stream opened on an idle pool ends at once; a plain one ends at shutdown.
    expect(await collect(sup.events({ untilIdle: true }))).toEqual([]);
    const plain = collect(sup.events());
    await sup.shutdown();
    expect(await plain).toEqual([]);
  });

  it('applies backpressure: an unread events() stream pauses the runs, and nothing is lost', async () => {
    const stateDir = freshDir();
    const sup = createSupervisor({ concurrency: 1, highWaterMark: 100, defaults: { stateDir, highWaterMark: 100 } });
    const stream = sup.events({ untilIdle: true });
    const run = sup.spawn({ ...runOptions(fake('flood')), task: 'flood' });
    let heard = 0;
    let consumed = 0;
    let maxLag = 0;
    run.on('event', () => {
      heard++;
      maxLag = Math.max(maxLag, heard - consumed);
    });
    let last: PoolEvent | undefined;
    for await (const item of stream) {
      consumed++;
      last = item;
      if (consumed % 500 === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      else if (consumed % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await run.outcome).status).toBe('done');
    expect(consumed).toBe(heard);
    expect(heard).toBeGreaterThan(10_000);
    expect(last?.event).toMatchObject({ type: 'exit', status: 'done' });
    // Two stages (the run's own queue, then the pool's), each bounded like a run's iterator: its mark plus
    // at most one 64 KiB read of ~250-byte lines. Without backpressure the lag would reach the whole flood.
    expect(maxLag).toBeLessThan(2 * (100 + 400));
    await sup.shutdown();
  });
});

describe('retries', () => {
  it('are off by default', async () => {
    const sup = createSupervisor({ concurrency: 1, defaults: { stateDir: freshDir() } });
    const run = sup.spawn({ ...runOptions(fake('crash')), task: 'x' });
    expect((await run.finalOutcome).status).toBe('failed');
    expect(run.nextAttempt).toBeUndefined();
    expect(sup.counts).toMatchObject({ failed: 1, retried: 0 });
    await sup.shutdown();
  });

  it('run a failed run again as a new, linked run, up to attempts, after the backoff', async () => {
    const stateDir = freshDir();
    const backoffs: number[] = [];
    const sup = createSupervisor({
      concurrency: 2,
      defaults: { stateDir },
      retry: { attempts: 3, backoff: (attempt) => (backoffs.push(attempt), 100) },
    });
    const retries: Array<[PoolRun, PoolRun]> = [];
    sup.on('retry', (next, previous) => retries.push([next, previous]));
    const first = sup.spawn({ ...runOptions(fake('crash')), task: 'x', runId: 'task-7' });
    const done = sup.spawn({ ...runOptions(fake('echo')), task: 'fine' });
    const final = await first.finalOutcome;
    await sup.onIdle();
    expect(final.status).toBe('failed');
    expect(backoffs).toEqual([2, 3]);
    const second = first.nextAttempt!;
    const third = second.nextAttempt!;
    expect([first.attempt, second.attempt, third.attempt]).toEqual([1, 2, 3]);
    expect(second.retryOf).toBe(first);
    expect(third.retryOf).toBe(second);
    expect(third.nextAttempt).toBeUndefined();
    expect([second.id, third.id]).toEqual(['task-7-attempt-2', 'task-7-attempt-3']);
    expect(final.runId).toBe(third.id);
    expect(await second.finalOutcome).toBe(final);
    expect((await first.outcome).runId).toBe('task-7');
    expect(retries.map(([next, previous]) => [next.id, previous.id])).toEqual([
      ['task-7-attempt-2', 'task-7'],
      ['task-7-attempt-3', 'task-7-attempt-2'],
    ]);
    expect(done.nextAttempt).toBeUndefined();
    expect(sup.counts).toMatchObject({ done: 1, failed: 1, retried: 2 });
    await sup.shutdown();
  });

  it('follow when(), and never retry a run the caller cancelled', async () => {
    const stateDir = freshDir();
    const sup = createSupervisor({ concurrency: 1, defaults: { stateDir }, retry: { attempts: 5, when: () => true } });
    const cancelled = sup.spawn({ ...runOptions(fake('stubborn')), task: 'x', killGraceMs: 100 });
    await cancelled.cancel();
    expect((await cancelled.finalOutcome).status).toBe('cancelled');
    expect(cancelled.nextAttempt).toBeUndefined();
    const notWanted = sup.spawn({ ...runOptions(fake('crash')), task: 'x', retry: { attempts: 3, when: (o) => o.errorCode === 'deadline' } });
    await notWanted.finalOutcome;
    expect(notWanted.nextAttempt).toBeUndefined();
    const off = sup.spawn({ ...runOptions(fake('crash')), task: 'x', retry: false });
    await off.finalOutcome;
    expect(off.nextAttempt).toBeUndefined();
    expect(sup.counts.retried).toBe(0);
    await sup.shutdown();
  });

  it('a retry waiting out its backoff is cancelled by shutdown', async () => {
    const sup = createSupervisor({ concurrency: 1, defaults: { stateDir: freshDir() }, retry: { attempts: 2, backoff: 60_000 } });
    const run = sup.spawn({ ...runOptions(fake('crash')), task: 'x' });
    await run.outcome;
    const retry = run.nextAttempt!;
    expect(retry.state).toBe('queued');
    expect(sup.queued).toBe(1);
    const counts = await sup.shutdown({ mode: 'cancel' });
    expect(await retry.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(counts).toMatchObject({ queued: 0, cancelled: 1, retried: 1 });
    expect(() => sup.spawn({ command: 'x' })).toThrow(SupervisorClosedError);
  });
});
