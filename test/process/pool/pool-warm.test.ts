// Warm children with real Fen fake children: tasks handed to children already waiting (no process started for them), the task's deadline from the hand-off, a child dying waiting replaced with a back-off, idle close, shutdown; nothing left.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSupervisor, spawnRun } from '../../../src/index.js';
import type { PoolRun, Run, RunEvent, RunOptions } from '../../../src/index.js';
import { liveFakeProcesses } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { manualClock } from '../../helpers/in-memory-pool.js';
import { cleanupPoolKit, fake, freshDir, runOptions } from '../../helpers/pool-kit.js';

afterEach(() => cleanupPoolKit());

/** The pool's start (spawnRun), recording what each child was started for: a task, or none (a warm child). */
function recordingStart() {
  const started: Array<{ task: string | undefined; run: Run }> = [];
  const start = (options: RunOptions): Run => {
    const run = spawnRun(options);
    started.push({ task: options.task, run });
    return run;
  };
  return { start, started, warm: () => started.filter((entry) => entry.task === undefined) };
}

/** Every event of `run`, from the first (a warm child's start included). */
function eventsOf(run: PoolRun): Promise<RunEvent[]> {
  return (async () => {
    const events: RunEvent[] = [];
    for await (const event of run) events.push(event);
    return events;
  })();
}

const BOUND = { timeout: 20_000, interval: 20 };

