// run.text(): the assistant's text never doubled, never missing, for every way a child sends it (TextAssembler in
// milliseconds, then through real fake children).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import type { RunEvent } from '../../../src/index.js';
import { TextAssembler } from '../../../src/run/text-stream.js';
import { fakeChild } from '../../../src/testing/index.js';
import type { FakeChild, Scenario } from '../../../src/testing/index.js';

const envelope = { v: 1 as const, seq: 1, run: 'r' };
const delta = (text: string, contentIndex = 0): RunEvent => ({ ...envelope, type: 'assistant-text-delta', delta: text, contentIndex });
const whole = (text: string, contentIndex = 0, final = true): RunEvent => ({ ...envelope, type: 'assistant-text', text, contentIndex, final });
const streamEnd: RunEvent = { ...envelope, type: 'assistant-stream-end', final: true };

function assemble(events: RunEvent[]): string[] {
  const assembler = new TextAssembler();
  return events.flatMap((event) => assembler.push(event));
}

describe('TextAssembler', () => {
  it('deltas then the whole block: the deltas, nothing doubled', () => {
    expect(assemble([delta('Hel'), delta('lo'), whole('Hello'), streamEnd])).toEqual(['Hel', 'lo']);
  });

  it('only the whole block: all of it', () => {
    expect(assemble([whole('Hello'), streamEnd])).toEqual(['Hello']);
  });

  it('a whole block longer than its deltas: the rest', () => {
    expect(assemble([delta('Hel'), whole('Hello, world')])).toEqual(['Hel', 'lo, world']);
  });

  it('blocks by content index, and a block after a stream end starts afresh', () => {
    const events = [delta('a', 0), delta('x', 1), whole('ab', 0), whole('xy', 1), streamEnd, delta('c'), whole('cd')];
    expect(assemble(events).join('')).toBe('axbycd');
  });

  it('a whole text that contradicts its deltas adds nothing (the deltas cannot be taken back)', () => {
    expect(assemble([delta('Hello'), whole('Goodbye'), whole('Next')])).toEqual(['Hello', 'Next']);
  });

  it('deltas never completed by a whole block stay, and the next turn starts afresh', () => {
    const turnComplete: RunEvent = { ...envelope, type: 'turn-complete', turn: 1, stopReason: 'aborted' };
    expect(assemble([delta('cut sh'), turnComplete, whole('fresh')])).toEqual(['cut sh', 'fresh']);
  });

  it('remainder: what the final answer adds (all of it without text, the tail of a cut block, nothing when it does not continue)', () => {
    const fresh = new TextAssembler();
    expect(fresh.remainder('whole answer')).toBe('whole answer');
    expect(fresh.remainder(undefined)).toBe('');
    const cut = new TextAssembler();
    cut.push(delta('Looking.'));
    cut.push(whole('Looking.'));
    cut.push(delta('The ans'));
    expect(cut.remainder('The answer is 42.')).toBe('wer is 42.');
    expect(cut.remainder('Something else')).toBe('');
  });

  it('ignores empty deltas, empty texts and every other event', () => {
    expect(assemble([delta(''), whole(''), { ...envelope, type: 'ready' }])).toEqual([]);
  });
});

describe('run.text() through real fake children', () => {
  // Made in a hook, not while vitest collects: a run that only lists or filters the tests runs no hook to remove it.
  let stateDir: string;
  beforeAll(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'run-text-'));
  });
  const fakes: FakeChild[] = [];
  afterAll(() => {
    for (const fake of fakes) fake.cleanup();
    rmSync(stateDir, { recursive: true, force: true });
  });

  async function textOf(scenario: Scenario): Promise<{ text: string; blocks: string[]; finalText: string | undefined }> {
    const fake = fakeChild(scenario, { turnTickMs: 5, idleTickMs: 20 });
    fakes.push(fake);
    const run = spawnRun({ ...fake, task: 'go', stateDir, killGraceMs: 300 });
    const blocks: string[] = [];
    run.on('event', (event) => {
      if (event.type === 'assistant-text' && event.text !== undefined) blocks.push(event.text);
    });
    let text = '';
    for await (const chunk of run.text()) text += chunk;
    return { text, blocks, finalText: (await run.outcome).finalText };
  }

  it('a streamed turn (deltas, then the whole text): each block once', async () => {
    const result = await textOf({ turns: [{ steps: [{ text: 'Looking. ', chunks: 3 }], answer: 'The answer.', answerChunks: 4 }] });
    expect(result.blocks).toEqual(['Looking. ', 'The answer.']);
    expect(result.text).toBe('Looking. The answer.');
    expect(result.finalText).toBe('The answer.');
  });

  it('a long answer cut by the transport, as the real Fen child sends it (one cut delta, Fen\'s note inside, no whole text): whole, no note', async () => {
    const answer = 'The answer. '.repeat(2000);
    const fake = fakeChild({ turns: [{ answer, answerChunks: 1, answerWhole: false }] }, { turnTickMs: 5, idleTickMs: 20 });
    fakes.push(fake);
    const run = spawnRun({ ...fake, task: 'go', stateDir, killGraceMs: 300 });
    const deltas: RunEvent[] = [];
    run.on('event', (event) => {
      if (event.type === 'assistant-text-delta') deltas.push(event);
    });
    let text = '';
    for await (const chunk of run.text()) text += chunk;
    const outcome = await run.outcome;
    expect(outcome.finalText).toBe(answer);
    expect(text).toBe(answer);
    expect(deltas).toHaveLength(1);
    expect(deltas[0]).toMatchObject({ transportTruncated: true, transportNote: `[fen: tool output truncated: kept 4096 sanitized bytes from ${answer.length} input bytes]` });
    expect(deltas[0]).toMatchObject({ delta: answer.slice(0, 4096) });
  });

  it('a turn sent whole (no deltas): nothing missing', async () => {
    const result = await textOf({ turns: [{ answer: 'Whole answer, no deltas.' }] });
    expect(result.text).toBe('Whole answer, no deltas.');
  });
});
