// Outcome precedence and the outcome record, as a table of pure cases (no process).
import { describe, expect, it } from 'vitest';
import { buildOutcome, finalVerdict } from '../../../src/run/outcome.js';
import { addUsage, totalTokens, toUsage } from '../../../src/wire/index.js';
import type { Verdict } from '../../../src/run/outcome.js';
import type { ChildExit } from '../../../src/protocol/results.js';
import type { ProcessExit } from '../../../src/process/supervised-process.js';

const clean: ProcessExit = { exitCode: 0, signal: null };
const killed: ProcessExit = { exitCode: null, signal: 'SIGKILL' };
const spawnError: ProcessExit = { exitCode: null, signal: null, spawnError: Object.assign(new Error('not found'), { code: 'ENOENT' }) };
const fatal: Verdict = { status: 'failed', code: 'version-mismatch', error: 'v2' };
const cancelled: Verdict = { status: 'cancelled', code: 'aborted', error: 'by the parent' };
const deadline: Verdict = { status: 'timed-out', code: 'deadline', error: 'late' };

describe('finalVerdict: who decides how a run ended', () => {
  const cases: Array<[string, { exit: ProcessExit | undefined; protocolFailure?: Verdict; childExit?: ChildExit; parentVerdict?: Verdict; reachedAgent?: boolean }, object]> = [
    ['a spawn error wins over everything', { exit: spawnError, protocolFailure: fatal, parentVerdict: cancelled }, { status: 'failed', code: 'spawn-failed', fromChild: false }],
    ['a fatal protocol failure wins over the child saying done', { exit: clean, protocolFailure: fatal, childExit: { status: 'done' } }, { status: 'failed', code: 'version-mismatch' }],
    ['the child finishing done while being cancelled did finish', { exit: clean, childExit: { status: 'done' }, parentVerdict: cancelled }, { status: 'done', fromChild: true }],
    ['a child cancelled as asked keeps the parent code, its own error', { exit: clean, childExit: { status: 'cancelled', error: 'stopped' }, parentVerdict: cancelled }, { status: 'cancelled', code: 'aborted', error: 'stopped' }],
    ['a child status the parent did not ask for is child-error', { exit: clean, childExit: { status: 'failed' }, parentVerdict: cancelled }, { status: 'failed', code: 'child-error', error: 'the child exited failed' }],
    ['a driver code (HEP exit 64) is kept', { exit: { exitCode: 64, signal: null }, childExit: { status: 'failed', code: 'usage-error', error: 'usage' } }, { status: 'failed', code: 'usage-error' }],
    ['without a child exit the parent reason stands', { exit: killed, parentVerdict: deadline }, { status: 'timed-out', code: 'deadline' }],
    ['otherwise a crash', { exit: killed }, { status: 'failed', code: 'no-exit-event', error: 'the child was killed by SIGKILL without an exit event' }],
    ['a run without a process whose peer left', { exit: undefined }, { status: 'failed', code: 'no-exit-event', error: 'the connection to the child ended without an exit' }],
    ['never ready: a done is not believed, the parent reason stands', { exit: undefined, childExit: { status: 'done' }, parentVerdict: deadline, reachedAgent: false }, { status: 'timed-out', code: 'deadline', fromChild: false }],
    ['never ready, no parent reason: done is a protocol error', { exit: clean, childExit: { status: 'done' }, reachedAgent: false }, { status: 'failed', code: 'protocol-error', fromChild: false }],
    ['never ready: a child cancelled as asked is still cancelled', { exit: clean, childExit: { status: 'cancelled' }, parentVerdict: cancelled, reachedAgent: false }, { status: 'cancelled', code: 'aborted' }],
  ];
  it.each(cases)('%s', (_name, inputs, expected) => {
    expect(finalVerdict({ command: 'fa', protocolFailure: undefined, childExit: undefined, parentVerdict: undefined, reachedAgent: true, ...inputs })).toMatchObject(expected);
  });
});

