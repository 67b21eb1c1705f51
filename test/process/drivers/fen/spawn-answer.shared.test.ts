// spawnRun matrix, the answer: final-text-path (1 MiB multi-byte, unsafe paths), truncation notes, missing result, usage.
import { chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../../src/index.js';
import type { Scenario } from '../../../../src/testing/index.js';
import { reapLeftovers, supervise } from '../../../helpers/spawn-harness.js';

afterEach(reapLeftovers);

type ResultEvent = Extract<RunEvent, { type: 'result' }>;

function resultOf(events: RunEvent[]): ResultEvent | undefined {
  return events.find((event): event is ResultEvent => event.type === 'result');
}

describe('final-text-path written by the child', () => {
  it.each([
    { label: "1 MiB of 'é'", repeat: 'é', bytes: 1024 * 1024 },
    { label: "1 MiB of 'é😀' (2- and 4-byte characters)", repeat: 'é😀', bytes: 6 * 174_763 },
  ])('$label arrives whole, and the temp file is removed', async ({ repeat, bytes }) => {
    const expected = repeat.repeat(bytes / Buffer.byteLength(repeat));
    expect(Buffer.byteLength(expected)).toBe(bytes);
    // Writing and reading 1 MiB takes the child longer than FAST_RUN's 200 ms grace on a loaded machine; a longer
    // grace costs nothing when the child exits on time.
    const s = supervise({ turns: [{ answer: { repeat, bytes } }] }, { task: 'a long answer please', killGraceMs: 10_000 });
    const outcome = await s.finish({ status: 'done', mirror: true });
    const result = resultOf(s.events);
    expect(result?.truncated).toBe(true);
    expect(typeof result?.finalTextPath).toBe('string');
    expect(expected.startsWith(result?.finalText ?? '\u0000')).toBe(true);
    expect(outcome.finalText?.length).toBe(expected.length);
    expect(outcome.finalText === expected).toBe(true);
    expect(outcome.truncated).toBe(false);
    expect(outcome.truncationNote).toBeUndefined();
    expect(existsSync(result?.finalTextPath as string), 'the parent removed the final-text file').toBe(false);
  });

  it('the built-in huge-answer scenario: whole answer, file removed', async () => {
    const s = supervise('huge-answer', { task: 'go', killGraceMs: 10_000 });
    const outcome = await s.finish({ status: 'done' });
    const result = resultOf(s.events);
    expect(result?.finalTextPath).toBeTypeOf('string');
    expect(Buffer.byteLength(outcome.finalText ?? '')).toBeGreaterThan(1_000_000);
    expect(outcome.truncated).toBe(false);
    expect(existsSync(result?.finalTextPath as string)).toBe(false);
  });

  it('a small multi-byte answer travels inline, exact', async () => {
    const answer = 'Grüße, 日本語, 😀 and \u2028 a line separator';
    const s = supervise({ turns: [{ answer }] }, { task: 'go' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe(answer);
    expect(outcome.truncated).toBe(false);
    expect(resultOf(s.events)?.finalTextPath).toBeUndefined();
  });
});

describe('an unsafe or unreadable final-text-path is neither read nor removed', () => {
  const RUN_ID = 'answer-run';
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'subvisor-spawn-answer-'));
  });
  afterAll(() => {
    rmSync(scratch, { recursive: true, force: true });
  });

  /** A child that ends `done` with a cut result pointing at `path` (lines written raw, then exit 0). */
  function resultPointingAt(path: string | undefined): Scenario {
    const result: Record<string, unknown> = {
      v: 1,
      seq: 1_000_000,
      type: 'result',
      run: RUN_ID,
      'stop-reason': 'stop',
      'final-text': 'the cut text',
      'truncated?': true,
    };
    if (path !== undefined) result['final-text-path'] = path;
    const exit = { v: 1, seq: 1_000_001, type: 'exit', run: RUN_ID, status: 'done' };
    return {
      turns: [{ answer: 'the real answer' }],
      misbehaviours: [
        {
          at: 'before-result',
          do: [{ raw: [{ kind: 'literal', line: JSON.stringify(result) }, { kind: 'literal', line: JSON.stringify(exit) }] }, { crash: { code: 0 } }],
        },
      ],
    };
  }

  async function expectCutAnswer(path: string | undefined, options: { maxFinalTextBytes?: number } = {}) {
    const s = supervise(resultPointingAt(path), { task: 'go', runId: RUN_ID, ...options });
    const outcome = await s.finish({ status: 'done' });
    expect(resultOf(s.events)?.finalTextPath).toBe(path);
    expect(outcome.finalText).toBe('the cut text');
    expect(outcome.truncated).toBe(true);
    expect(outcome.truncationNote).toBeTypeOf('string');
    expect(outcome.truncationNote?.length).toBeGreaterThan(0);
    return outcome;
  }

  it('a symlink (even to a readable file of ours)', async () => {
    const target = join(scratch, 'target.txt');
    writeFileSync(target, 'SECRET TARGET');
    const link = join(scratch, 'link.txt');
    symlinkSync(target, link);
    await expectCutAnswer(link);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('SECRET TARGET');
  });

  it('a directory', async () => {
    const dir = join(scratch, 'a-directory');
    mkdirSync(dir);
    writeFileSync(join(dir, 'inside.txt'), 'keep me');
    await expectCutAnswer(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
    expect(readFileSync(join(dir, 'inside.txt'), 'utf8')).toBe('keep me');
  });

  // Giving a file away needs root (the suite runs as root in CI); elsewhere the case cannot be set up.
  it.skipIf(process.getuid?.() !== 0)("another user's file", async () => {
    const foreign = join(scratch, 'nobody.txt');
    writeFileSync(foreign, 'owned by nobody');
    chownSync(foreign, 65534, 65534);
    await expectCutAnswer(foreign);
    expect(statSync(foreign).uid).toBe(65534);
    expect(readFileSync(foreign, 'utf8')).toBe('owned by nobody');
  });

  it('a file larger than maxFinalTextBytes', async () => {
    const big = join(scratch, 'big.txt');
    writeFileSync(big, 'z'.repeat(5000));
    // Older than the run: not the child's temp file, so kept (a fresh oversize one is removed: hostile-answer-file).
    const past = new Date(Date.now() - 60_000);
    utimesSync(big, past, past);
    await expectCutAnswer(big, { maxFinalTextBytes: 1000 });
    expect(readFileSync(big, 'utf8')).toBe('z'.repeat(5000));
  });

  it('a path that does not exist', async () => {
    await expectCutAnswer(join(scratch, 'missing.txt'));
  });

  it('truncated? without any final-text-path', async () => {
    await expectCutAnswer(undefined);
  });

  it('a regular 0600 file of ours that existed before the run (not the child\'s temp file) is kept', async () => {
    const good = join(scratch, 'good.txt');
    writeFileSync(good, 'the whole answer, ünïcødé', { mode: 0o600 });
    const past = new Date(Date.now() - 60_000);
    utimesSync(good, past, past);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const outcome = await expectCutAnswer(good);
    expect(outcome.finalTextFileRefusal).toMatchObject({ code: 'older-than-run', removed: false });
    expect(readFileSync(good, 'utf8')).toBe('the whole answer, ünïcødé');
  });
});

