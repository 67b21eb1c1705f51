// Core smoke tests of spawnRun against real fake-child processes: the happy path, its acks, backpressure, a missing
// working directory, option checks. Controls (steer, cancel, finalize, keepAlive, refusals, unanswered acks), the kill
// ladder, faults, teardown, iteration and parent shutdown are covered once, in the spawn-* files.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import { toRunEvent } from '../../../src/drivers/fen/to-run-event.js';
import { decode } from '../../../src/wire/index.js';
import type { Run, RunEvent } from '../../../src/index.js';
import { fakeChild } from '../../../src/testing/index.js';
import type { FakeChild } from '../../../src/testing/index.js';

let stateDir: string;
const children: FakeChild[] = [];

function child(...args: Parameters<typeof fakeChild>): FakeChild {
  const made = fakeChild(...args);
  children.push(made);
  return made;
}

beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'subvisor-run-core-'));
});
afterEach(() => {
  for (const made of children.splice(0)) made.cleanup();
  rmSync(stateDir, { recursive: true, force: true });
});

/** Collects every event of a run through the iterator. */
async function collect(run: Run): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of run) events.push(event);
  return events;
}

describe('event conversion', () => {
  const convert = (line: string) => {
    const decoded = decode(line, 'event');
    if (!decoded.ok) throw new Error(decoded.rejection.reason);
    return toRunEvent(decoded.message);
  };

  it('camelCases every top-level key and drops trailing question marks, keeping nested values', () => {
    const event = convert(
      '{"v":1,"seq":3,"type":"tool-result","run":"r","name":"grep","is-error?":false,"tool-call-id":"c1",' +
        '"duration-seconds":0.5,"transport-truncated?":true,"result":{"kebab-key":1},"x-extra-field?":"kept"}',
    );
    expect(event).toEqual({
      v: 1,
      seq: 3,
      type: 'tool-result',
      run: 'r',
      name: 'grep',
      isError: false,
      toolCallId: 'c1',
      durationSeconds: 0.5,
      transportTruncated: true,
      result: { 'kebab-key': 1 },
      extra: { xExtraField: 'kept' },
    });
  });

  it('puts unknown fields under extra only, allocated only when there is one', () => {
    const plain = convert('{"v":1,"seq":1,"type":"turn-complete","run":"r","turn":1,"stop-reason":"end_turn","usage":{"input":1}}');
    expect(plain).toEqual({ v: 1, seq: 1, type: 'turn-complete', run: 'r', turn: 1, stopReason: 'end_turn', usage: { inputTokens: 1 } });
    expect(Object.hasOwn(plain, 'extra')).toBe(false);
    // `usage` is a field of turn-complete, not of tool-call: there it is an unknown field, kept as sent.
    const call = convert('{"v":1,"seq":2,"type":"tool-call","run":"r","name":"x","usage":{"input":1},"stop-reason":"s"}');
    expect(call).toEqual({ v: 1, seq: 2, type: 'tool-call', run: 'r', name: 'x', extra: { usage: { input: 1 }, stopReason: 's' } });
  });

  it('keeps a child field named extra, and every colliding unknown key, without clobbering', () => {
    const event = convert(
      '{"v":1,"seq":1,"type":"assistant-text","run":"r","final?":true,"extra":{"a":1},"stopReason":"x",' +
        '"a-b":1,"aB":2,"c-d":3,"c-d?":4,"final":"mine"}',
    );
    expect(event).toEqual({
      v: 1,
      seq: 1,
      type: 'assistant-text',
      run: 'r',
      final: true,
      // `a-b` keeps its spelling: the line has `aB` itself; `c-d?` too: `c-d` took `cD` first.
      extra: { extra: { a: 1 }, stopReason: 'x', 'a-b': 1, aB: 2, cD: 3, 'c-d?': 4, final: 'mine' },
    });
  });

  it('never lets a hostile extra key replace the envelope or the prototype', () => {
    const event = convert('{"v":1,"seq":1,"type":"info","run":"r","type?":"exit","__proto__":{"polluted":true},"constructor":1}');
    expect(event.type).toBe('info');
    const extra = event.type === 'info' ? event.extra! : {};
    // `type?` keeps its spelling: the line has a `type` key.
    expect(extra['type?']).toBe('exit');
    expect(Object.hasOwn(extra, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(event)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(extra)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(extra['constructor']).toBe(1);
  });
});

describe('spawnRun core', () => {
  it('runs the demo end to end: ordered events ending with one exit, the whole answer, no files left', async () => {
    const demo = child('demo');
    const run = spawnRun({ ...demo, task: 'Inspect the README', stateDir });
    const states: string[] = [run.state];
    run.on('state', (state) => states.push(state));
    expect(run.id).toMatch(/[0-9a-f-]{36}/);
    expect(typeof run.pid).toBe('number');
    expect(readdirSync(stateDir)).toHaveLength(1);

    const events = await collect(run);
    const outcome = await run.outcome;

    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'done' });
    expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
    const seqs = events.map((event) => (event as { seq?: number }).seq ?? 0);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const toolResult = events.find((event) => event.type === 'tool-result');
    expect(toolResult).toMatchObject({ name: 'read_file', isError: false });
    expect(states).toEqual(['starting', 'ready', 'running', 'ready', 'done']);
    expect(outcome).toMatchObject({
      runId: run.id,
      status: 'done',
      truncated: false,
      stopReason: 'stop',
      turns: 1,
      exitCode: 0,
      signal: null,
      killed: false,
      escalated: false,
      spawnFailed: false,
      rejectedLines: 0,
    });
    expect(outcome.finalText).toMatch(/^The README introduces subvisor.*no model ran\.\)$/s);
    expect(outcome.usage).toMatchObject({ totalTokens: expect.any(Number) });
    expect(outcome.error).toBeUndefined();
    expect(run.ended).toBe(true);
    expect(readdirSync(stateDir)).toEqual([]);
    expect(demo.livePids()).toEqual([]);
  });

  it('acks the task prompt and its own close too', async () => {
    const run = spawnRun({ ...child('echo'), task: 'hi', stateDir });
    const acks: string[] = [];
    run.on('ack', (ack, control, origin) => acks.push(`${origin}:${control}#${ack.seq}:${ack.status}`));
    expect(await run.taskAck).toMatchObject({ status: 'accepted', seq: 1 });
    await run.outcome;
    expect(acks).toEqual(['task:prompt#1:accepted', 'auto:close#2:accepted']);
  });

  it('keeps memory bounded for a slow iterator: reading pauses at the high-water mark', async () => {
    const run = spawnRun({ ...child('flood'), task: 'flood', stateDir, highWaterMark: 100 });
    let heard = 0;
    let consumed = 0;
    let maxLag = 0;
    run.on('event', () => {
      heard++;
      maxLag = Math.max(maxLag, heard - consumed);
    });
    for await (const event of run) {
      consumed++;
      if (event.type === 'assistant-text-delta' && consumed % 500 === 0) await new Promise((r) => setTimeout(r, 20));
      else if (consumed % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    const outcome = await run.outcome;
    expect(outcome.status).toBe('done');
    expect(consumed).toBe(heard);
    expect(heard).toBeGreaterThan(10_000);
    // The high-water mark plus at most one 64 KiB read of ~250-byte lines.
    expect(maxLag).toBeLessThan(100 + 400);
  });

  it('says so when the working directory is what is missing', async () => {
    const run = spawnRun({ command: process.execPath, cwd: join(stateDir, 'gone'), task: 'x', stateDir });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'failed', spawnFailed: true });
    expect(outcome.error).toMatch(/working directory .*gone.* does not exist/);
  });

  it('throws synchronously on invalid options only', () => {
    expect(() => spawnRun({ command: '' })).toThrow(TypeError);
    expect(() => spawnRun({ command: 'x', task: 'y'.repeat(70_000) })).toThrow(RangeError);
    expect(() => spawnRun({ command: 'x', killGraceMs: -1 })).toThrow(RangeError);
    expect(() => spawnRun({ command: 'x', timeoutMs: 1000, deadline: Date.now() })).toThrow(TypeError);
    expect(readdirSync(stateDir)).toEqual([]);
  });
});
