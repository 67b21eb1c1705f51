// Outcome precedence and the outcome record, as a table of pure cases (no process).
import { describe, expect, it } from 'vitest';
import { buildOutcome, finalVerdict } from '../src/run/outcome.js';
import type { ChildExit, Verdict } from '../src/run/outcome.js';
import type { ProcessExit } from '../src/run/supervised-process.js';

const clean: ProcessExit = { exitCode: 0, signal: null };
const killed: ProcessExit = { exitCode: null, signal: 'SIGKILL' };
const spawnError: ProcessExit = { exitCode: null, signal: null, spawnError: Object.assign(new Error('not found'), { code: 'ENOENT' }) };
const fatal: Verdict = { status: 'failed', code: 'version-mismatch', error: 'v2' };
const cancelled: Verdict = { status: 'cancelled', code: 'aborted', error: 'by the parent' };
const deadline: Verdict = { status: 'timed-out', code: 'deadline', error: 'late' };

describe('finalVerdict: who decides how a run ended', () => {
  const cases: Array<[string, { exit: ProcessExit | undefined; protocolFailure?: Verdict; childExit?: ChildExit; parentVerdict?: Verdict }, object]> = [
    ['a spawn error wins over everything', { exit: spawnError, protocolFailure: fatal, parentVerdict: cancelled }, { status: 'failed', code: 'spawn-failed', fromChild: false }],
    ['a fatal protocol failure wins over the child saying done', { exit: clean, protocolFailure: fatal, childExit: { status: 'done' } }, { status: 'failed', code: 'version-mismatch' }],
    ['the child finishing done while being cancelled did finish', { exit: clean, childExit: { status: 'done' }, parentVerdict: cancelled }, { status: 'done', fromChild: true }],
    ['a child cancelled as asked keeps the parent code, its own error', { exit: clean, childExit: { status: 'cancelled', error: 'stopped' }, parentVerdict: cancelled }, { status: 'cancelled', code: 'aborted', error: 'stopped' }],
    ['a child status the parent did not ask for is child-error', { exit: clean, childExit: { status: 'failed' }, parentVerdict: cancelled }, { status: 'failed', code: 'child-error', error: 'the child exited failed' }],
    ['a driver code (HEP exit 64) is kept', { exit: { exitCode: 64, signal: null }, childExit: { status: 'failed', code: 'usage-error', error: 'usage' } }, { status: 'failed', code: 'usage-error' }],
    ['without a child exit the parent reason stands', { exit: killed, parentVerdict: deadline }, { status: 'timed-out', code: 'deadline' }],
    ['otherwise a crash', { exit: killed }, { status: 'failed', code: 'no-exit-event', error: 'the child was killed by SIGKILL without an exit event' }],
    ['a run without a process whose peer left', { exit: undefined }, { status: 'failed', code: 'no-exit-event', error: 'the connection to the child ended without an exit' }],
  ];
  it.each(cases)('%s', (_name, inputs, expected) => {
    expect(finalVerdict({ command: 'fa', protocolFailure: undefined, childExit: undefined, parentVerdict: undefined, ...inputs })).toMatchObject(expected);
  });
});

describe('buildOutcome', () => {
  const report = { exitCode: 0, signal: null, killed: false, escalated: false, outputTail: 'tail' };
  const base = { runId: 'r', report, turns: 2, rejectedLines: 0, durationMs: 5, turnUsage: { input: 3 } };

  it('done with an answer: no error, the result usage wins over the turn sums', () => {
    const outcome = buildOutcome({
      ...base,
      verdict: { status: 'done', code: 'child-error', error: '', fromChild: true },
      answer: { finalText: 'hi', truncated: false },
      result: { stopReason: 'stop', usage: { input: 9 } },
    });
    expect(outcome).toMatchObject({ status: 'done', finalText: 'hi', truncated: false, stopReason: 'stop', usage: { input: 9 }, outputTail: 'tail' });
    expect(outcome.error).toBeUndefined();
  });

  it('done without a result: the missing answer is marked truncated, usage from the turns', () => {
    const outcome = buildOutcome({ ...base, verdict: { status: 'done', code: 'child-error', error: '', fromChild: true }, answer: undefined, result: undefined });
    expect(outcome).toMatchObject({ truncated: true, truncationNote: 'the child exited done without sending a result', usage: { input: 3 } });
  });

  it('a failure carries its error and code; spawnFailed only for spawn-failed', () => {
    const failed = buildOutcome({ ...base, verdict: { status: 'failed', code: 'spawn-failed', error: 'nope', fromChild: false }, answer: undefined, result: undefined });
    expect(failed).toMatchObject({ status: 'failed', error: 'nope', errorCode: 'spawn-failed', spawnFailed: true, truncated: false });
  });
});
