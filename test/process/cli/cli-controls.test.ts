// supervise --controls: from a file, from a named pipe written by other processes during the run, and from stdin;
// acks and deliveries reported on stderr and as supervise-* event lines; invalid lines reported and skipped.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scenario } from '../../../src/testing/index.js';
import { fakeSet, jsonLines, ROOT, runCli, startCli, survivorsOf, waitForStderr } from '../../helpers/cli-run.js';

const execFileAsync = promisify(execFile);
// Made in a hook, not while vitest collects: a run that only lists or filters the tests runs no hook to remove it.
let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'cli-controls-test-'));
});
const { fake, cleanup: cleanupFakes } = fakeSet();

afterAll(() => {
  cleanupFakes();
  rmSync(scratch, { recursive: true, force: true });
});


/** A turn of many short pauses: steers are injected after each one, and cancel/finalize land within 300 ms. */
const patient: Scenario = {
  turns: [{ steps: Array.from({ length: 100 }, () => ({ pause: 300 })), answer: 'the long answer' }],
  finalTurn: { answer: { echo: true, prefix: 'Final: ' } },
};

/** Another process writes one line into the pipe and closes it, as `echo ... > fifo` does. */
function writeFromAnotherProcess(fifo: string, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const writer = spawn('sh', ['-c', 'printf "%s\\n" "$1" > "$2"', 'writer', line, fifo], { stdio: 'ignore' });
    writer.once('error', reject);
    writer.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer exited ${code}`))));
  });
}

describe('controls from a file', () => {
  it('sends each control, reports its ack and delivery on stderr and as events, skips invalid lines', async () => {
    const child = fake('demo');
    const controls = join(scratch, 'controls.txt');
    writeFileSync(
      controls,
      ['# a comment', 'steer Mention the tests.', 'bogus line', '{"type":"steer","text":"And the license."}', 'steer', ''].join('\n'),
    );
    const result = await runCli(['--output', 'events', '--controls', controls, '--task', 'Inspect the README', ...child.command], {
      env: child.env,
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/controls\.txt:2: steer "Mention the tests\." accepted \(seq \d+\)/);
    expect(result.stderr).toMatch(/controls\.txt:2: steer \(seq \d+\) injected/);
    expect(result.stderr).toMatch(/controls\.txt:3: skipped: unknown control "bogus"/);
    expect(result.stderr).toMatch(/controls\.txt:4: steer "And the license\." accepted/);
    expect(result.stderr).toMatch(/controls\.txt:5: skipped: steer needs a non-empty text/);

    const lines = jsonLines(result.stdout);
    const local = lines.filter((line) => typeof line.type === 'string' && line.type.startsWith('supervise-'));
    expect(local).toContainEqual({ type: 'supervise-invalid-control', line: 3, reason: expect.stringContaining('unknown control') });
    expect(local).toContainEqual({ type: 'supervise-invalid-control', line: 5, reason: 'steer needs a non-empty text' });
    const ack = local.find((line) => line.type === 'supervise-control' && line.line === 2);
    expect(ack).toMatchObject({ control: 'steer', status: 'accepted', seq: expect.any(Number) });
    expect(local).toContainEqual({ type: 'supervise-delivery', line: 2, control: 'steer', seq: ack?.seq, delivery: 'injected' });
    const injected = lines.find((line) => line.type === 'steering-injected' && line.ref === ack?.seq);
    expect(injected).toBeDefined();
    expect(lines.at(-1)).toMatchObject({ type: 'outcome', status: 'done' });
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('a control the run refuses locally (after it ended) is reported, never fatal', async () => {
    const child = fake('echo');
    const controls = join(scratch, 'late.txt');
    writeFileSync(controls, 'steer too early or too late\n');
    const result = await runCli(['--controls', controls, '--task', 'hi', ...child.command], { env: child.env });
    expect(result.code).toBe(0);
    expect(result.stdout.toString('utf8')).toBe('hi');
    expect(result.stderr).toMatch(/late\.txt:1: steer "too early or too late" (accepted|rejected|refused|applied|unanswered)/);
  });
});

describe('controls through a named pipe', () => {
  it('steers a running child from other processes, across writers closing and reopening the pipe', async () => {
    const child = fake(patient);
    const fifo = join(scratch, 'steer.fifo');
    execFileSync('mkfifo', [fifo]);
    const run = startCli(['--controls', fifo, '--task', 'work slowly', ...child.command], { env: child.env });
    await waitForStderr(run, (stderr) => stderr.includes('turn 1 started'));

    await writeFromAnotherProcess(fifo, 'steer look at docs/ first');
    await waitForStderr(run, (stderr) => /steer\.fifo:1: steer "look at docs\/ first" accepted/.test(stderr));
    await waitForStderr(run, (stderr) => /steer\.fifo:1: steer \(seq \d+\) injected/.test(stderr));

    await writeFromAnotherProcess(fifo, '{"type":"finalize","note":"wrap up now"}');
    const result = await run.result;
    expect(result.stderr).toMatch(/steer\.fifo:2: finalize "wrap up now" accepted/);
    expect(result.code).toBe(0);
    expect(result.stdout.toString('utf8')).toBe('Final: wrap up now');
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('a pipe nobody ever writes to does not keep supervise alive after the run', async () => {
    const child = fake('echo');
    const fifo = join(scratch, 'silent.fifo');
    execFileSync('mkfifo', [fifo]);
    const result = await runCli(['--controls', fifo, '--task', 'quick', ...child.command], { env: child.env });
    expect(result.code).toBe(0);
    expect(result.stdout.toString('utf8')).toBe('quick');
  });
});

describe('npm run demo', () => {
  it('shows a live run, a steer acked and injected, and the answer, within seconds', async () => {
    const started = Date.now();
    const { stdout, stderr } = await execFileAsync('npm', ['run', '--silent', 'demo'], { cwd: ROOT });
    expect(stderr).toMatch(/examples\/demo-controls\.txt:\d+: steer "Also say how the tests are run\." accepted \(seq \d+\)/);
    expect(stderr).toMatch(/examples\/demo-controls\.txt:\d+: steer \(seq \d+\) injected/);
    expect(stderr).toMatch(/run done \(1 turn/);
    // The answer acknowledges the steer from examples/demo-controls.txt.
    expect(stdout).toMatch(/^The README introduces subvisor[^]*Your steer reached me mid-turn: "Also say how the tests are run\."\.$/);
    // No build log and no npm noise: stderr holds only supervise's own lines.
    expect(stderr.trim().split('\n').filter((line) => !line.startsWith('supervise: '))).toEqual([]);
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});

describe('controls from standard input', () => {
  it("--controls - reads them from stdin when the task came from --task", async () => {
    const child = fake(patient);
    const result = await runCli(['--controls', '-', '--task', 'work', ...child.command], {
      env: child.env,
      input: 'steer from stdin\nfinalize\n',
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/\bstdin:1: steer "from stdin" accepted/);
    expect(result.stderr).toMatch(/\bstdin:2: finalize (accepted|applied)/);
    expect(result.stdout.toString('utf8')).toMatch(/^Final: /);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });
});