describe('missing result and usage', () => {
  const USAGE = { input: 10, output: 5 };

  it('exit done without result: done, no finalText, a note; usage summed from turn-completes', async () => {
    const scenario: Scenario = {
      turns: [{ answer: 'one', usage: USAGE }, { answer: 'two', usage: USAGE }],
      misbehaviours: [{ at: 'before-result', do: 'skip-result' }],
    };
    const s = supervise(scenario, { task: 'go', keepAlive: true });
    await s.waitEvent((event) => event.type === 'turn-complete' && event.turn === 1, 'turn 1');
    await s.waitState('ready');
    expect((await s.control((run) => run.prompt('again'))).status).toBe('accepted');
    await s.waitEvent((event) => event.type === 'turn-complete' && event.turn === 2, 'turn 2');
    await s.waitState('ready');
    await s.control((run) => run.close());
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(resultOf(s.events)).toBeUndefined();
    expect(outcome.finalText).toBeUndefined();
    expect(outcome.truncated).toBe(true);
    expect(outcome.truncationNote).toBeTypeOf('string');
    expect(outcome.usage).toMatchObject({ inputTokens: 20, outputTokens: 10 });
    expect(outcome.turns).toBe(2);
    expect(outcome.exitCode).toBe(0);
  });

  it("usage comes from the result when there is one (the child's whole-run sum)", async () => {
    const scenario: Scenario = { turns: [{ answer: 'one', usage: USAGE }, { answer: 'two', usage: { input: 1, output: 2 } }] };
    const s = supervise(scenario, { task: 'go', keepAlive: true });
    await s.waitEvent((event) => event.type === 'turn-complete' && event.turn === 1, 'turn 1');
    await s.waitState('ready');
    await s.control((run) => run.prompt('again'));
    await s.waitEvent((event) => event.type === 'turn-complete' && event.turn === 2, 'turn 2');
    await s.waitState('ready');
    await s.control((run) => run.close());
    const outcome = await s.finish({ status: 'done', mirror: true });
    const result = resultOf(s.events);
    expect(result?.usage).toMatchObject({ inputTokens: 11, outputTokens: 7 });
    expect(outcome.usage).toEqual(result?.usage);
    expect(outcome.stopReason).toBe('stop');
    expect(outcome.finalText).toBe('two');
  });
});
