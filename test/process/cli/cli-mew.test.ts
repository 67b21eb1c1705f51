// supervise --protocol mew: attaching to a running daemon with --url, starting one with a command, approvals, faults, usage errors.
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../../src/cli/args.js';
import { fakeMewDaemon } from '../../../src/testing/mew/server.js';
import type { FakeMewDaemonServer } from '../../../src/testing/mew/server.js';
import { builtScript } from '../../../src/testing/kit.js';
import { jsonLines, runCli } from '../../helpers/cli-run.js';

const daemons: FakeMewDaemonServer[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((daemon) => daemon.close()));
});

async function daemon(scenario: Parameters<typeof fakeMewDaemon>[0]) {
  const started = await fakeMewDaemon(scenario);
  daemons.push(started);
  return started;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('supervise --protocol mew', () => {
  it('--url with no command attaches to the daemon: the answer on stdout, exit 0', async () => {
    const fake = await daemon('chat');
    const result = await runCli(['--protocol', 'mew', '--url', fake.url, '--task', 'Summarise the README', '--cwd', '/tmp']);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('The README describes subvisor.');
    expect(fake.receivedOf('new_session')[0]!.message).toEqual({ type: 'new_session', cwd: '/tmp' });
  });

  it('--approve always-known allows a named tool; --mew-tag-case PascalCase writes PascalCase tags', async () => {
    const fake = await daemon('permission');
    const result = await runCli(['--protocol', 'mew', '--url', fake.url, '--approve', 'always-known', '--mew-tag-case', 'PascalCase', '-o', 'events', '--task', 'go']);
    expect(result.code).toBe(0);
    expect(fake.receivedOf('permission_response').map((entry) => entry.message)).toEqual([{ type: 'PermissionResponse', request_id: 'perm_1_1', decision: 'allow_once' }]);
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ type: 'outcome', status: 'done', finalText: 'permission handled' });
  });

  it('a refused connection exits 1 with connection-refused on stderr', async () => {
    const result = await runCli(['--protocol', 'mew', '--url', `ws://127.0.0.1:${await freePort()}`, '--task', 'go']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/run failed .*could not connect|connection refused|ECONNREFUSED/i);
  });

  it('with a command it starts the daemon, runs the task on it and reaps it', async () => {
    const port = await freePort();
    const result = await runCli(['--protocol', 'mew', '--url', `ws://127.0.0.1:${port}`, '--grace', '300ms', '--task', 'go', '--', process.execPath, builtScript('fake-mew.js'), 'daemon', '--port', `127.0.0.1:${port}`]);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('The README describes subvisor.');
  });

  it('batch mode (--tasks) answers mew\'s permission requests as --approve says', async () => {
    const port = await freePort();
    // The daemon's answer says what it was told: `access to /etc/hosts allowed` or `denied`.
    const command = ['--', process.execPath, builtScript('fake-mew.js'), 'daemon', '--port', `127.0.0.1:${port}`, '--scenario', 'newer-requests'];
    const batch = (approve: string[]) => runCli(['--protocol', 'mew', '--url', `ws://127.0.0.1:${port}`, '--grace', '300ms', ...approve, '--tasks', '-', ...command], { input: '"go"\n' });
    const approved = await batch(['--approve', 'always-known']);
    expect(approved.code).toBe(0);
    expect(jsonLines(approved.stdout)[0]).toMatchObject({ status: 'done', finalText: expect.stringContaining('access to /etc/hosts allowed') });
    const denied = await batch([]);
    expect(jsonLines(denied.stdout)[0]).toMatchObject({ status: 'done', finalText: expect.stringContaining('access to /etc/hosts denied') });
  });

  it('usage errors: mew without --url, --url for another protocol, --session-id with a command, spawn-only options when attaching', () => {
    expect(() => parseCommandLine(['--protocol', 'mew', '--task', 't', '--', 'mew', 'daemon'])).toThrow(/needs --url/);
    expect(() => parseCommandLine(['--url', 'ws://h:1', '--task', 't', '--', 'fen'])).toThrow(/--url is for --protocol mew/);
    expect(() => parseCommandLine(['--protocol', 'mew', '--url', 'ws://h:1', '--session-id', 's', '--task', 't', '--', 'mew'])).toThrow(/give no command/);
    expect(() => parseCommandLine(['--protocol', 'mew', '--url', 'ws://h:1', '--env', 'A=1', '--task', 't'])).toThrow(/--env does not apply/);
    expect(() => parseCommandLine(['--protocol', 'mew', '--url', 'ws://h:1', '--mew-tag-case', 'kebab', '--task', 't'])).toThrow(/not one of snake_case, PascalCase/);
    const parsed = parseCommandLine(['--protocol', 'mew', '--url', 'ws://h:1', '--session-id', 's1', '--task', 't']);
    expect(parsed).toMatchObject({ kind: 'run', options: { connect: true, url: 'ws://h:1', sessionId: 's1', command: '', args: [] } });
  });
});
