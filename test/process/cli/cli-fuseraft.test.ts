// supervise --protocol fuseraft / fuseraft-bridge with --approve, against the scripted fuseraft child (real processes).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runMain } from '../../helpers/cli-main.js';
import { CLI, hasScript, jsonLines, runCli } from '../../helpers/cli-run.js';

const SCRIPT = fileURLToPath(new URL('../../helpers/scripted-fuseraft.mjs', import.meta.url));
const READY = { type: 'ready', protocolVersion: 1, sessionId: 's1', model: 'm', title: null, autoTitle: null, midTurnCommands: [] };
const TURN_WITH_APPROVALS = [
  { send: READY },
  { read: 'user_input' },
  { send: { type: 'turn_start' } },
  { send: { type: 'approval_request', kind: 'shell_command', command: 'make test' } },
  { read: 'approval_response' },
  { send: { type: 'approval_request', kind: 'teleport' } },
  { read: 'approval_response' },
  { send: { type: 'token', text: 'answer' } },
  { send: { type: 'message_end' } },
  { eof: true },
  { send: { type: 'session_end' } },
  { exit: 0 },
];
const env = (steps: object[]) => ({ SCRIPTED_FUSERAFT: JSON.stringify(steps) });

/** The approval responses the script read, from the events output. */
function responses(stdout: Buffer): unknown[] {
  return jsonLines(stdout)
    .filter((event) => event['nativeType'] === 'echo' && (event['extra'] as { line: { type?: string } }).line.type === 'approval_response')
    .map((event) => (event['extra'] as { line: { approved: unknown } }).line.approved);
}

describe('supervise --protocol fuseraft', () => {
  it('--approve always-known approves the known kind and denies the unknown one; the answer goes to stdout', async () => {
    const result = await runCli(['--protocol', 'fuseraft', '--approve', 'always-known', '-o', 'events', '--task', 'go', '--', process.execPath, SCRIPT], {
      env: env(TURN_WITH_APPROVALS),
    });
    expect(result.code).toBe(0);
    expect(responses(result.stdout)).toEqual([true, false]);
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ type: 'outcome', status: 'done', finalText: 'answer' });
  });

  it('--approve never (the default) denies everything', async () => {
    const result = await runCli(['--protocol', 'fuseraft', '-o', 'events', '--task', 'go', '--', process.execPath, SCRIPT], { env: env(TURN_WITH_APPROVALS) });
    expect(result.code).toBe(0);
    expect(responses(result.stdout)).toEqual([false, false]);
  });

  it('--approve ask without a terminal denies everything', async () => {
    const result = await runCli(['--protocol', 'fuseraft', '--approve', 'ask', '-o', 'events', '--task', 'go', '--', process.execPath, SCRIPT], {
      env: env(TURN_WITH_APPROVALS),
    });
    expect(result.code).toBe(0);
    expect(responses(result.stdout)).toEqual([false, false]);
  });

  it.runIf(hasScript)('--approve ask on a terminal shows the request and takes the typed answer', async () => {
    const command = [process.execPath, CLI, '--protocol', 'fuseraft', '--approve', 'ask', '-o', 'events', '--task', 'go', '--', process.execPath, SCRIPT]
      .map((word) => `'${word}'`)
      .join(' ');
    // script(1) gives the CLI a pseudo-terminal; what we write to script's stdin is typed at it.
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...process.env, ...env(TURN_WITH_APPROVALS) }, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8');
    const typed: string[] = [];
    child.stdout.on('data', (chunk: string) => {
      output += chunk;
      if (typed.length === 0 && output.includes('approve? [y/N]')) {
        typed.push('y');
        child.stdin.write('y\r');
      }
      if (typed.length === 1 && output.includes('type "yes" to approve it anyway')) {
        typed.push('no');
        child.stdin.write('no\r');
      }
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(typed).toEqual(['y', 'no']);
    expect(output).toContain('fuseraft asks for approval: shell_command');
    expect(output).toContain('command: make test');
    // The script echoes what it read: the typed answers, in order.
    const approvals = [...output.matchAll(/"line":\{"type":"approval_response","approved":(true|false)\}/g)].map((match) => match[1]);
    expect(approvals).toEqual(['true', 'false']);
    expect(code).toBe(0);
  });

  it('rejects --approve without a fuseraft protocol, an unknown mode or protocol, and ask with --controls -', async () => {
    for (const args of [
      ['--approve', 'never', '--task', 'x', '--', 'true'],
      ['--protocol', 'fuseraft', '--approve', 'sometimes', '--task', 'x', '--', 'true'],
      ['--protocol', 'telepathy', '--task', 'x', '--', 'true'],
      ['--protocol', 'fuseraft', '--approve', 'ask', '--controls', '-', '--task', 'x', '--', 'true'],
    ]) {
      const result = await runMain(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(/supervise: --(approve|protocol)/);
    }
  });
});

describe('supervise --protocol fuseraft-bridge', () => {
  it('appends the task to the command and exits with the session outcome', async () => {
    const steps = [
      { send: { type: 'ready', protocolVersion: 1, sessionId: 'b', task: 't', config: 'c', resumed: false, agents: [] } },
      { send: { type: 'agent_message', elapsedMs: 1, message: { agentName: 'Dev', role: 'assistant', content: 'bridged', inputTokens: 1, outputTokens: 1, isCompactionSummary: false, toolCalls: [] } } },
      { send: { type: 'result', sessionId: 'b', succeeded: false, errorMessage: 'tests fail', exitCode: 1, turns: 1, inputTokens: 1, outputTokens: 1 } },
      { exit: 1 },
    ];
    const result = await runCli(['--protocol', 'fuseraft-bridge', '-o', 'json', '--task', 'ship', '--', process.execPath, SCRIPT, 'run', '--bridge'], { env: env(steps) });
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout.toString())).toMatchObject({ status: 'failed', error: 'tests fail', finalText: 'bridged' });
  });
});
