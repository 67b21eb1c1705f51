// supervise --tasks end to end: one JSON outcome line per task as each finishes, bad lines reported, the exit code
// of the worst outcome, --parallel bounding live trees (/proc), stdin as the tasks source, SIGINT once and twice.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../../src/cli/args.js';
import { parseTaskLine } from '../../../src/cli/task-line.js';
import { fakeChild, liveFakeProcesses, waitUntilGone } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { runMain, runMainWithEnv } from '../../helpers/cli-main.js';
import { CLI, hasScript, jsonLines, runCli, startCli, waitForStderr, waitForStdout } from '../../helpers/cli-run.js';
import { cleanupPoolKit, liveTrees, sampleLiveTrees } from '../../helpers/pool-kit.js';

/** One fake child whose scenario each task picks through its env (`SUBVISOR_FAKE_SCENARIO`). */
const kit = fakeChild('echo', { turnTickMs: 5, idleTickMs: 20, transcript: false });
// The kit's arguments with the scenario reference (the last one) replaced by `env`.
const COMMAND = ['--', kit.command, ...kit.args.slice(0, -1), 'env'];
const ENV = { ...kit.env, SUBVISOR_FAKE_SCENARIO: JSON.stringify({ name: 'echo' }) };
/** Directories holding the tasks files (not run state: the supervised runs must leave nothing behind). */
const taskDirs: string[] = [];
afterAll(() => {
  kit.cleanup();
  for (const dir of taskDirs) rmSync(dir, { recursive: true, force: true });
  cleanupPoolKit();
});

const PATIENT: Scenario = { name: 'patient', turns: [{ steps: Array.from({ length: 100 }, () => ({ pause: 300 })) }] };
const STUBBORN: Scenario = { name: 'stubborn', ignore: ['cancel', 'sigterm'], turns: [{ steps: [{ pause: 60_000 }] }] };

function taskLine(id: string | number, task: string, scenario?: Scenario, extra: Record<string, unknown> = {}): string {
  const env = scenario === undefined ? {} : { env: { SUBVISOR_FAKE_SCENARIO: JSON.stringify(scenario) } };
  return JSON.stringify({ id, task, ...env, ...extra });
}

function tasksFile(lines: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'subvisor-batch-tasks-'));
  taskDirs.push(dir);
  const path = join(dir, 'tasks.jsonl');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

