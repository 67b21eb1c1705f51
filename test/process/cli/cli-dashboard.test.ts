// supervise dashboard: a --tasks batch with its page (up after the batch until a signal), a queue's page, and the usage errors.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueueSupervisor, startWorker } from '../../../src/queue/index.js';
import { fakeChild } from '../../../src/testing/index.js';
import type { FakeChild } from '../../../src/testing/index.js';
import { call } from '../../helpers/dashboard-client.js';
import { runCli, startCli } from '../../helpers/cli-run.js';
import type { CliRun } from '../../helpers/cli-run.js';
import { eventually, fakeProfile, profileOf, cleanupQueueKit } from '../../helpers/queue-kit.js';
import { haveRedis, startRedis } from '../../helpers/redis-server.js';

/** The URL the command printed, once it has. */
async function printedUrl(cli: CliRun): Promise<string> {
  let url: string | undefined;
  await eventually(() => (url = /dashboard (?:of queue \S+ )?at (http:\/\/\S+)/.exec(cli.stderrSoFar())?.[1]) !== undefined, 20_000, 'the dashboard URL');
  return url!;
}

async function rows(url: string): Promise<Array<{ task: string; status: string | null }>> {
  return (JSON.parse((await call(url, '/api/board')).body) as { rows: Array<{ task: string; status: string | null }> }).rows;
}

let dir: string;
const fakes: FakeChild[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cli-dashboard-'));
});
afterAll(() => {
  for (const fake of fakes) fake.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('supervise dashboard', () => {
  it('refuses a command line that shows nothing, a bad port and a public host', async () => {
    const none = await runCli(['dashboard']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/shows a queue \(--redis URL --queue NAME\) or a batch \(--tasks FILE/);
    expect((await runCli(['dashboard', '--port', 'http', '--tasks', '-', '--', 'true'])).stderr).toMatch(/--port "http" is not a port number/);
    const tasks = join(dir, 'one.jsonl');
    writeFileSync(tasks, '"hello"\n');
    const open = await runCli(['dashboard', '--host', '0.0.0.0', '--tasks', tasks, '--', 'true']);
    expect(open.code).toBe(2);
    expect(open.stderr).toMatch(/cannot serve the dashboard: options.host 0.0.0.0 is not a loopback address/);
  });

  it('serves a batch: its runs on the page, its outcome lines on stdout, the page up after it until SIGINT', async () => {
    const fake = fakeChild('echo', { turnTickMs: 5, idleTickMs: 20 });
    fakes.push(fake);
    const tasks = join(dir, 'tasks.jsonl');
    writeFileSync(tasks, '"Summarise the README"\n{"id": "cli", "task": "Summarise docs/cli.md"}\n');
    const cli = startCli(['dashboard', '--tasks', tasks, '--parallel', '2', '--', fake.command, ...fake.args], { env: fake.env });
    const url = await printedUrl(cli);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/);
    await eventually(() => cli.stderrSoFar().includes('the batch is over; the dashboard stays up'), 20_000, 'the batch to end');
    const shown = await rows(url);
    expect(shown.map((row) => [row.task, row.status]).sort()).toEqual([
      ['Summarise docs/cli.md', 'done'],
      ['Summarise the README', 'done'],
    ]);
    cli.process.kill('SIGINT');
    const result = await cli.result;
    expect(result.code).toBe(0);
    const lines = result.stdout.toString().trim().split('\n').map((line) => JSON.parse(line) as { id: string | number; status: string });
    expect(lines.map((line) => [line.id, line.status]).sort()).toEqual([
      [1, 'done'],
      ['cli', 'done'],
    ]);
    await expect(call(url, '/api/board')).rejects.toThrow(/ECONNREFUSED/);
  });

  it('ends with a batch a signal stopped: no page is left up', async () => {
    const fake = fakeChild({ turns: [{ steps: [{ text: 'working', chunks: 1 }, { pause: 60_000 }] }] }, { turnTickMs: 5, idleTickMs: 20 });
    fakes.push(fake);
    const tasks = join(dir, 'long.jsonl');
    writeFileSync(tasks, '"take your time"\n');
    const cli = startCli(['dashboard', '--tasks', tasks, '--grace', '300ms', '--', fake.command, ...fake.args], { env: fake.env });
    const url = await printedUrl(cli);
    await eventually(async () => (await rows(url)).some((row) => row.task === 'take your time' && row.status === null), 20_000, 'the task to run');
    cli.process.kill('SIGINT');
    const result = await cli.result;
    expect(result.code).toBe(130);
    expect(result.stderr).not.toContain('the dashboard stays up');
    expect(JSON.parse(result.stdout.toString())).toMatchObject({ status: 'cancelled' });
  });

  // Without redis-server this is skipped; the suite says so once (test/global-setup.ts).
  it.skipIf(!haveRedis())("serves a queue's runs until SIGTERM", async () => {
    const redis = await startRedis();
    const worker = startWorker({ connection: redis.url, queue: 'cli-board', profiles: { echo: profileOf(fakeProfile('echo')) } });
    const qs = createQueueSupervisor({ connection: redis.url, queue: 'cli-board' });
    const cli = startCli(['dashboard', '--redis', redis.url, '--queue', 'cli-board']);
    try {
      const url = await printedUrl(cli);
      await Promise.all([worker.ready(), qs.ready()]);
      const run = qs.spawn({ profile: 'echo', task: 'hello, board' });
      await run.outcome;
      await eventually(async () => (await rows(url)).some((row) => row.task === 'hello, board' && row.status === 'done'), 20_000, 'the queued run on the page');
      cli.process.kill('SIGTERM');
      expect((await cli.result).code).toBe(0);
    } finally {
      cli.process.kill('SIGKILL');
      await qs.close();
      await worker.close();
      await redis.dispose();
      cleanupQueueKit();
    }
  });
});
