// spawnRun({ protocol: 'mew', command, args, url }): the daemon as a supervised child, connected once it listens, reaped at the end.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { spawnRun } from '../../../../src/api/spawn-run.js';
import { isAlive } from '../../../../src/testing/liveness.js';
import { builtScript } from '../../../../src/testing/kit.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function daemonRun(scenario: string, extra: string[] = [], options: Record<string, unknown> = {}) {
  const port = await freePort();
  const args = [builtScript('fake-mew.js'), 'daemon', '--port', `127.0.0.1:${port}`, '--scenario', scenario, ...extra];
  const run = spawnRun({ protocol: 'mew', command: process.execPath, args, url: `ws://127.0.0.1:${port}`, task: 'go', killGraceMs: 300, ...options });
  let pid: number | undefined;
  run.on('event', () => (pid ??= run.pid));
  return { run, pid: () => pid ?? run.pid };
}

describe('spawnRun mew: a daemon of its own', () => {
  it('starts the daemon, waits until it listens, runs the task, and reaps the daemon', async () => {
    const { run, pid } = await daemonRun('chat', ['--listen-delay', '400']);
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'The README describes subvisor.', turns: 1 });
    expect(outcome.outputTail).toMatch(/subvisor-fake-mew: listening on ws:\/\/127\.0\.0\.1:\d+/);
    expect(pid()).toBeGreaterThan(0);
    expect(isAlive(pid()!)).toBe(false);
  });

  it('a daemon that ignores SIGTERM is SIGKILLed by the ladder', async () => {
    const { run, pid } = await daemonRun('chat', ['--ignore-sigterm']);
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', killed: true, escalated: true });
    expect(isAlive(pid()!)).toBe(false);
  });

  it('a daemon that never listens fails ready-timeout and is reaped; a daemon failure mid-turn fails the run', async () => {
    const { run, pid } = await daemonRun('chat', ['--listen-delay', '60000'], { readyTimeoutMs: 500 });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'ready-timeout' });
    expect(isAlive(pid()!)).toBe(false);
    const dropped = await daemonRun('drop-mid-turn');
    expect(await dropped.run.outcome).toMatchObject({ status: 'failed', errorCode: 'connection-lost' });
  });

  it('checks its options: url is required for mew and refused for other protocols', () => {
    expect(() => spawnRun({ protocol: 'mew', command: 'mew', args: ['daemon'] })).toThrow(/needs options.url/);
    expect(() => spawnRun({ protocol: 'mew', command: 'mew', url: 'http://x' })).toThrow(/ws:\/\/ or wss:\/\//);
    expect(() => spawnRun({ command: 'fen', url: 'ws://127.0.0.1:1' })).toThrow(/applies to protocol 'mew' only/);
  });
});
