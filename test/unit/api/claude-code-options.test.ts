// spawnRun's options for protocol 'claude-code': the command defaults to claude, resume and a cost limit are taken, durable runs are refused, the channel's flags are subvisor's.
import { describe, expect, it } from 'vitest';
import { checkRunOptions, resolveOptions } from '../../../src/api/spawn-run.js';
import { protocolNamed } from '../../../src/api/registry.js';

describe("protocol 'claude-code' options", () => {
  it('starts claude when no command is given', () => {
    expect(resolveOptions({ protocol: 'claude-code', task: 'x' }, protocolNamed('claude-code')).command).toBe('claude');
    expect(resolveOptions({ protocol: 'claude-code', command: '/opt/claude' }, protocolNamed('claude-code')).command).toBe('/opt/claude');
  });

  it('resumes a session by id; resume is refused for a protocol that cannot', () => {
    expect(resolveOptions({ protocol: 'claude-code', resume: 'session-1' }, protocolNamed('claude-code')).resume).toBe('session-1');
    expect(() => checkRunOptions({ protocol: 'fen', command: 'fen', resume: 'session-1' })).toThrow(/options.resume applies to protocol .*'claude-code'/);
  });

  it('takes every budget limit (Claude Code reports a cost), and refuses durable runs', () => {
    expect(() => checkRunOptions({ protocol: 'claude-code', task: 'x', budget: { maxTurns: 3, maxToolCalls: 5, maxTokens: 100_000, maxCostUsd: 1 } })).not.toThrow();
    expect(() => checkRunOptions({ protocol: 'claude-code', task: 'x', durable: {} })).toThrow(/cannot run durable/);
  });

  it('refuses arguments that would change the channel', () => {
    expect(() => checkRunOptions({ protocol: 'claude-code', args: ['--input-format', 'text'] })).toThrow(/--input-format/);
    expect(() => checkRunOptions({ protocol: 'claude-code', args: ['--permission-prompt-tool=mcp__x'] })).toThrow(/--permission-prompt-tool/);
    expect(() => checkRunOptions({ protocol: 'claude-code', args: ['--model', 'sonnet'] })).not.toThrow();
  });

  it('is a profile protocol of the queue like every spawned one', async () => {
    const { checkProfiles } = await import('../../../src/queue/profiles.js');
    expect(() => checkProfiles({ claude: { command: 'claude', protocol: 'claude-code', args: ['--model', 'sonnet'] } })).not.toThrow();
  });
});
