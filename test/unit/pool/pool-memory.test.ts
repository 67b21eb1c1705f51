// The pool's and asAgent's logic over the in-memory driver (their `start` seam): slots, queue, cancel, retries, events, invokes; no process.
import { describe, expect, it } from 'vitest';
import { collect } from '../../../src/agent/index.js';
import { asAgent } from '../../../src/agent/index.js';
import { createSupervisor } from '../../../src/index.js';
import type { Run, RunOptions } from '../../../src/index.js';
import { createInMemoryRun } from '../../../src/testing/index.js';
import type { InMemoryChild } from '../../../src/testing/index.js';
import { endRun } from '../../helpers/in-memory-play.js';

/** A child that answers its task in one turn with `answer(task)`, or ends `failed` when `fail(task)` says so. */
function play(child: InMemoryChild, answer: (task: string) => string, fail: (task: string) => boolean, gate: Promise<void>): void {
  // Set at once: the task prompt reaches the child on the microtask after the run starts.
  child.onControl = (received) => void gate.then(() => act(received));
  const act = ({ ref, control }: InMemoryChild['controls'][number]) => {
    if (control.type === 'prompt') {
      child.ack(ref, 'accepted');
      if (fail(control.text)) {
        child.exit('failed', `could not ${control.text}`);
        child.gone();
        return;
      }
      child.turnStarted();
      child.text(answer(control.text));
      child.turnComplete();
    } else if (control.type === 'close') {
      const last = child.controls.find((received) => received.control.type === 'prompt')?.control;
      endRun(child, ref, 'done', answer(last !== undefined && 'text' in last ? last.text : ''));
    } else if (control.type === 'cancel') {
      endRun(child, ref, 'cancelled');
    }
  };
  void gate.then(() => child.ready());
}

/** A `start` that plays each run's child in-process; it records the tasks started and how many run at once. */
function inMemoryStart(behaviour: { hold?: boolean; fail?: (task: string) => boolean } = {}) {
  const started: string[] = [];
  const held: Array<() => void> = [];
  let live = 0;
  let peak = 0;
  const start = (options: RunOptions): Run => {
    const { command: _command, args: _args, protocol: _protocol, ...rest } = options;
    const { run, child } = createInMemoryRun(rest);
    started.push(options.task ?? '');
    live++;
    peak = Math.max(peak, live);
    void run.outcome.then(() => live--);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    play(child, (task) => `done: ${task}`, behaviour.fail ?? (() => false), gate);
    if (behaviour.hold === true) held.push(open);
    else open();
    return run;
  };
  return { start, started, held, peak: () => peak };
}

describe('the pool over the in-memory driver', () => {
  it('never runs more than its concurrency; every run ends done with its answer, in spawn order', async () => {
    const fake = inMemoryStart();
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false });
    const runs = ['a', 'b', 'c', 'd', 'e'].map((task) => sup.spawn({ task }));
    const outcomes = await Promise.all(runs.map((run) => run.outcome));
    expect(outcomes.map((outcome) => [outcome.status, outcome.finalText])).toEqual(['a', 'b', 'c', 'd', 'e'].map((task) => ['done', `done: ${task}`]));
    expect(fake.peak()).toBe(2);
    expect(fake.started).toEqual(['a', 'b', 'c', 'd', 'e']);
    await sup.shutdown();
  });

  it("a run whose start throws (a journal it cannot open) ends spawn-failed and leaves the pool's counts as they were", async () => {
    const sup = createSupervisor({ concurrency: 2, handleParentSignals: false, start: () => {
      throw new Error('cannot write the journal');
    } });
    const outcomes = await Promise.all([sup.spawn({ task: 'a' }), sup.spawn({ task: 'b' })].map((run) => run.outcome));
    expect(outcomes.map((outcome) => [outcome.status, outcome.errorCode])).toEqual([['failed', 'spawn-failed'], ['failed', 'spawn-failed']]);
    expect(sup.counts).toMatchObject({ queued: 0, running: 0, failed: 2 });
    expect([sup.running, sup.queued]).toEqual([0, 0]);
    await sup.onIdle();
    expect(await sup.shutdown()).toMatchObject({ queued: 0, running: 0, failed: 2 });
  });

  it('a run cancelled while queued never starts: cancelled, aborted, and its start is never called', async () => {
    const fake = inMemoryStart({ hold: true });
    const sup = createSupervisor({ concurrency: 1, start: fake.start, handleParentSignals: false });
    const first = sup.spawn({ task: 'first' });
    const queued = sup.spawn({ task: 'queued' });
    expect(queued.state).toBe('queued');
    const ack = await queued.cancel();
    expect(ack.status).toBe('accepted');
    expect(await queued.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    fake.held.splice(0).forEach((begin) => begin());
    expect(await first.outcome).toMatchObject({ status: 'done' });
    expect(fake.started).toEqual(['first']);
    await sup.shutdown();
  });

  it('retries a failed run: the next attempt carries the task on, the final outcome is its', async () => {
    let failures = 1;
    const fake = inMemoryStart({ fail: () => failures-- > 0 });
    const sup = createSupervisor({ concurrency: 1, start: fake.start, retry: { attempts: 2 }, handleParentSignals: false });
    const run = sup.spawn({ task: 'flaky' });
    expect(await run.outcome).toMatchObject({ status: 'failed' });
    expect(await run.finalOutcome).toMatchObject({ status: 'done', finalText: 'done: flaky' });
    expect(run.nextAttempt?.attempt).toBe(2);
    expect(fake.started).toEqual(['flaky', 'flaky']);
    await sup.shutdown();
  });

  it('events(): every run\'s events tagged with their run, ending once the pool is idle', async () => {
    const fake = inMemoryStart();
    const sup = createSupervisor({ concurrency: 2, start: fake.start, handleParentSignals: false });
    const runs = ['x', 'y'].map((task) => sup.spawn({ task }));
    const exits: string[] = [];
    for await (const { run, event } of sup.events({ untilIdle: true })) if (event.type === 'exit') exits.push(run.id);
    expect(exits.sort()).toEqual(runs.map((run) => run.id).sort());
    await sup.shutdown();
  });
});

describe('asAgent over the in-memory driver', () => {
  it('an invoke streams the text and completes; a run that fails is one failed terminal', async () => {
    const fake = inMemoryStart({ fail: (task) => task === 'break' });
    const agent = asAgent({ command: 'unused', start: fake.start });
    const ok = await collect(agent.invoke({ session: 's1' }, { text: 'hello' }));
    expect(ok.text).toBe('done: hello');
    await expect(collect(agent.invoke({ session: 's2' }, { text: 'break' }))).rejects.toMatchObject({ details: 'could not break' });
    expect(fake.started).toEqual(['hello', 'break']);
    await agent.close();
  });
});
