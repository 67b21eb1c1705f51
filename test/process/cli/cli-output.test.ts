// supervise against real fake children: each output mode, each task source, each run exit code, and a 1 MiB answer
// arriving whole through a pipe. Every test checks that no process of the child's tree outlives the CLI. main() runs
// in this process where a real CLI process proves nothing more; the bin is run for a failed run's exit code, a
// terminal and a pipe.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scenario } from '../../../src/testing/index.js';
import { runMain, runMainWithEnv } from '../../helpers/cli-main.js';
import { CLI, fakeSet, hasScript, jsonLines, runCli, survivorsOf } from '../../helpers/cli-run.js';
import type { CliFake, CliResult } from '../../helpers/cli-run.js';

const execFileAsync = promisify(execFile);
// Made in a hook, not while vitest collects: a run that only lists or filters the tests runs no hook to remove it.
let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'cli-output-test-'));
});
const { fake, cleanup: cleanupFakes } = fakeSet();

afterAll(() => {
  cleanupFakes();
  rmSync(scratch, { recursive: true, force: true });
});

/** supervise's main() in this process on `child`. */
function superviseIn(child: CliFake, args: readonly string[], input?: string): Promise<CliResult> {
  return runMainWithEnv(child.env, [...args, ...child.command], input === undefined ? {} : { input });
}

const ANSWER = 'The answer: 42 — with ✓ and 😀, on\ntwo lines.';
const answering: Scenario = {
  turns: [{ steps: [{ thinking: 'Thinking it over.', chunks: 2 }, { tool: 'read_file', arguments: { path: 'x' }, result: 'ok' }], answer: ANSWER }],
};

