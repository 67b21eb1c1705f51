// Events kept for an iterator that does not exist yet are bounded, and what they are read from is released when nobody can take them.
import { execFileSync } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createSupervisor, spawnRun } from '../../../src/index.js';
import type { PoolEvent, RunEvent, Supervisor } from '../../../src/index.js';
import { EventFanout } from '../../../src/run/event-fanout.js';
import { fakeFa } from '../../../src/testing/index.js';
import { hostileRun, scratchDir } from '../../helpers/hostile-run.js';
import { within } from '../../helpers/spawn-harness.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const delta = (n: number): RunEvent => ({ type: 'assistant-text-delta', seq: n, run: 'r', delta: `d${n}` }) as RunEvent;

/** Descriptors of this process open on a file under `dir`. */
function openUnder(dir: string): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)) count++;
    } catch {
      // closed meanwhile
    }
  }
  return count;
}

const HOSTILE_CHILD = fileURLToPath(new URL('../../helpers/hostile-fen-child.mjs', import.meta.url));

const floodThenExit = (count: number) => [{ ready: true }, { ack: 'task' }, { flood: { count, bytes: 1024 } }, { result: 'flooded' }, { exit: 'done' }];

describe('EventFanout: the backlog kept for the first iterator', () => {
  it('counts against both marks for a reader that reads ahead, not for one that cannot', async () => {
    let drained = 0;
    const fanout = new EventFanout(true, { events: 3, bytes: 1e9 }, () => drained++);
    for (let n = 1; n <= 4; n++) fanout.publish(delta(n), 10);
    expect(fanout.overHighWater()).toBe(true);
    expect(fanout.overHighWater(false)).toBe(false);
    const bytes = new EventFanout(true, { events: 1e6, bytes: 25 }, () => undefined);
    bytes.publish(delta(1), 20);
    expect(bytes.overHighWater()).toBe(false);
    bytes.publish(delta(2), 20);
    expect(bytes.overHighWater()).toBe(true);
    // The first iterator takes it all; reading resumes once it is down to half.
    expect(fanout.overHighWater()).toBe(true);
    const queue = fanout.iterator();
    expect(queue.size).toBe(4);
    await queue.next();
    await queue.next();
    expect(drained).toBe(0);
    await queue.next();
    expect(drained).toBe(1);
    expect(fanout.overHighWater()).toBe(false);
  });

  it('is not kept at all with retainEvents: false', () => {
    const fanout = new EventFanout(false, { events: 1, bytes: 1 }, () => undefined);
    for (let n = 1; n <= 10; n++) fanout.publish(delta(n), 10);
    expect(fanout.overHighWater()).toBe(false);
  });
});

describe('a Fen run nobody iterates', () => {
  it('holds at most the high-water mark, ends with its outcome, and an iterator made afterwards gets every event from the first', async () => {
    const hostile = hostileRun(floodThenExit(20_000), { highWaterMark: 200 });
    cleanups.push(hostile.cleanup);
    const { run } = hostile;
    let published = 0;
    run.on('event', () => published++);
    const outcome = await within(run.outcome, 60_000, 'outcome');
    expect(outcome).toMatchObject({ status: 'done', finalText: 'flooded' });
    // One read past the mark at most (a 64 KiB read of 1 KB lines).
    expect(published).toBeLessThanOrEqual(200 + 80);
    expect(hostile.leftovers()).toEqual([]);
    let deltas = 0;
    let first: RunEvent | undefined;
    let last: RunEvent | undefined;
    for await (const event of run) {
      first ??= event;
      last = event;
      if (event.type === 'assistant-text-delta') deltas++;
    }
    expect(first?.type).toBe('ready');
    expect(deltas).toBe(20_000);
    expect(last).toMatchObject({ type: 'exit', status: 'done' });
    expect(openUnder(hostile.stateDir)).toBe(0);
  });

  it('await using / [Symbol.asyncDispose] after the outcome drops the events still behind: the descriptor closes and iterators end', async () => {
    const hostile = hostileRun(floodThenExit(10_000), { highWaterMark: 100 });
    cleanups.push(hostile.cleanup);
    const { run } = hostile;
    const events = run[Symbol.asyncIterator]();
    await events.next();
    expect((await within(run.outcome, 60_000, 'outcome')).status).toBe('done');
    expect(openUnder(hostile.stateDir)).toBe(1);
    await run[Symbol.asyncDispose]();
    expect(openUnder(hostile.stateDir)).toBe(0);
    let taken = 0;
    let last: RunEvent | undefined;
    for (let next = await events.next(); !next.done; next = await events.next()) {
      taken++;
      last = next.value;
    }
    expect(taken).toBeLessThan(10_000);
    expect(last).toMatchObject({ type: 'exit', status: 'done' });
  });

  it('a handle dropped without iterating releases the event file descriptor once it is garbage-collected', () => {
    const parent = fileURLToPath(new URL('../../helpers/dropped-run-parent.mjs', import.meta.url));
    const report = JSON.parse(execFileSync(process.execPath, ['--expose-gc', parent], { encoding: 'utf8', timeout: 60_000 })) as Record<string, unknown>;
    expect(report).toMatchObject({ status: 'done', afterOutcome: 1, afterGc: 0, leftovers: [] });
    expect(report['published']).toBeLessThanOrEqual(100 + 80);
  });
});

