// supervise and signals and broken pipes: SIGINT/SIGTERM once (cancel, backstop, 130), twice (kill at once), and a
// stdout reader that goes away early (EPIPE: no crash, no hang, run cancelled). Nothing of the child's tree survives.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type { Scenario } from '../../../src/testing/index.js';
import { CLI, fakeSet, jsonLines, startCli, survivorsOf, waitForStderr, type CliFake } from '../../helpers/cli-run.js';

const execFileAsync = promisify(execFile);
const { fake, cleanup: cleanupFakes } = fakeSet();

afterAll(() => {
  cleanupFakes();
});


/** Waits until the fake child's tree has `count` live processes (the child and its grandchildren). */
async function waitForTree(child: CliFake, count: number): Promise<void> {
  const until = Date.now() + 20_000;
  while (child.fake.livePids().length < count) {
    if (Date.now() > until) throw new Error(`the fake child never had ${count} live processes`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const patient: Scenario = { turns: [{ steps: Array.from({ length: 100 }, () => ({ pause: 300 })) }] };
/** Writes an event every 300 ms for 30 s, so a closed stdout is noticed at the next write. */
const ticking: Scenario = { turns: [{ steps: Array.from({ length: 100 }, () => ({ text: 'tick. ', chunks: 1, ms: 300 })) }] };

describe('signals', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`${signal} once: cancels the run, exit 130, no process left`, async () => {
      const child = fake(patient);
      const run = startCli(['--output', 'json', '--task', 'work', ...child.command], { env: child.env });
      await waitForStderr(run, (stderr) => stderr.includes('turn 1 started'));
      run.process.kill(signal);
      const result = await run.result;
      expect(result.code).toBe(130);
      expect(result.stderr).toContain(`${signal}: cancelling the run`);
      expect(jsonLines(result.stdout)[0]).toMatchObject({ status: 'cancelled' });
      expect(await survivorsOf(child.fake)).toEqual([]);
    });
  }

  it('SIGINT twice: the second kills a child that ignores cancel and SIGTERM at once, exit 130', async () => {
    const child = fake('stubborn');
    // A long grace: without the second signal the ladder would take over 40 s.
    const run = startCli(['--grace', '20s', '--output', 'json', '--task', 'work', ...child.command], { env: child.env });
    await waitForStderr(run, (stderr) => stderr.includes('turn 1 started'));
    run.process.kill('SIGINT');
    await waitForStderr(run, (stderr) => stderr.includes('SIGINT: cancelling the run'));
    const secondAt = Date.now();
    run.process.kill('SIGINT');
    const result = await run.result;
    expect(Date.now() - secondAt).toBeLessThan(15_000);
    expect(result.code).toBe(130);
    expect(result.stderr).toContain("SIGINT again: killing the child's process tree now");
    expect(jsonLines(result.stdout)[0]).toMatchObject({ status: 'cancelled', killed: true });
    expect(await survivorsOf(child.fake)).toEqual([]);
  });
});

describe('nothing of the tree survives', () => {
  it('SIGINT once with grandchildren that ignore SIGTERM (one in its own session): the backstop reaps them all', async () => {
    const child = fake('grandchildren');
    const run = startCli(['--grace', '300ms', '--output', 'json', '--task', 'work', ...child.command], { env: child.env });
    await waitForStderr(run, (stderr) => stderr.includes('turn 1 started'));
    await waitForTree(child, 3);
    run.process.kill('SIGINT');
    const result = await run.result;
    expect(result.code).toBe(130);
    expect(jsonLines(result.stdout)[0]).toMatchObject({ status: 'cancelled', killed: true });
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('SIGTERM twice with grandchildren: killed at once, none left', async () => {
    const child = fake('grandchildren');
    const run = startCli(['--grace', '20s', '--output', 'json', '--task', 'work', ...child.command], { env: child.env });
    await waitForStderr(run, (stderr) => stderr.includes('turn 1 started'));
    await waitForTree(child, 3);
    run.process.kill('SIGTERM');
    await waitForStderr(run, (stderr) => stderr.includes('SIGTERM: cancelling the run'));
    run.process.kill('SIGTERM');
    const result = await run.result;
    expect(result.code).toBe(130);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('SIGHUP (the terminal went away) cancels and reaps like SIGTERM', async () => {
    const child = fake(patient);
    const run = startCli(['--task', 'work', ...child.command], { env: child.env });
    await waitForStderr(run, (stderr) => stderr.includes('turn 1 started'));
    run.process.kill('SIGHUP');
    const result = await run.result;
    expect(result.code).toBe(130);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });
});

describe('stdout closed early (EPIPE)', () => {
  it('the reader leaves after the first event line: supervise cancels, reaps and exits without a crash', async () => {
    const child = fake(ticking);
    const run = startCli(['--output', 'events', '--task', 'work', ...child.command], { env: child.env });
    const firstLine = await new Promise<string>((resolve) => {
      let seen = '';
      const stdout = run.process.stdout;
      stdout?.on('data', function onData(chunk: Buffer) {
        seen += chunk.toString('utf8');
        if (seen.includes('\n')) {
          stdout.off('data', onData);
          stdout.destroy();
          resolve(seen.slice(0, seen.indexOf('\n')));
        }
      });
    });
    expect(() => JSON.parse(firstLine)).not.toThrow();
    const result = await run.result;
    expect(result.stderr).not.toMatch(/EPIPE.*\n\s+at /);
    expect(result.stderr).toContain('stdout was closed by its reader; cancelling the run');
    expect(result.code).toBe(130);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });

  it('| head -1 in a shell pipeline ends promptly with one JSON line', async () => {
    const child = fake(ticking);
    const env = { ...process.env, ...child.env };
    const quoted = [CLI, '--output', 'events', '--task', 'work', ...child.command].map((arg) => `'${arg}'`).join(' ');
    const started = Date.now();
    const { stdout, stderr } = await execFileAsync('bash', ['-c', `'${process.execPath}' ${quoted} | head -1; echo "status \${PIPESTATUS[0]}" >&2`], { env });
    expect(stdout.trim().split('\n')).toHaveLength(1);
    expect(() => JSON.parse(stdout)).not.toThrow();
    expect(stderr).toContain('status 130');
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await survivorsOf(child.fake)).toEqual([]);
  });
});