describe('warm children (Fen fake children)', () => {
  it('take the tasks: no process is started for a task, each run is its child (id, events), one outcome each, nothing left after shutdown', async () => {
    const stateDir = freshDir();
    const echo = fake('echo');
    const recorder = recordingStart();
    const sup = createSupervisor({ concurrency: 3, warm: 2, start: recorder.start, defaults: { ...runOptions(echo), stateDir } });
    const waiting = () => recorder.warm().filter(({ run }) => run.state === 'ready' && run.listenerCount('event') === 0).length;
    const runs: PoolRun[] = [];
    const streams: Array<Promise<RunEvent[]>> = [];
    // Two at a time, as many as children wait: the ones handed a task are replaced before the next two.
    for (const pair of [['one', 'two'], ['three', 'four']]) {
      await vi.waitFor(() => expect(waiting()).toBe(2), BOUND);
      const spawned = pair.map((task) => sup.spawn({ task }));
      runs.push(...spawned);
      streams.push(...spawned.map(eventsOf));
      await Promise.all(spawned.map((run) => run.outcome));
    }
    const outcomes = await Promise.all(runs.map((run) => run.outcome));
    expect(outcomes.map((outcome) => [outcome.status, outcome.finalText])).toEqual(['one', 'two', 'three', 'four'].map((task) => ['done', task]));
    expect(recorder.started.map((entry) => entry.task)).toEqual(Array.from({ length: recorder.started.length }, () => undefined));
    const children = new Set(recorder.warm().map(({ run }) => run.id));
    for (const [index, run] of runs.entries()) {
      expect(children.has(run.id)).toBe(true);
      const events = await streams[index]!;
      // The child's start (before its task) and the task's events, all the child's own, one exit last.
      expect(events.slice(0, 2).map((event) => event.type)).toEqual(['agent-started', 'ready']);
      expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
      expect(events.at(-1)?.type).toBe('exit');
      for (const event of events) if (event.type !== 'exit' && event.type !== 'rejected') expect(event.run).toBe(run.id);
    }
    const counts = await sup.shutdown();
    expect(counts).toMatchObject({ done: 4, running: 0, queued: 0, warm: 0 });
    expect(liveFakeProcesses(echo.child.token)).toEqual([]);
  });

  it("count the task's deadline from the hand-off, and cancel a child that was never told it", async () => {
    const stateDir = freshDir();
    const slow: Scenario = { name: 'slow-on-cue', turns: [{ steps: [{ pause: 30_000, untilControl: 'close' }] }] };
    const child = fake(slow);
    const quick = fake('echo');
    const recorder = recordingStart();
    const sup = createSupervisor({ concurrency: 4, warm: 1, start: recorder.start, defaults: { stateDir, killGraceMs: 300 } });
    // Each profile warms once a run of it is asked for: warm both, then let the children wait past the tasks' timeouts.
    const warmers = [sup.spawn({ ...runOptions(quick), task: 'warm up' }), sup.spawn({ ...runOptions(child), task: 'warm up', timeoutMs: 200 })];
    await Promise.all(warmers.map((run) => run.outcome));
    await vi.waitFor(() => expect(recorder.warm().filter(({ run }) => run.state === 'ready')).toHaveLength(2), BOUND);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const answered = sup.spawn({ ...runOptions(quick), task: 'in time', timeoutMs: 1000 });
    const stuck = sup.spawn({ ...runOptions(child), task: 'too long', timeoutMs: 1000 });
    const controls: string[] = [];
    stuck.on('control', (sent) => controls.push(sent.type));
    expect(await answered.outcome).toMatchObject({ status: 'done', finalText: 'in time' });
    const outcome = await stuck.outcome;
    expect(outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(900);
    expect(outcome.durationMs).toBeLessThan(10_000);
    expect(controls).toEqual(['prompt', 'cancel']);
    await sup.shutdown();
    expect(liveFakeProcesses(child.child.token)).toEqual([]);
    expect(liveFakeProcesses(quick.child.token)).toEqual([]);
  });

  it('replace a child that dies waiting: at once, then only after the back-off; shutdown leaves no process and no timer', async () => {
    const stateDir = freshDir();
    const dying = fake({ name: 'dies-when-ready', misbehaviours: [{ at: 'after-ready', do: { crash: { code: 3 } } }] });
    const recorder = recordingStart();
    const time = manualClock();
    const sup = createSupervisor({ concurrency: 2, warm: 1, start: recorder.start, clock: time.clock, defaults: { ...runOptions(dying), stateDir } });
    // The first dies; its replacement starts at once and dies too; the next waits for the back-off (1 s on the pool's clock).
    await vi.waitFor(() => expect(recorder.warm().filter(({ run }) => run.ended)).toHaveLength(2), BOUND);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(recorder.warm()).toHaveLength(2);
    expect(sup.counts.warm).toBe(0);
    expect(time.pending).toBe(1);
    time.advance(1000);
    await vi.waitFor(() => expect(recorder.warm().filter(({ run }) => run.ended)).toHaveLength(3), BOUND);
    time.advance(1999);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(recorder.warm()).toHaveLength(3);
    await sup.shutdown();
    expect(time.pending).toBe(0);
    expect(liveFakeProcesses(dying.child.token)).toEqual([]);
  });

  it('close a child idle for idleMs (its process goes) and reap waiting and bound children at shutdown', async () => {
    const stateDir = freshDir();
    const echo = fake({ name: 'slow-start', readyDelayMs: 400 });
    const recorder = recordingStart();
    const time = manualClock();
    const sup = createSupervisor({ concurrency: 4, warm: { size: 2, idleMs: 5000 }, start: recorder.start, clock: time.clock, defaults: { ...runOptions(echo), stateDir } });
    await vi.waitFor(() => expect(time.pending).toBe(2), BOUND);
    expect(time.held).toBe(0);
    time.advance(5000);
    await vi.waitFor(() => expect(sup.counts.warm).toBe(0), BOUND);
    expect(liveFakeProcesses(echo.child.token)).toEqual([]);
    for (const { run } of recorder.warm()) expect((await run.outcome).status).toBe('done');
    // Asked for again: a cold run, and the profile's children start again; one run binds to a child still starting.
    const first = sup.spawn({ task: 'cold' });
    await vi.waitFor(() => expect(recorder.warm()).toHaveLength(4), BOUND);
    const bound = sup.spawn({ task: 'bound to a starting child' });
    expect(recorder.warm().some(({ run }) => run.id === bound.id)).toBe(true);
    const counts = await sup.shutdown({ mode: 'cancel' });
    expect(await first.outcome).toMatchObject({ status: expect.stringMatching(/done|cancelled/) });
    expect(await bound.outcome).toMatchObject({ status: 'cancelled' });
    expect(counts).toMatchObject({ running: 0, queued: 0, warm: 0 });
    expect(liveFakeProcesses(echo.child.token)).toEqual([]);
    expect(time.pending).toBe(0);
  });
});