async function waitForTrees(count: number): Promise<void> {
  const until = Date.now() + 30_000;
  while (liveTrees(new Set([kit.token])).size < count) {
    if (Date.now() > until) throw new Error(`never saw ${count} live trees`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('task lines', () => {
  it('accepts a plain line as its task, a JSON string or an object, and reports every mistake', () => {
    expect(parseTaskLine('"do it"', 3)).toEqual({ kind: 'task', task: { id: 3, task: 'do it', env: {} } });
    // Only a line starting with { or " is JSON; any other line is the task as written (trimmed).
    expect(parseTaskLine('  Summarise the README \r', 4)).toEqual({ kind: 'task', task: { id: 4, task: 'Summarise the README', env: {} } });
    expect(parseTaskLine('[WIP] fix the "parser" {soon}', 5)).toEqual({ kind: 'task', task: { id: 5, task: '[WIP] fix the "parser" {soon}', env: {} } });
    expect(parseTaskLine('42', 6)).toEqual({ kind: 'task', task: { id: 6, task: '42', env: {} } });
    expect(parseTaskLine('{"id":"a","task":"t","env":{"K":"v"},"timeout":"2m"}', 1)).toEqual({
      kind: 'task',
      task: { id: 'a', task: 't', env: { K: 'v' }, timeoutMs: 120_000 },
    });
    expect(parseTaskLine('{"task":"t","timeout":30}\r', 2)).toMatchObject({ task: { timeoutMs: 30_000 } });
    // 0 is no deadline, as with --timeout 0 and timeout(1).
    expect(parseTaskLine('{"task":"t","timeout":0}', 2)).toMatchObject({ task: { timeoutMs: Infinity } });
    expect(parseTaskLine('   ', 1)).toEqual({ kind: 'skip' });
    for (const [line, reason] of [
      ['{"task": oops}', /^line 1 starts with \{ but is not JSON/],
      ['"unterminated', /^line 1 starts with " but is not JSON/],
      ['{"task":"t","env":{"KEY":"sk-secret"}', /^line 1 starts with \{ but is not JSON: /],
      ['""', /non-empty string/],
      ['{"id":"a"}', /"task"/],
      ['{"task":"t","extra":1}', /unknown field "extra"/],
      ['{"task":"t","env":{"K":1}}', /"env"."K" must be a string/],
      ['{"task":"t","env":{"FEN_WIRE_RUN_ID":"x"}}', /FEN_WIRE_/],
      ['{"task":"t","timeout":"soon"}', /not a duration/],
      ['{"task":"t","id":{}}', /"id"/],
    ] as const) {
      expect(parseTaskLine(line, 1), line).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(reason) });
    }
    // A broken line's error names its line, not its text (an env value may be a secret).
    expect(parseTaskLine('{"task":"t","env":{"KEY":"sk-secret"}', 9)).toMatchObject({ reason: expect.not.stringContaining('sk-secret') });
    expect(parseTaskLine('{"task":"t","env":{"KEY":"sk-secret"}', 9)).toMatchObject({ reason: expect.stringMatching(/^line 9 /) });
  });

  it('--tasks and --parallel are checked with the other options', () => {
    expect(parseCommandLine(['--tasks', 'f', '--parallel', '3', '--', 'x'])).toMatchObject({ options: { tasks: 'f', parallel: 3 } });
    for (const argv of [
      ['--parallel', '2', '--task', 't', '--', 'x'],
      ['--tasks', 'f', '--task', 't', '--', 'x'],
      ['--tasks', 'f', '--controls', 'c', '--', 'x'],
      ['--tasks', 'f', '-o', 'text', '--', 'x'],
      ['--tasks', 'f', '--parallel', '0', '--', 'x'],
      ['--tasks', 'f', '--parallel', 'two', '--', 'x'],
      ['--tasks', '', '--', 'x'],
      ['--warm', '2', '--task', 't', '--', 'x'],
      ['--tasks', 'f', '--warm', '-1', '--', 'x'],
      ['--tasks', 'f', '--warm', 'many', '--', 'x'],
    ]) {
      expect(() => parseCommandLine(argv), argv.join(' ')).toThrow();
    }
    expect(parseCommandLine(['--tasks', 'f', '--warm', '2', '--', 'x'])).toMatchObject({ options: { warm: 2 } });
  });
});

describe('supervise --tasks', () => {
  it('takes a plain tasks file, one task per line as written', async () => {
    const file = tasksFile(['Summarise the README', 'List the docs pages', '  Count the tests  ']);
    const result = await runMainWithEnv(ENV, ['--tasks', file, ...COMMAND]);
    expect(result.code).toBe(0);
    const byLine = new Map(jsonLines(result.stdout).map((line) => [line['line'], line]));
    expect([...byLine.keys()].sort()).toEqual([1, 2, 3]);
    expect(byLine.get(1)).toMatchObject({ id: 1, status: 'done', finalText: 'Summarise the README' });
    expect(byLine.get(2)).toMatchObject({ id: 2, status: 'done', finalText: 'List the docs pages' });
    expect(byLine.get(3)).toMatchObject({ id: 3, status: 'done', finalText: 'Count the tests' });
  });

  it('writes one JSON line per task as each finishes, reports bad lines, exits with the worst outcome', async () => {
    const file = tasksFile([
      '"plain string task"',
      taskLine('crash', 'boom', { name: 'crash', turns: [{ steps: [{ misbehave: { crash: { code: 2 } } }] }] }),
      '{"id": "broken", "task": "no closing brace"',
      taskLine('slow', 'too slow', PATIENT, { timeout: '1s' }),
      '',
      taskLine('crash', 'duplicate id'),
      taskLine('ok', 'fine'),
    ]);
    const result = await runMainWithEnv(ENV, ['--tasks', file, '--parallel', '2', '--grace', '200ms', ...COMMAND]);
    const lines = jsonLines(result.stdout);
    const byLine = new Map(lines.map((line) => [line['line'], line]));
    expect(lines).toHaveLength(6);
    expect(byLine.get(1)).toMatchObject({ id: 1, status: 'done', finalText: 'plain string task' });
    expect(byLine.get(2)).toMatchObject({ id: 'crash', status: 'failed', errorCode: 'no-exit-event' });
    expect(byLine.get(3)).toMatchObject({ status: 'invalid', error: expect.stringMatching(/^line 3 starts with \{ but is not JSON/) });
    expect(byLine.get(4)).toMatchObject({ id: 'slow', status: 'timed-out' });
    expect(byLine.get(6)).toMatchObject({ id: 'crash', status: 'invalid', error: 'duplicate id "crash"' });
    expect(byLine.get(7)).toMatchObject({ id: 'ok', status: 'done', finalText: 'fine' });
    // A bad task line is the worst here (usage, 2); stderr holds nothing but the summary and the usage when it is not
    // a terminal (the crash reported no usage: the sums are incomplete).
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^supervise: 6 tasks: 2 done, 1 failed, 1 timed out, 0 cancelled, 2 invalid \(lines 3, 6\) \(/),
      expect.stringMatching(/^supervise: usage: 4 runs, \d+ tokens \(in \d+, out \d+\); incomplete: 1 run reported no usage; no cost reported by 3 runs$/),
      expect.stringMatching(/^supervise: {3}by protocol: fen: 4 runs, /),
      expect.stringMatching(/^supervise: {3}by model: fake-1: /),
      expect.stringMatching(/^supervise: {3}by status: .*failed: 1 run, 0 tokens/),
    ]);
    expect(liveFakeProcesses(kit.token)).toEqual([]);

    const noBadLines = tasksFile(['"a"', taskLine('c', 'boom', { name: 'crash', turns: [{ steps: [{ misbehave: { crash: { code: 2 } } }] }] }), taskLine('s', 'slow', PATIENT, { timeout: '1s' })]);
    expect((await runMainWithEnv(ENV, ['--tasks', noBadLines, '--grace', '200ms', ...COMMAND])).code).toBe(1);
    // The bin itself, for the exit code of a batch.
    expect((await runCli(['--tasks', tasksFile(['"a"', '"b"']), ...COMMAND], { env: ENV })).code).toBe(0);
  });

  it('--quiet: no summary for a batch whose tasks all ended done; the summary when one did not', async () => {
    const done = await runMainWithEnv(ENV, ['-q', '--tasks', tasksFile(['"a"', '"b"']), ...COMMAND]);
    expect(done.code).toBe(0);
    expect(jsonLines(done.stdout)).toHaveLength(2);
    expect(done.stderr).toBe('');
    const bad = await runMainWithEnv(ENV, ['-q', '--tasks', tasksFile(['"a"', '{not json']), ...COMMAND]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^supervise: 2 tasks: 1 done, 0 failed, 0 timed out, 0 cancelled, 1 invalid \(line 2\)/);
  });

  it('reads the tasks from standard input with --tasks -', async () => {
    const input = ['"one"', '{"id":"two","task":"second"}', ''].join('\n');
    const result = await runMainWithEnv(ENV, ['--tasks', '-', ...COMMAND], { input });
    expect(result.code).toBe(0);
    expect(jsonLines(result.stdout).map((line) => [line['id'], line['finalText']]).sort()).toEqual([
      [1, 'one'],
      ['two', 'second'],
    ]);
  });

  it('an unreadable tasks file is a usage error before anything starts', async () => {
    const result = await runMain(['--tasks', join(tmpdir(), 'subvisor-no-such-dir', 'missing.jsonl'), ...COMMAND]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('cannot read it (ENOENT)');
  });

  it('--parallel bounds the live process trees', async () => {
    const file = tasksFile(Array.from({ length: 6 }, (_, index) => taskLine(index, `task ${index}`, { name: 'short', turns: [{ steps: [{ pause: 400 }] }] })));
    const sampler = sampleLiveTrees(new Set([kit.token]));
    const result = await runMainWithEnv(ENV, ['--tasks', file, '--parallel', '2', ...COMMAND]);
    const { max, seen } = sampler.stop();
    expect(result.code).toBe(0);
    expect(jsonLines(result.stdout)).toHaveLength(6);
    expect(max).toBe(2);
    expect(seen.size).toBe(6);
  });

  it('--warm: the tasks go to children already waiting, the live trees stay within --parallel, nothing is left', async () => {
    const file = tasksFile(Array.from({ length: 6 }, (_, index) => `"task ${index}"`));
    const sampler = sampleLiveTrees(new Set([kit.token]));
    const result = await runMainWithEnv(ENV, ['--tasks', file, '--parallel', '2', '--warm', '2', ...COMMAND]);
    const { max } = sampler.stop();
    expect(result.code).toBe(0);
    expect(jsonLines(result.stdout).map((line) => line['finalText']).sort()).toEqual(Array.from({ length: 6 }, (_, index) => `task ${index}`));
    expect(max).toBeLessThanOrEqual(2);
    expect(result.stderr).toMatch(/^supervise: 6 tasks: 6 done, 0 failed/);
    expect(await waitUntilGone(() => liveFakeProcesses(kit.token), 5_000)).toEqual([]);
  });

  it("a provider's rate limit reported by a task holds the next ones, and stderr says until when", async () => {
    const refused = 'HTTP 429: {"type":"error","error":{"type":"rate_limit_error"}}';
    const limited: Scenario = { name: 'provider-429', turns: [{ steps: [{ error: refused }], answer: `[error] ${refused}`, stopReason: 'error' }] };
    const file = tasksFile([taskLine('first', 'refused', limited), ...Array.from({ length: 3 }, (_, index) => taskLine(index, `held ${index}`))]);
    const run = startCli(['--tasks', file, '--parallel', '1', '--grace', '300ms', ...COMMAND], { env: ENV });
    await waitForStderr(run, (stderr) => stderr.includes('rate-limited'));
    expect(run.stderrSoFar()).toMatch(/supervise: rate-limited \(HTTP 429 error from run [\w-]+\): no task starts before \d\d:\d\d:\d\d\n/);
    // The gate shuts as the error is read, while the first task still ends its turn: its outcome line comes first.
    await waitForStdout(run, (stdout) => stdout.includes('"id":"first"'));
    run.process.kill('SIGINT');
    const result = await run.result;
    expect(result.code).toBe(130);
    const lines = jsonLines(result.stdout);
    expect(lines.find((line) => line['id'] === 'first')).toMatchObject({ status: 'done' });
    // Held at the gate: never started.
    expect(lines.filter((line) => line['id'] !== 'first').every((line) => line['status'] === 'cancelled' && line['turns'] === 0)).toBe(true);
    expect(await waitUntilGone(() => liveFakeProcesses(kit.token), 5_000)).toEqual([]);
  });

  it('SIGINT once: starts no more tasks, cancels the running ones, one line per task, exit 130', async () => {
    const file = tasksFile(Array.from({ length: 6 }, (_, index) => taskLine(index, `task ${index}`, PATIENT)));
    const run = startCli(['--tasks', file, '--parallel', '2', '--grace', '300ms', ...COMMAND], { env: ENV });
    await waitForTrees(2);
    run.process.kill('SIGINT');
    const result = await run.result;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain('SIGINT: starting no more tasks, cancelling the running ones');
    const lines = jsonLines(result.stdout);
    expect(lines).toHaveLength(6);
    expect(lines.every((line) => line['status'] === 'cancelled')).toBe(true);
    expect(lines.filter((line) => line['exitCode'] === null && line['killed'] === false && line['turns'] === 0)).toHaveLength(4);
    expect(await waitUntilGone(() => liveFakeProcesses(kit.token), 5_000)).toEqual([]);
  });

  it('SIGINT twice: the second kills children that ignore cancel and SIGTERM at once', async () => {
    const file = tasksFile(Array.from({ length: 3 }, (_, index) => taskLine(index, `task ${index}`, STUBBORN)));
    const run = startCli(['--tasks', file, '--parallel', '2', '--grace', '20s', ...COMMAND], { env: ENV });
    await waitForTrees(2);
    run.process.kill('SIGINT');
    await waitForStderr(run, (stderr) => stderr.includes('SIGINT: starting no more tasks'));
    const secondAt = Date.now();
    run.process.kill('SIGINT');
    const result = await run.result;
    expect(Date.now() - secondAt).toBeLessThan(15_000); // the ladder alone would take over 40 s
    expect(result.code).toBe(130);
    expect(result.stderr).toContain("SIGINT again: killing every running task's process tree now");
    const lines = jsonLines(result.stdout);
    expect(lines).toHaveLength(3);
    expect(lines.filter((line) => line['killed'] === true)).toHaveLength(2);
    expect(await waitUntilGone(() => liveFakeProcesses(kit.token), 5_000)).toEqual([]);
  });

  it.runIf(hasScript)('on a terminal: one live counts line (running, queued, done, failed, elapsed), then the summary', async () => {
    const file = tasksFile(Array.from({ length: 4 }, (_, index) => taskLine(index, `task ${index}`, { name: 'short', turns: [{ steps: [{ pause: 600 }] }] })));
    const env = { ...process.env, ...ENV };
    const command = [process.execPath, CLI, '--tasks', file, '--parallel', '2', ...COMMAND].map((arg) => `'${arg}'`).join(' ');
    // script(1) gives the CLI a pseudo-terminal (stdout and stderr merged); log-update needs a real size.
    const { stdout } = await promisify(execFile)('script', ['-qec', `stty rows 24 cols 160; ${command} > /dev/null`, '/dev/null'], { env });
    expect(stdout).toMatch(/supervise: 2 running · 2 queued · 0 done · 0 failed · \d+\.\ds/);
    expect(stdout).toMatch(/supervise: 4 tasks: 4 done, 0 failed, 0 timed out, 0 cancelled \(/);
    expect(stdout).toContain('\u001b[');
  });
});