describe('buildOutcome', () => {
  const report = { exitCode: 0, signal: null, killed: false, escalated: false, outputTail: 'tail' };
  const base = { runId: 'r', protocol: 'fen', model: undefined, report, turns: 2, rejectedLines: 0, durationMs: 5, turnUsage: { inputTokens: 3 }, fields: {} };

  it('done with an answer: no error, the result usage wins over the turn sums', () => {
    const outcome = buildOutcome({
      ...base,
      verdict: { status: 'done', code: 'child-error', error: '', fromChild: true },
      answer: { finalText: 'hi', truncated: false },
      result: { stopReason: 'stop', usage: { inputTokens: 9 } },
    });
    expect(outcome).toMatchObject({ status: 'done', finalText: 'hi', truncated: false, stopReason: 'stop', usage: { inputTokens: 9 }, outputTail: 'tail' });
    expect(outcome.error).toBeUndefined();
  });

  it('done without a result: the missing answer is marked truncated, usage from the turns', () => {
    const outcome = buildOutcome({ ...base, verdict: { status: 'done', code: 'child-error', error: '', fromChild: true }, answer: undefined, result: undefined });
    expect(outcome).toMatchObject({ truncated: true, truncationNote: 'the child exited done without sending a result', usage: { inputTokens: 3 } });
  });

  it('a failure carries its error and code; spawnFailed only for spawn-failed', () => {
    const failed = buildOutcome({ ...base, verdict: { status: 'failed', code: 'spawn-failed', error: 'nope', fromChild: false }, answer: undefined, result: undefined });
    expect(failed).toMatchObject({ status: 'failed', error: 'nope', errorCode: 'spawn-failed', spawnFailed: true, truncated: false });
  });

  it('carries the protocol, the model named, and what the budget and the output schema add', () => {
    const outcome = buildOutcome({
      ...base,
      model: 'fake-1',
      verdict: { status: 'done', code: 'child-error', error: '', fromChild: true },
      answer: { finalText: '{"a":1}', truncated: false },
      result: undefined,
      fields: { data: { a: 1 }, budget: { limits: { maxTurns: 3 }, used: { turns: 2 } } },
    });
    expect(outcome).toMatchObject({ protocol: 'fen', model: 'fake-1', data: { a: 1 }, budget: { limits: { maxTurns: 3 }, used: { turns: 2 } } });
  });
});

describe('usage', () => {
  it('toUsage: every known spelling lands in one camelCase field; the rest stays under other', () => {
    expect(toUsage({ input: 812, output: 64, 'cache-read': 5, cost: { total: 0.0031, input: 0.002 } })).toEqual({
      inputTokens: 812, outputTokens: 64, cacheReadTokens: 5, costUsd: 0.0031, other: { cost: { input: 0.002 } },
    });
    expect(toUsage({ input: 1000, output: 20, cost: 0.0033 })).toEqual({ inputTokens: 1000, outputTokens: 20, costUsd: 0.0033 });
    expect(toUsage({ inputTokens: 10, outputTokens: null, cachedInputTokens: 4 })).toEqual({ inputTokens: 10, cacheReadTokens: 4 });
    expect(toUsage({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cache_creation_input_tokens: 7, reasoning: 9 })).toEqual({
      inputTokens: 1, outputTokens: 2, totalTokens: 3, cacheWriteTokens: 7, other: { reasoning: 9 },
    });
  });

  it('toUsage: hostile values are kept as data under other, never as a count or a prototype', () => {
    const usage = toUsage(JSON.parse('{"input":"lots","output":1e999,"__proto__":{"polluted":1},"model":"m"}'));
    expect(usage.inputTokens).toBeUndefined();
    expect(usage.other?.['input']).toBe('lots');
    expect(Object.getPrototypeOf(usage.other)).toBe(Object.prototype);
    expect(Object.hasOwn(usage.other!, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('cost sums carry no floating point noise (0.1 + 0.2 is 0.3), from two spellings of one field too; token counts stay exact', () => {
    expect(addUsage(addUsage({}, { costUsd: 0.1 }), { costUsd: 0.2 }).costUsd).toBe(0.3);
    expect(toUsage({ cost: 0.1, cost_usd: 0.2 }).costUsd).toBe(0.3);
    expect(toUsage({ cost: { total: 0.1 }, costUsd: 0.2 }).costUsd).toBe(0.3);
    expect(addUsage({ inputTokens: 2 ** 52 }, { inputTokens: 1 }).inputTokens).toBe(2 ** 52 + 1);
  });

  it('addUsage sums every field and the numbers under other; totalTokens is input + output, else the child total', () => {
    const total = addUsage(addUsage({}, { inputTokens: 1, costUsd: 0.5, other: { steps: 1, model: 'a' } }), { inputTokens: 2, outputTokens: 3, other: { steps: 2, model: 'b' } });
    expect(total).toEqual({ inputTokens: 3, outputTokens: 3, costUsd: 0.5, other: { steps: 3, model: 'a' } });
    expect(totalTokens(total)).toBe(6);
    expect(totalTokens({ totalTokens: 40 })).toBe(40);
    expect(totalTokens({ costUsd: 1 })).toBeUndefined();
    expect(totalTokens(undefined)).toBeUndefined();
  });
});
