// Unit tests of backpressure: the fan-out's two high-water marks, and Fen's two-pass reader (facts ahead, events behind).
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TwoPassReader } from '../../../src/drivers/fen/two-pass-reader.js';
import type { TwoPassHandlers } from '../../../src/drivers/fen/two-pass-reader.js';
import { EventFanout } from '../../../src/run/event-fanout.js';
import type { RunEvent } from '../../../src/api/types.js';

/** Resolves once the event loop has turned (what the two-pass reader waits for before reading facts ahead). */
const loopTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const delta = (n: number): RunEvent => ({ type: 'assistant-text-delta', seq: n, run: 'r', delta: `d${n}` }) as RunEvent;

describe('EventFanout: two high-water marks', () => {
  it('pauses at the event count, resumes once the queue is down to half', async () => {
    let drained = 0;
    const fanout = new EventFanout(false, { events: 4, bytes: 1e9 }, () => drained++);
    const queue = fanout.iterator();
    for (let n = 1; n <= 5; n++) fanout.publish(delta(n), 10);
    expect(fanout.overHighWater()).toBe(true);
    await queue.next();
    expect(drained).toBe(0);
    await queue.next();
    await queue.next();
    expect(queue.size).toBe(2);
    expect(drained).toBe(1);
    expect(fanout.overHighWater()).toBe(false);
  });

  it('pauses at the byte count whatever the number of events, and counts bytes out as they are taken', async () => {
    let drained = 0;
    const fanout = new EventFanout(false, { events: 1024, bytes: 30_000 }, () => drained++);
    const queue = fanout.iterator();
    fanout.publish(delta(1), 12_000);
    fanout.publish(delta(2), 12_000);
    expect(fanout.overHighWater()).toBe(false);
    fanout.publish(delta(3), 12_000);
    expect(queue.bytes).toBe(36_000);
    expect(fanout.overHighWater()).toBe(true);
    await queue.next();
    expect(queue.bytes).toBe(24_000);
    expect(drained).toBe(0);
    await queue.next();
    expect(queue.bytes).toBe(12_000);
    expect(drained).toBe(1);
    const batch = await queue.nextBatch();
    expect(batch.value).toHaveLength(1);
    expect(queue.bytes).toBe(0);
  });

  it('the first iterator takes the retained backlog with its bytes; a closed iterator releases the pause', async () => {
    let drained = 0;
    const fanout = new EventFanout(true, { events: 1024, bytes: 100 }, () => drained++);
    fanout.publish(delta(1), 80);
    fanout.publish(delta(2), 80);
    const queue = fanout.iterator();
    expect(queue.bytes).toBe(160);
    expect(fanout.overHighWater()).toBe(true);
    await queue.return();
    expect(drained).toBe(1);
    expect(fanout.overHighWater()).toBe(false);
  });

  it('hands each batch on with what its events took, for a stage that re-publishes them (the pool)', async () => {
    const fanout = new EventFanout(false, { events: 100, bytes: 1e6 }, () => undefined);
    const queue = fanout.iterator();
    fanout.publish(delta(1), 1234);
    fanout.publish(delta(2), 10);
    const batch = await queue.nextSizedBatch();
    expect(batch.value).toEqual({ events: [delta(1), delta(2)], bytes: [1234, 10] });
    const waiting = queue.nextSizedBatch();
    fanout.publish(delta(3), 77);
    expect((await waiting).value).toEqual({ events: [delta(3)], bytes: [77] });
    expect(queue.bytes).toBe(0);
  });
});