/**
 * A pool of one and a pooled hostile Fen child that floods `count` events and exits, with a small high-water
 * mark for the run and for the pool's events() streams (a stream fills up to its own mark before a slow
 * consumer's `break` closes it).
 */
function pooledFlood(count: number, before: (sup: Supervisor) => void = () => undefined) {
  const stateDir = scratchDir();
  cleanups.push(stateDir.cleanup);
  const sup = createSupervisor({ concurrency: 1, handleParentSignals: false, highWaterMark: 200 });
  before(sup);
  const run = sup.spawn({
    command: process.execPath,
    args: [HOSTILE_CHILD, JSON.stringify({ steps: floodThenExit(count) })],
    task: 'go',
    highWaterMark: 200,
    killGraceMs: 300,
    stateDir: stateDir.dir,
    handleParentSignals: false,
  });
  const counter = { relayed: 0 };
  run.on('event', () => counter.relayed++);
  return { sup, run, counter, leftovers: () => readdirSync(stateDir.dir) };
}

describe('the pool: a run nobody iterates', () => {
  it('a pooled Fen run holds at most the high-water mark and ends', async () => {
    const { sup, run, counter, leftovers } = pooledFlood(20_000);
    expect((await within(run.outcome, 60_000, 'outcome')).status).toBe('done');
    // The pooled handle's backlog plus one batch of the run's own queue.
    expect(counter.relayed).toBeLessThanOrEqual(3 * (200 + 80));
    let deltas = 0;
    for await (const event of run) if (event.type === 'assistant-text-delta') deltas++;
    expect(deltas).toBe(20_000);
    await sup.shutdown();
    expect(leftovers()).toEqual([]);
  });

  it('a pooled run relaying to an events() stream that closed is held back by its kept backlog, and the next stream gets the rest', async () => {
    let first: AsyncIterable<PoolEvent> | undefined;
    const { sup, run, counter } = pooledFlood(5_000, (pool) => (first = pool.events()));
    for await (const item of first!) if (item.event.type === 'turn-started') break;
    expect((await within(run.outcome, 60_000, 'outcome')).status).toBe('done');
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The run's own backlog (for an iterator never created) holds the relay back: not the whole flood.
    expect(counter.relayed).toBeLessThan(3 * (200 + 80));
    let last: RunEvent | undefined;
    for await (const item of sup.events({ untilIdle: true })) last = item.event;
    expect(last).toMatchObject({ type: 'exit', status: 'done' });
    expect(counter.relayed).toBeGreaterThan(5_000);
    await sup.shutdown();
  });

  it('a HEP run (a pipe, which cannot read ahead) nobody iterates is not held back: its child is never blocked', async () => {
    const fake = fakeFa({ name: 'chatty', rounds: [{ steps: [{ text: { repeat: 'word ', bytes: 200 * 1024 }, chunks: 4000 }] }] });
    cleanups.push(() => fake.cleanup());
    const solo = spawnRun({ protocol: 'hep', ...fake, task: 'talk', highWaterMark: 20, killGraceMs: 300 });
    expect((await within(solo.outcome, 60_000, 'outcome')).status).toBe('done');
    const sup = createSupervisor({ concurrency: 1, handleParentSignals: false });
    const pooled = sup.spawn({ protocol: 'hep', ...fake, task: 'talk', highWaterMark: 20, killGraceMs: 300, handleParentSignals: false });
    expect((await within(pooled.outcome, 60_000, 'outcome')).status).toBe('done');
    let deltas = 0;
    for await (const event of pooled) if (event.type === 'assistant-text-delta') deltas++;
    expect(deltas).toBeGreaterThan(1000);
    await sup.shutdown();
  });
});
