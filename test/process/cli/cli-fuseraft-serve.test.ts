// supervise --protocol fuseraft-serve: --url/--socket, --token-file (never a token flag), --client-id, --session-id, faults, and the token never in its output.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../../src/cli/args.js';
import { fakeFuseraftServe } from '../../../src/testing/index.js';
import type { FakeFuseraftServe, ServeBuiltinName, ServeScenario } from '../../../src/testing/index.js';
import { runMain } from '../../helpers/cli-main.js';
import { jsonLines, runCli } from '../../helpers/cli-run.js';

const TOKEN = 'cli-T0ken-do-not-print-77';
const daemons: FakeFuseraftServe[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const daemon of daemons.splice(0)) await daemon.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function daemonOf(scenario: ServeScenario | ServeBuiltinName, options: { token?: string; unixSocket?: boolean } = {}) {
  const daemon = await fakeFuseraftServe(scenario, options);
  daemons.push(daemon);
  return daemon;
}

function tokenFile(content = `${TOKEN}\n`): string {
  const dir = mkdtempSync(join(tmpdir(), 'subvisor-cli-token-'));
  dirs.push(dir);
  const file = join(dir, 'token');
  writeFileSync(file, content, { mode: 0o600 });
  return file;
}

describe('supervise --protocol fuseraft-serve', () => {
  it('--url and --token-file: the token goes in the handshake only; the answer on stdout, exit 0', async () => {
    const daemon = await daemonOf('echo', { token: TOKEN });
    const result = await runCli(['--protocol', 'fuseraft-serve', '--url', daemon.url!, '--token-file', tokenFile(), '--client-id', 'cli-1', '--task', 'say hi']);
    expect(result.stderr).not.toContain(TOKEN);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('echo: say hi');
    expect(daemon.handshakes[0]).toMatchObject({ authorization: `Bearer ${TOKEN}`, 'fuseraft-client-id': 'cli-1' });
  });

  it('--socket: the Unix socket form', async () => {
    const daemon = await daemonOf('echo', { unixSocket: true });
    const result = await runCli(['--protocol', 'fuseraft-serve', '--socket', daemon.socketPath!, '--task', 'over the socket']);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('echo: over the socket');
  });

  it('--approve always-known answers the approval; -o json carries the outcome, and no token anywhere', async () => {
    const daemon = await daemonOf('approval', { token: TOKEN });
    const result = await runCli(['--protocol', 'fuseraft-serve', '--url', daemon.url!, '--token-file', tokenFile(), '--approve', 'always-known', '-o', 'json', '--task', 'test']);
    expect(result.code).toBe(0);
    expect(daemon.approvalResponses).toEqual([{ type: 'approval_response', approved: true }]);
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ status: 'done', finalText: 'ran npm test' });
    expect(`${result.stdout.toString()}${result.stderr}`).not.toContain(TOKEN);
  });

  it('a wrong token: connection-refused, exit 1, and neither token is printed', async () => {
    const daemon = await daemonOf('echo', { token: 'the-daemon-one' });
    const result = await runCli(['--protocol', 'fuseraft-serve', '--url', daemon.url!, '--token-file', tokenFile(), '-o', 'events', '--task', 'x']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/HTTP 401/);
    const everything = `${result.stdout.toString()}${result.stderr}`;
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain('the-daemon-one');
  });

  it('a daemon that drops the connection with no client id: connection-lost, exit 1', async () => {
    const daemon = await daemonOf({ misbehave: ['drop-mid-turn'] });
    const result = await runCli(['--protocol', 'fuseraft-serve', '--url', daemon.url!, '-o', 'json', '--task', 'x']);
    expect(result.code).toBe(1);
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ status: 'failed', errorCode: 'connection-lost' });
  });

  it('--session-id with --client-id re-attaches to a task without sending one', async () => {
    const daemon = await daemonOf({ tasks: [{ hang: true }, {}] });
    // A first client leaves its task running (close detaches), then the CLI collects... by cancelling it.
    const { connectRun } = await import('../../../src/index.js');
    const first = connectRun({ protocol: 'fuseraft-serve', url: daemon.url!, clientId: 'me', task: 'long', keepAlive: true });
    await new Promise<void>((resolve) => first.on('state', (state) => state === 'running' && resolve()));
    await first.close();
    await first.outcome;
    const result = await runCli(['--protocol', 'fuseraft-serve', '--url', daemon.url!, '--client-id', 'me', '--session-id', 'sess-1', '--timeout', '1s', '-o', 'json']);
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ status: 'timed-out', turns: 1 });
    expect(daemon.received.map(({ message }) => (message as { type: string }).type)).toEqual(['user_input', 'interrupt']);
  });

  it('usage errors: no token flag exists; address, command, socket+token, session without client id', () => {
    const base = ['--protocol', 'fuseraft-serve'];
    expect(() => parseCommandLine([...base, '--url', 'ws://h/attach', '--token', TOKEN, '--task', 'x'])).toThrow();
    expect(() => parseCommandLine([...base, '--task', 'x'])).toThrow(/either --url .* or --socket/);
    expect(() => parseCommandLine([...base, '--url', 'ws://h/', '--socket', '/s', '--task', 'x'])).toThrow(/either --url/);
    expect(() => parseCommandLine([...base, '--url', 'ws://h/', '--task', 'x', '--', 'fuseraft', 'serve'])).toThrow(/give no command/);
    expect(() => parseCommandLine([...base, '--socket', '/s', '--token-file', '/t', '--task', 'x'])).toThrow(/Unix socket takes no token/);
    expect(() => parseCommandLine([...base, '--url', 'ws://h/', '--session-id', 's'])).toThrow(/needs --client-id/);
    expect(() => parseCommandLine([...base, '--url', 'ws://h/', '--client-id', 'c', '--session-id', 's', '--task', 'x'])).toThrow(/no --task/);
    expect(() => parseCommandLine(['--token-file', '/t', '--task', 'x', '--', 'fen'])).toThrow(/is for --protocol mew or fuseraft-serve/);
    expect(() => parseCommandLine(['--protocol', 'mew', '--url', 'ws://h/', '--client-id', 'c', '--task', 'x'])).toThrow(/is for --protocol fuseraft-serve/);
    const parsed = parseCommandLine([...base, '--url', 'ws://h/attach', '--token-file', '/t', '--client-id', 'c', '--task', 'x']);
    expect(parsed).toMatchObject({ kind: 'run', options: { protocol: 'fuseraft-serve', connect: true, url: 'ws://h/attach', tokenFile: '/t', clientId: 'c' } });
  });

  it('an unreadable or empty --token-file is a usage error that names the file, not its content', async () => {
    const missing = await runMain(['--protocol', 'fuseraft-serve', '--url', 'ws://127.0.0.1:1/attach', '--token-file', '/nonexistent/token', '--task', 'x']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--token-file \/nonexistent\/token: cannot read it \(ENOENT\)/);
    const empty = await runMain(['--protocol', 'fuseraft-serve', '--url', 'ws://127.0.0.1:1/attach', '--token-file', tokenFile('\n'), '--task', 'x']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/is empty/);
  });
});
