// spawnRun's options for protocol 'codex': the command defaults to codex, resume is codex's, a cost limit and durable runs are refused, the transport is stdio.
import { describe, expect, it } from 'vitest';
import { checkRunOptions, resolveOptions } from '../../../src/api/spawn-run.js';
import { protocolNamed } from '../../../src/api/registry.js';

describe("protocol 'codex' options", () => {
  it('starts codex when no command is given; the other protocols still need one', () => {
    expect(resolveOptions({ protocol: 'codex', task: 'x' }, protocolNamed('codex')).command).toBe('codex');
    expect(resolveOptions({ protocol: 'codex', command: '/opt/codex' }, protocolNamed('codex')).command).toBe('/opt/codex');
    expect(() => checkRunOptions({ protocol: 'fen', task: 'x' })).toThrow('options.command must be a non-empty string');
  });

  it('resumes a thread by id; resume is refused for a protocol that cannot', () => {
    expect(resolveOptions({ protocol: 'codex', resume: 'thread-1' }, protocolNamed('codex')).resume).toBe('thread-1');
    expect(() => checkRunOptions({ protocol: 'fen', command: 'fen', resume: 'thread-1' })).toThrow("options.resume applies to protocol 'codex', 'claude-code' or 'acp' only");
    expect(() => checkRunOptions({ protocol: 'codex', resume: '' })).toThrow('options.resume must be a non-empty string');
  });

  it('refuses a cost limit (Codex reports tokens only) and durable runs, and takes turns, tool calls and tokens', () => {
    expect(() => checkRunOptions({ protocol: 'codex', task: 'x', budget: { maxCostUsd: 1 } })).toThrow(/maxCostUsd/);
    expect(() => checkRunOptions({ protocol: 'codex', task: 'x', durable: {} })).toThrow(/cannot run durable/);
    expect(() => checkRunOptions({ protocol: 'codex', task: 'x', budget: { maxTurns: 3, maxToolCalls: 5, maxTokens: 100_000 } })).not.toThrow();
  });

  it('refuses arguments that would move the app-server off stdio', () => {
    expect(() => checkRunOptions({ protocol: 'codex', args: ['--listen', 'ws://127.0.0.1:1'] })).toThrow(/--listen/);
    expect(() => checkRunOptions({ protocol: 'codex', args: ['-c', 'model="o3"'] })).not.toThrow();
  });
});

describe("protocol 'codex' in the queue's profiles", () => {
  it('is a profile protocol like every spawned one', async () => {
    const { checkProfiles } = await import('../../../src/queue/profiles.js');
    expect(() => checkProfiles({ codex: { command: 'codex', protocol: 'codex', args: ['-c', 'model="o3"'] } })).not.toThrow();
  });
});
