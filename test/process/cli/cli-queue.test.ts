// supervise worker and supervise --redis: a worker process from a profiles file, and remote runs that behave like local ones.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveFakeProcesses } from '../../../src/testing/index.js';
import { runMain } from '../../helpers/cli-main.js';
import { runCli, startCli, waitForStderr } from '../../helpers/cli-run.js';
import type { CliRun } from '../../helpers/cli-run.js';
import { cleanupQueueKit, eventually, fakeProfile, pausing, profileOf } from '../../helpers/queue-kit.js';
import { haveRedis, redisClients, startRedis } from '../../helpers/redis-server.js';
import type { RedisServer } from '../../helpers/redis-server.js';

// Without redis-server these are skipped; the suite says so once (test/global-setup.ts).
const redisMissing = !haveRedis();

describe('supervise worker / supervise --redis: usage errors (no Redis needed)', () => {
  it('refuses a queue run without a profile, with a command, or with a bad URL, and a worker without profiles (exit 2)', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--redis', 'redis://127.0.0.1:1', '--queue', 'q', '--task', 'x'], /--profile NAME is missing/],
      [['--redis', 'redis://127.0.0.1:1', '--queue', 'q', '--profile', 'p', '--task', 'x', '--', 'rm', '-rf'], /never a command/],
      [['--redis', 'localhost', '--queue', 'q', '--profile', 'p', '--task', 'x'], /not a redis:\/\/ or rediss:\/\/ URL/],
      [['--redis', 'redis://127.0.0.1:1', '--profile', 'p', '--task', 'x'], /--queue is missing/],
      [['worker', '--redis', 'redis://127.0.0.1:1', '--queue', 'q'], /--profiles FILE is missing/],
      [['worker', '--redis', 'redis://127.0.0.1:1', '--queue', 'q', '--profiles', '/nonexistent.json'], /cannot read the profiles file/],
      [['worker', '--redis', 'redis://127.0.0.1:1', '--queue', 'q', '--profiles', 'x.json', '--shutdown', 'later'], /--shutdown "later"/],
    ];
    for (const [args, message] of cases) {
      const result = await runMain(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    // The same through the bin, once for each command: supervise --redis and supervise worker.
    for (const [args, message] of [cases[0]!, cases[4]!]) {
      const result = await runCli(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
    }
  });
});

describe.skipIf(redisMissing)('supervise worker / supervise --redis on a real Redis', () => {
  let redis: RedisServer;
  let scratch: string;
  let worker: CliRun;
  // Made in beforeAll, never while vitest collects this block: a skipped block runs no hook, so fake
  // children made here would leave their temp files behind on a machine without redis-server.
  let profiles: Record<'echo' | 'demo' | 'slow', ReturnType<typeof fakeProfile>>;
  const queue = 'cli';
  const remote = (...args: string[]) => ['--redis', redis.url, '--queue', queue, ...args];

  beforeAll(async () => {
    profiles = { echo: fakeProfile('echo'), demo: fakeProfile('demo'), slow: fakeProfile(pausing(30_000)) };
    redis = await startRedis();
    scratch = mkdtempSync(join(tmpdir(), 'cli-queue-test-'));
    const file = join(scratch, 'profiles.json');
    writeFileSync(file, JSON.stringify(Object.fromEntries(Object.entries(profiles).map(([name, profile]) => [name, profileOf(profile)]))));
    worker = startCli(['worker', '--redis', redis.url, '--queue', queue, '--profiles', file, '--concurrency', '2']);
    await waitForStderr(worker, (stderr) => /ready on queue cli \(profiles: echo, demo, slow; concurrency 2\)/.test(stderr));
  });

  afterAll(async () => {
    if (worker !== undefined) {
      worker.process.kill('SIGTERM');
      const result = await worker.result;
      expect(result.code).toBe(0);
      expect(result.stderr).toMatch(/SIGTERM: taking no new runs/);
      expect(result.stderr).toMatch(/stopped/);
    }
    await eventually(() => redisClients(redis.port) === 0, 5000, 'Redis connections to close');
    for (const profile of Object.values(profiles)) expect(liveFakeProcesses(profile.token)).toEqual([]);
    cleanupQueueKit();
    rmSync(scratch, { recursive: true, force: true });
    await redis?.dispose();
  });

  it('prints the answer on stdout and exits 0', async () => {
    const result = await runCli(remote('--profile', 'echo', '--task', 'answer me remotely'));
    expect(result.stderr).toMatch(/queued on cli as profile echo/);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('answer me remotely');
    expect(result.stderr).toMatch(/run done/);
  });

  it('-o json prints the outcome; -o events prints the run events, then the outcome', async () => {
    const json = await runCli(remote('--profile', 'echo', '--task', 'as json', '-o', 'json', '--run-id', 'cli-json-1'));
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout.toString())).toMatchObject({ runId: 'cli-json-1', status: 'done', finalText: 'as json' });
    const events = await runCli(remote('--profile', 'echo', '--task', 'as events', '-o', 'events'));
    const lines = events.stdout.toString().trim().split('\n').map((line) => JSON.parse(line) as { type: string });
    expect(lines.map((line) => line.type)).toContain('ready');
    expect(lines.at(-2)?.type).toBe('exit');
    expect(lines.at(-1)).toMatchObject({ type: 'outcome', status: 'done' });
  });

  it('sends the lines of a controls file to the run on the worker and reports their acks', async () => {
    const controls = join(scratch, 'controls.txt');
    writeFileSync(controls, ['steer Mention the tests.', 'bogus line', ''].join('\n'));
    const result = await runCli(remote('--profile', 'demo', '--task', 'Inspect the README', '--controls', controls));
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/controls\.txt:1: steer "Mention the tests\." accepted \(seq \d+\)/);
    expect(result.stderr).toMatch(/controls\.txt:1: steer \(seq \d+\) injected/);
    expect(result.stderr).toMatch(/controls\.txt:2: skipped: unknown control "bogus"/);
  });

  it('exits 3 for an unknown profile, naming the profiles the worker has', async () => {
    const result = await runCli(remote('--profile', 'nope', '--task', 'x'));
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/unknown profile "nope"/);
  });

  it('SIGTERM cancels the remote run on the worker (exit 130)', async () => {
    const run = startCli(remote('--profile', 'slow', '--task', 'forever'));
    await waitForStderr(run, (stderr) => /attempt 1 started on worker/.test(stderr));
    await eventually(() => liveFakeProcesses(profiles.slow.token).length > 0, 10_000, 'the child to run on the worker');
    run.process.kill('SIGTERM');
    const result = await run.result;
    expect(result.code).toBe(130);
    expect(result.stderr).toMatch(/run cancelled/);
    await eventually(() => liveFakeProcesses(profiles.slow.token).length === 0, 10_000, 'the child to be gone');
  });
});