describe('output modes', () => {
  it('text: stdout is exactly the answer, progress notes go to stderr, exit 0', async () => {
    const child = fake(answering);
    const result = await superviseIn(child, ['--task', 'Answer it']);
    expect(result.stdout.toString('utf8')).toBe(ANSWER);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/supervise: run \S+ started \(pid \d+\)/);
    expect(result.stderr).toContain('supervise: turn 1 started');
    expect(result.stderr).toContain('supervise: tool read_file');
    expect(result.stderr).toMatch(/supervise: run done \(1 turn, \d+ tokens, [\d.]+s\)/);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('events: every stdout line is a JSON event in camelCase, ending with exit then the outcome', async () => {
    const child = fake(answering);
    const result = await superviseIn(child, ['--output', 'events', '--task', 'Answer it']);
    expect(result.code).toBe(0);
    const lines = jsonLines(result.stdout);
    const types = lines.map((line) => line.type);
    expect(types).toContain('ready');
    expect(types).toContain('turn-started');
    expect(types).toContain('tool-call');
    expect(types).toContain('control-ack');
    expect(types.slice(-3)).toEqual(['result', 'exit', 'outcome']);
    const turnComplete = lines.find((line) => line.type === 'turn-complete');
    expect(turnComplete).toHaveProperty('stopReason');
    expect(turnComplete).not.toHaveProperty('stop-reason');
    const outcome = lines.at(-1);
    expect(outcome).toMatchObject({ type: 'outcome', status: 'done', finalText: ANSWER, truncated: false });
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('json: stdout is the outcome object, once', async () => {
    const child = fake(answering);
    const result = await superviseIn(child, ['-o', 'json', '--run-id', 'json-mode-run', '--task', 'Answer it']);
    expect(result.code).toBe(0);
    const lines = jsonLines(result.stdout);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ runId: 'json-mode-run', status: 'done', finalText: ANSWER, truncated: false, turns: 1, killed: false });
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('--quiet: nothing on stderr for a run that ends done; how it ended, with its error, for one that does not', async () => {
    const child = fake(answering);
    const result = await superviseIn(child, ['-q', '--task', 'Answer it']);
    expect(result.code).toBe(0);
    expect(result.stdout.toString('utf8')).toBe(ANSWER);
    expect(result.stderr).toBe('');
    const crashed = await superviseIn(fake('crash'), ['-q', '--task', 'Answer it']);
    expect(crashed.code).toBe(1);
    expect(crashed.stderr).toMatch(/^supervise: run failed \(.*\): /);
  });
});

describe('live progress on a terminal', () => {
  it.runIf(hasScript)('draws a status line (state, turn, tool, tokens, elapsed) and clears it before the answer', async () => {
    const child = fake({
      turns: [{ steps: [{ tool: 'read_file', durationMs: 600 }, { text: 'Streaming. ', chunks: 4, ms: 400 }], answer: ANSWER }],
    });
    const env = { ...process.env, ...child.env };
    const command = [process.execPath, CLI, '--task', 'Answer it', ...child.command].map((arg) => `'${arg}'`).join(' ');
    // script(1) runs the CLI on a pseudo-terminal: stderr (and stdout) are a TTY, merged into script's stdout. The
    // pseudo-terminal starts at 0 rows, where log-update draws nothing: give it a real size first.
    const { stdout } = await execFileAsync('script', ['-qec', `stty rows 24 cols 160; ${command}`, '/dev/null'], { env });
    expect(stdout).toMatch(/supervise: (starting|ready|running) · (no turn yet|turn 1)/);
    expect(stdout).toMatch(/turn 1 · tool read_file · \d+ tokens · \d+\.\ds/);
    // Tokens count live, mid-turn (while the tool runs), not only once the turn completes.
    expect(stdout).toMatch(/turn 1 · tool read_file · [1-9]\d* tokens/);
    expect(stdout).toContain('\u001b['); // log-update's erase sequences
    const afterStatus = stdout.slice(stdout.lastIndexOf('supervise: run done'));
    expect(afterStatus.replace(/\r/g, '')).toContain(ANSWER);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });
});

describe('task sources (an echo child answers with its task)', () => {
  const TASK = 'Summarise «the README» in one line ✓';

  it('--task', async () => {
    const child = fake('echo');
    const result = await superviseIn(child, ['--task', TASK]);
    expect(result.code).toBe(0);
    expect(result.stdout.toString('utf8')).toBe(TASK);
  });

  it('--task-file (its trailing newline dropped)', async () => {
    const child = fake('echo');
    const file = join(scratch, 'task.txt');
    writeFileSync(file, `${TASK}\nsecond line\n\n`);
    const result = await superviseIn(child, ['--task-file', file]);
    expect(result.code).toBe(0);
    expect(result.stdout.toString('utf8')).toBe(`${TASK}\nsecond line`);
  });

  it('standard input, all of it', async () => {
    const child = fake('echo');
    const result = await superviseIn(child, [], `${TASK}\nmore\n`);
    expect(result.code).toBe(0);
    expect(result.stdout.toString('utf8')).toBe(`${TASK}\nmore`);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });
});

describe('exit codes of runs', () => {
  it('1: the run failed (child exits failed); the reason and the child output are on stderr', async () => {
    const child = fake('crash');
    const result = await runCli(['--output', 'json', '--task', 'x', ...child.command], { env: child.env });
    expect(result.code).toBe(1);
    expect(jsonLines(result.stdout)[0]).toMatchObject({ status: 'failed' });
    expect(result.stderr).toMatch(/supervise: run failed/);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('1: the child crashed without an exit event', async () => {
    const child = fake('crash-silent');
    const result = await superviseIn(child, ['--task', 'x']);
    expect(result.code).toBe(1);
    expect(result.stdout.length).toBe(0);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('3: the child command cannot be started', async () => {
    const result = await runMain(['--output', 'json', '--task', 'x', '--', '/nonexistent/agent-binary', '--flag']);
    expect(result.code).toBe(3);
    expect(jsonLines(result.stdout)[0]).toMatchObject({ status: 'failed', spawnFailed: true });
    expect(result.stderr).toMatch(/supervise: run failed/);
  });

  it('124: the run timed out (--timeout), even when the child ignores its deadline', async () => {
    const child = fake('ignore-deadline');
    const started = Date.now();
    const result = await superviseIn(child, ['--timeout', '1s', '--grace', '300ms', '--output', 'json', '--task', 'x']);
    expect(result.code).toBe(124);
    expect(jsonLines(result.stdout)[0]).toMatchObject({ status: 'timed-out' });
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('130: a cancel control cancels the run', async () => {
    const child = fake('slow');
    const controls = join(scratch, 'cancel.txt');
    writeFileSync(controls, 'cancel\n');
    const result = await superviseIn(child, ['--controls', controls, '--output', 'json', '--task', 'x']);
    expect(result.code).toBe(130);
    expect(jsonLines(result.stdout)[0]).toMatchObject({ status: 'cancelled' });
    expect(result.stderr).toMatch(/cancel\.txt:1: cancel accepted \(seq \d+\)/);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('0 with a warning: done but the answer is missing', async () => {
    const child = fake('no-result');
    const result = await superviseIn(child, ['--task', 'x']);
    expect(result.code).toBe(0);
    expect(result.stdout.length).toBe(0);
    expect(result.stderr).toMatch(/supervise: warning: the answer is truncated: \S/);
  });
});

describe('run options', () => {
  it('--state-dir holds the private run directory, removed after the run unless --keep-files', async () => {
    const child = fake('echo');
    const stateDir = mkdtempSync(join(scratch, 'state-'));
    const plain = await superviseIn(child, ['--state-dir', stateDir, '--task', 'one']);
    expect(plain.code).toBe(0);
    expect(readdirSync(stateDir)).toEqual([]);
    const kept = await superviseIn(child, ['--state-dir', stateDir, '--keep-files', '--task', 'two']);
    expect(kept.code).toBe(0);
    const [runDir] = readdirSync(stateDir);
    expect(runDir).toBeDefined();
    expect(kept.stderr).toContain(`--keep-files: the run's control and event files are in ${join(stateDir, runDir as string)}`);
    expect(readdirSync(join(stateDir, runDir as string)).length).toBeGreaterThanOrEqual(2);
  });
});

describe('a 1 MiB answer through a pipe', () => {
  it('arrives whole on stdout: byte count exact through | wc -c, content exact through a pipe', async () => {
    const unit = '€😀a'; // 8 UTF-8 bytes: 131072 of them make exactly 1 MiB
    const expected = unit.repeat(131072);
    const child = fake({ turns: [{ answer: { repeat: unit, bytes: 1024 * 1024 } }] });
    const env = { ...process.env, ...child.env };
    const quoted = [CLI, '--quiet', '--task', 'big', ...child.command].map((arg) => `'${arg}'`).join(' ');
    const counted = await execFileAsync('bash', ['-c', `set -o pipefail; '${process.execPath}' ${quoted} | wc -c`], { env });
    expect(counted.stdout.trim()).toBe(String(1024 * 1024));

    const piped = await runCli(['--quiet', '--task', 'big', ...child.command], { env: child.env });
    expect(piped.code).toBe(0);
    expect(piped.stdout.length).toBe(1024 * 1024);
    expect(piped.stdout.toString('utf8') === expected).toBe(true);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });
});
