// Memory stays bounded whatever the child does: floods while an ack is withheld, a steer awaited inside the loop, a large file left at exit, the pool.
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSupervisor } from '../../../src/index.js';
import type { Ack, RunEvent } from '../../../src/index.js';
import { hostileRun, scratchDir } from '../../helpers/hostile-run.js';
import type { HostileStep } from '../../helpers/hostile-run.js';
import { within } from '../../helpers/spawn-harness.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** Defaults: 1024 events or 1 MiB held per iterator, plus what one 64 KiB read adds past either. */
const HELD_EVENTS_BOUND = 1024 + 80;

async function until(check: () => boolean, what: string, boundMs = 60_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > boundMs) throw new Error(`${what}: not within ${boundMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Descriptors of this process open on a file named like the run's event file. */
function openEventFiles(): string[] {
  const found: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.includes('events.jsonl') || target.includes('event')) found.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return found.filter((target) => target.includes('subvisor-hostile-'));
}

function start(steps: HostileStep[], options: Parameters<typeof hostileRun>[1] = {}) {
  const hostile = hostileRun(steps, { keepAlive: true, ...options });
  cleanups.push(hostile.cleanup);
  const published: RunEvent[] = [];
  hostile.run.on('event', (event) => published.push(event));
  return { ...hostile, published };
}

describe('backpressure holds while an ack is withheld', () => {
  it('a 50 MB flood during which the steer is never answered: the parent holds at most the high-water mark', async () => {
    const scratch = scratchDir();
    cleanups.push(scratch.cleanup);
    const flooded = join(scratch.dir, 'flooded');
    const { run, published, leftovers } = start([
      { ready: true },
      { ack: 'task' },
      { sleep: 200 },
      { flood: { count: 50_000, bytes: 1024 } },
      { touch: flooded },
      { hang: true },
    ]);
    const events = run[Symbol.asyncIterator]();
    // Take events until the turn started, then send a steer the child never answers, and stop pulling.
    for (let next = await events.next(); !next.done; next = await events.next()) if (next.value.type === 'turn-started') break;
    const steer = run.steer('withheld');
    await until(() => existsSync(flooded), 'the child wrote its flood');
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Everything published and not taken is held by the iterator: bounded, not 50 000 events.
    expect(published.length).toBeLessThanOrEqual(HELD_EVENTS_BOUND);
    const ack = await Promise.race([steer, new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), 50))]);
    expect(ack).toBe('pending');
    await run.cancel();
    let taken = 0;
    for (let next = await events.next(); !next.done; next = await events.next()) taken++;
    const outcome = await within(run.outcome, 30_000, 'outcome');
    expect(outcome.status).toBe('cancelled');
    expect((await steer).status).toBe('unanswered');
    expect(taken).toBeGreaterThan(0);
    expect(published.at(-1)?.type).toBe('exit');
    expect(leftovers()).toEqual([]);
  });

  it('await run.steer() inside the for-await loop, its ack 20 000 events ahead: no deadlock, and the parent never reads the flood into memory', async () => {
    const { run, published, leftovers } = start([
      { ready: true },
      { ack: 'task' },
      { flood: { count: 20_000, bytes: 1024 } },
      { ackControls: { count: 1 } },
      { flood: { count: 2_000, bytes: 1024 } },
      { result: 'flooded' },
      { exit: 'done' },
    ]);
    let deltas = 0;
    let steered: Ack | undefined;
    let heldAtAck = 0;
    const order: number[] = [];
    for await (const event of run) {
      if (event.type !== 'assistant-text-delta') continue;
      deltas++;
      order.push(event.seq ?? 0);
      if (deltas === 10) {
        // The loop stops pulling here until the ack comes: the reader is paused at the high-water mark.
        steered = await within(run.steer('inside the loop'), 30_000, 'the steer ack');
        heldAtAck = published.length;
      }
    }
    expect(steered?.status).toBe('accepted');
    expect(heldAtAck).toBeLessThanOrEqual(HELD_EVENTS_BOUND);
    expect(deltas).toBe(22_000);
    expect(order.every((seq, index) => index === 0 || seq > (order[index - 1] ?? 0))).toBe(true);
    const outcome = await within(run.outcome, 30_000, 'outcome');
    expect(outcome).toMatchObject({ status: 'done', finalText: 'flooded', rejectedLines: 0 });
    expect(leftovers()).toEqual([]);
  });
});

describe('after the child exits, the rest of the file is read as the consumer pulls', () => {
  it('a child that writes 200 MB and exits: the outcome settles while the parent holds only the high-water mark; the rest arrives in order as pulled', async () => {
    const count = 20_000;
    const { run, published, leftovers } = start(
      [{ ready: true }, { ack: 'task' }, { flood: { count, bytes: 10 * 1024 } }, { result: 'the end' }, { exit: 'done' }],
      { keepAlive: false },
    );
    const events = run[Symbol.asyncIterator]();
    await events.next();
    const outcome = await within(run.outcome, 120_000, 'outcome');
    // Every fact is in (result, exit, usage) although the events are still in the (removed) file.
    expect(outcome).toMatchObject({ status: 'done', finalText: 'the end', truncated: false });
    expect(published.length).toBeLessThanOrEqual(HELD_EVENTS_BOUND);
    expect(published.some((event) => event.type === 'exit')).toBe(false);
    expect(leftovers()).toEqual([]); // the run directory is gone; the open descriptor still reads the file
    let deltas = 0;
    let last: RunEvent | undefined;
    for (let next = await events.next(); !next.done; next = await events.next()) {
      if (next.value.type === 'assistant-text-delta') deltas++;
      last = next.value;
    }
    expect(deltas).toBe(count);
    expect(last).toMatchObject({ type: 'exit', status: 'done' });
    expect(published.filter((event) => event.type === 'exit')).toHaveLength(1);
    expect(openEventFiles()).toEqual([]);
  });

  it('breaking out of the loop after the child exited releases the rest (read through, nothing held, descriptor closed)', async () => {
    const { run, published } = start([{ ready: true }, { ack: 'task' }, { flood: { count: 5_000, bytes: 4096 } }, { exit: 'done' }], {
      keepAlive: false,
    });
    for await (const event of run) if (event.type === 'turn-started') break;
    const outcome = await within(run.outcome, 60_000, 'outcome');
    expect(outcome.status).toBe('done');
    await until(() => published.at(-1)?.type === 'exit', 'the last event published');
    expect(openEventFiles()).toEqual([]);
  });
});

describe('the pool keeps its iterators under the same backpressure', () => {
  it("a pooled run's slow iterator: the child's 40 MB stay in the file, not in the pool", async () => {
    const scratch = scratchDir();
    cleanups.push(scratch.cleanup);
    const flooded = join(scratch.dir, 'flooded');
    const { fileURLToPath } = await import('node:url');
    const child = fileURLToPath(new URL('../../helpers/hostile-fen-child.mjs', import.meta.url));
    const stateDir = scratchDir();
    cleanups.push(stateDir.cleanup);
    const sup = createSupervisor({ concurrency: 1, handleParentSignals: false });
    const steps = [{ ready: true }, { ack: 'task' }, { flood: { count: 40_000, bytes: 1024 } }, { touch: flooded }, { hang: true }];
    const run = sup.spawn({
      command: process.execPath,
      args: [child, JSON.stringify({ steps })],
      task: 'go',
      keepAlive: true,
      killGraceMs: 300,
      stateDir: stateDir.dir,
      handleParentSignals: false,
    });
    let relayed = 0;
    run.on('event', () => relayed++);
    const events = run[Symbol.asyncIterator]();
    await events.next();
    await until(() => existsSync(flooded), 'the child wrote its flood');
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The run's own queue, and the pooled handle's queue, which takes one batch (up to the run's whole queue) past its mark.
    expect(relayed).toBeLessThanOrEqual(3 * HELD_EVENTS_BOUND);
    await run.cancel();
    let taken = 0;
    for (let next = await events.next(); !next.done; next = await events.next()) taken++;
    expect((await within(run.outcome, 30_000, 'outcome')).status).toBe('cancelled');
    expect(taken).toBeGreaterThan(0);
    await sup.shutdown();
    expect(readdirSync(stateDir.dir)).toEqual([]);
  });
});