describe('TwoPassReader: facts ahead while events wait', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'subvisor-two-pass-'));
    path = join(dir, 'events.jsonl');
    writeFileSync(path, '');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const line = (seq: number, type: string, fields: Record<string, unknown> = {}) =>
    `${JSON.stringify({ v: 1, seq, type, run: 'r', ...fields })}\n`;

  function harness(options: { capacity: number }) {
    const facts: string[] = [];
    const factsAhead: string[] = [];
    const published: string[] = [];
    const rejectedAhead: number[] = [];
    let done = 0;
    const handlers: TwoPassHandlers = {
      facts: (event, ahead) => {
        facts.push(`${event.type}:${event.seq}`);
        if (ahead) factsAhead.push(`${event.type}:${event.seq}`);
      },
      publish: (event) => published.push(`${event.type}:${event.seq}`),
      rejectedFacts: (rejection, ahead) => ahead && rejectedAhead.push(rejection.seq ?? -1),
      publishRejected: (rejection, _bytes, factsAhead) => published.push(`rejected:${rejection.code}:${factsAhead}`),
      eventsDone: () => done++,
    };
    // A consumer that holds `capacity` events: over it, the events wait.
    const reader = new TwoPassReader(path, 'r', handlers, {
      backpressure: () => published.length - taken.count >= options.capacity,
    });
    const taken = { count: 0 };
    return { reader, facts, factsAhead, published, rejectedAhead, taken, done: () => done };
  }

  it('one pass while nothing waits: the facts of each line, then its event', () => {
    const h = harness({ capacity: 100 });
    appendFileSync(path, line(1, 'ready') + line(2, 'control-ack', { ref: 1, status: 'accepted' }));
    h.reader.start();
    expect(h.facts).toEqual(['ready:1', 'control-ack:2']);
    expect(h.published).toEqual(['ready:1', 'control-ack:2']);
    h.reader.close();
  });

  it('held back across a turn of the event loop: events wait in the file while the facts pass reads on, holding no event', async () => {
    const h = harness({ capacity: 2 });
    // 100 lines of 2 KB: the events pass publishes the lines of one 64 KiB read, then waits.
    for (let seq = 1; seq <= 100; seq++) appendFileSync(path, line(seq, 'assistant-text-delta', { delta: 'x'.repeat(2000) }));
    h.reader.start();
    expect(h.published.length).toBeGreaterThanOrEqual(2);
    expect(h.published.length).toBeLessThanOrEqual(33);
    const publishedWhilePaused = h.published.length;
    // Nobody pulled before the loop turned: the facts pass reads ahead.
    await loopTurn();
    h.reader.drain();
    expect(h.published.length).toBe(publishedWhilePaused);
    expect(h.facts).toHaveLength(100);
    appendFileSync(path, line(101, 'turn-started', { turn: 1 }));
    h.reader.drain();
    await loopTurn();
    expect(h.facts.at(-1)).toBe('turn-started:101');
    expect(h.published.length).toBe(publishedWhilePaused);
    h.reader.close();
  });

  it('a consumer that keeps pulling within the turn gets every fact from the events pass: each line decoded once, no facts pass', async () => {
    const h = harness({ capacity: 2 });
    let text = line(1, 'ready');
    for (let seq = 2; seq <= 3000; seq++) text += line(seq, 'assistant-text-delta', { delta: 'y'.repeat(100) });
    text += line(3001, 'control-ack', { ref: 1, status: 'accepted' });
    appendFileSync(path, text);
    h.reader.start();
    expect(h.published.length).toBeLessThan(3001);
    // The consumer takes what it was handed and asks for more before the event loop turns (as `for await` does).
    while (h.published.length < 3001) {
      h.taken.count = h.published.length;
      h.reader.drain();
    }
    await loopTurn();
    expect(h.factsAhead).toEqual([]);
    expect(h.facts).toHaveLength(3001);
    expect(h.facts.at(-1)).toBe('control-ack:3001');
    h.reader.close();
  });

  it('paused while an ack is awaited: the facts pass finds the ack ahead without publishing anything; the events pass publishes later without repeating facts', async () => {
    const h = harness({ capacity: 5 });
    // A flood in one read (the events pass publishes one read's lines, then waits), then the ack far ahead.
    let text = line(1, 'ready');
    for (let seq = 2; seq <= 3000; seq++) text += line(seq, 'assistant-text-delta', { delta: 'y'.repeat(100) });
    text += line(3001, 'control-ack', { ref: 1, status: 'accepted' });
    text += line(3002, 'assistant-text-delta', { delta: 'after' });
    appendFileSync(path, text);
    h.reader.start();
    const before = h.published.length;
    expect(before).toBeLessThan(3000);
    await loopTurn(); // the facts pass starts once the loop turned with the events pass still held back
    expect(h.facts).toContain('control-ack:3001');
    expect(h.factsAhead).toContain('control-ack:3001');
    expect(h.facts.at(-1)).toBe('assistant-text-delta:3002');
    expect(h.published.length).toBe(before); // nothing materialised ahead
    // The consumer takes everything, a read at a time: each line published once, each fact reported once.
    while (h.published.length < 3002) {
      h.taken.count = h.published.length;
      h.reader.drain();
    }
    expect(h.published).toHaveLength(3002);
    expect(new Set(h.published).size).toBe(3002);
    expect(h.facts).toHaveLength(3002);
    expect(new Set(h.facts).size).toBe(3002);
    // Caught up: the events pass reports facts again.
    appendFileSync(path, line(3003, 'turn-started', { turn: 1 }));
    h.taken.count = h.published.length;
    h.reader.drain();
    expect(h.facts.at(-1)).toBe('turn-started:3003');
    expect(h.published.at(-1)).toBe('turn-started:3003');
    h.reader.close();
  });

  it('after the child is gone, end() reads every fact once the loop turns with the events held back (result, exit), and the events as they are taken; a bad line counts ahead once', async () => {
    const h = harness({ capacity: 3 });
    let text = '';
    for (let seq = 1; seq <= 2000; seq++) text += line(seq, 'assistant-text-delta', { delta: 'z'.repeat(50) });
    text += '{not json}\n';
    text += line(2001, 'result', { 'stop-reason': 'stop' }) + line(2002, 'exit', { status: 'done' });
    appendFileSync(path, text);
    h.reader.start();
    const factsIn = h.reader.end();
    expect(factsIn).toBeInstanceOf(Promise);
    await factsIn;
    expect(h.facts.slice(-2)).toEqual(['result:2001', 'exit:2002']);
    expect(h.rejectedAhead).toHaveLength(1);
    expect(h.published.length).toBeLessThan(2003);
    expect(h.done()).toBe(0);
    expect(h.reader.eventsPending).toBe(true);
    while (h.reader.eventsPending) {
      h.taken.count = h.published.length;
      h.reader.drain();
    }
    expect(h.published).toHaveLength(2003);
    expect(h.published.at(-2)).toBe('result:2001');
    expect(h.published).toContain('rejected:malformed:true');
    expect(h.published.at(-1)).toBe('exit:2002');
    expect(h.facts).toHaveLength(2002);
    expect(h.done()).toBe(1);
  });

  it('after the child is gone, a consumer that keeps pulling reaches the end itself: end() settles with every event published, no facts pass', async () => {
    const h = harness({ capacity: 3 });
    let text = '';
    for (let seq = 1; seq <= 2000; seq++) text += line(seq, 'assistant-text-delta', { delta: 'z'.repeat(50) });
    text += line(2001, 'result', { 'stop-reason': 'stop' }) + line(2002, 'exit', { status: 'done' });
    appendFileSync(path, text);
    h.reader.start();
    const factsIn = h.reader.end();
    while (h.reader.eventsPending) {
      h.taken.count = h.published.length;
      h.reader.drain();
    }
    await factsIn;
    expect(h.factsAhead).toEqual([]);
    expect(h.published).toHaveLength(2002);
    expect(h.facts.slice(-2)).toEqual(['result:2001', 'exit:2002']);
    expect(h.done()).toBe(1);
    // Nothing left to wait for: a second end() has nothing to settle.
    expect(h.reader.end()).toBeUndefined();
  });

  it('end() with nothing held back settles at once: every fact was read by the events pass', () => {
    const h = harness({ capacity: 100 });
    appendFileSync(path, line(1, 'ready') + line(2, 'exit', { status: 'done' }));
    h.reader.start();
    expect(h.reader.end()).toBeUndefined();
    expect(h.facts).toEqual(['ready:1', 'exit:2']);
    expect(h.done()).toBe(1);
  });
});
