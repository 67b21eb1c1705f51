// supervise's budget and answer-shape flags end to end: --max-* stop a run (finalized, or exit 4), --output-schema prints the validated value, --tasks prints the usage ledger.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fakeFa } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { runMainWithEnv } from '../../helpers/cli-main.js';
import { fakeSet, jsonLines } from '../../helpers/cli-run.js';

const fakes = fakeSet();
const dirs: string[] = [];
const hep = fakeFa({ rounds: Array.from({ length: 100 }, () => ({ steps: [{ tool: 'grep', durationMs: 5 }] })) });
afterAll(() => {
  fakes.cleanup();
  hep.cleanup();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A file holding `text`, in a directory removed after the file's tests. */
function file(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'subvisor-cli-budget-'));
  dirs.push(dir);
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const TOOL_LOOP: Scenario = {
  turns: [{ steps: Array.from({ length: 200 }, () => ({ tool: 'grep', durationMs: 5 })), answer: 'never reached' }],
  finalTurn: { answer: 'Stopped early: 5 matches.' },
};
const PERSON = JSON.stringify({ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] });

describe('supervise --max-*', () => {
  it('a Fen child that would call tools forever is finalized at --max-tool-calls: exit 0, its answer, the reason on stderr', async () => {
    const child = fakes.fake(TOOL_LOOP);
    const result = await runMainWithEnv(child.env, ['--max-tool-calls', '5', '--task', 'find them all', ...child.command]);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('Stopped early: 5 matches.');
    expect(result.stderr).toContain("supervise: the budget's maxToolCalls was reached: the run was asked for its answer (finalize)");
  });

  it('a HEP child (no finalize) is cancelled at the limit: exit 4, the budget in the error', async () => {
    const result = await runMainWithEnv(hep.env, ['--protocol', 'hep', '--max-tool-calls', '3', '--task', 'find them all', '-o', 'json', '--', hep.command, ...hep.args]);
    expect(result.code).toBe(4);
    const [outcome] = jsonLines(result.stdout);
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'budget-exceeded', budget: { exceeded: { limit: 'maxToolCalls', action: 'cancel' } } });
    expect(result.stderr).toMatch(/supervise: run cancelled \(.*\): the run reached its budget: maxToolCalls 3 \(3 tool calls\)/);
  });
});

describe('supervise --output-schema', () => {
  it('prints the validated value as one line of JSON', async () => {
    const child = fakes.fake({ turns: [{ answer: 'Sure:\n```json\n{"name": "Ada"}\n```' }] });
    const result = await runMainWithEnv(child.env, ['--output-schema', file('person.json', PERSON), '--task', 'Who?', ...child.command]);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('{"name":"Ada"}\n');
  });

  it('an answer still invalid after the repair turn: exit 1, nothing on stdout, the errors on stderr', async () => {
    const child = fakes.fake({ turns: [{ answer: '{"nom": "Ada"}' }] });
    const result = await runMainWithEnv(child.env, ['--output-schema', file('person.json', PERSON), '--task', 'Who?', ...child.command]);
    expect(result.code).toBe(1);
    expect(result.stdout.length).toBe(0);
    expect(result.stderr).toContain("the answer does not match outputSchema after the repair turn: (the value): must have required property 'name'");
  });
});

describe('supervise --tasks with a total budget', () => {
  it('stops starting tasks once the total is spent, and prints the usage ledger at the end (not with -q)', async () => {
    const paid = fakes.fake({ turns: [{ answer: { echo: true }, usage: { input: 100, output: 10, cost: { total: 0.4 } } }] });
    const tasks = file('tasks.jsonl', ['"a"', '"b"', '"c"', '"d"'].join('\n'));
    const result = await runMainWithEnv(paid.env, ['--tasks', tasks, '--parallel', '1', '--max-total-cost', '0.7', ...paid.command]);
    expect(result.code).toBe(4);
    // Each line as its task ends: the queued ones end as soon as the total is spent, before the run that spent it.
    const lines = jsonLines(result.stdout).sort((a, b) => (a['id'] as number) - (b['id'] as number));
    expect(lines.map((line) => [line['id'], line['status'], line['errorCode'] ?? null])).toEqual([
      [1, 'done', null],
      [2, 'done', null],
      [3, 'cancelled', 'budget-exceeded'],
      [4, 'cancelled', 'budget-exceeded'],
    ]);
    expect(result.stderr).toMatch(/^supervise: usage: 4 runs, \d+ tokens \(in \d+, out \d+\), \$0\.8000$/m);
    expect(result.stderr).toMatch(/^supervise: {3}by protocol: fen: 4 runs, /m);
    expect(result.stderr).toMatch(/^supervise: {3}by status: done: 2 runs, .*; cancelled: 2 runs, 0 tokens/m);
    const quiet = await runMainWithEnv(paid.env, ['-q', '--tasks', tasks, '--parallel', '1', '--max-total-cost', '5', ...paid.command]);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
  });
});
