// spawnRun's options for protocol 'acp': the command is the caller's (each agent has its own), resume is taken, a cost limit and durable runs are refused.
import { describe, expect, it } from 'vitest';
import { checkRunOptions, resolveOptions } from '../../../src/api/spawn-run.js';
import { APPROVING_PROTOCOLS, protocolNamed } from '../../../src/api/registry.js';

describe("protocol 'acp' options", () => {
  it('needs a command: there is no default ACP agent', () => {
    expect(() => checkRunOptions({ protocol: 'acp', task: 'x' })).toThrow('options.command must be a non-empty string');
    expect(resolveOptions({ protocol: 'acp', command: 'gemini', args: ['--acp'] }, protocolNamed('acp'))).toMatchObject({ command: 'gemini', args: ['--acp'] });
  });

  it('resumes a session by id, asks for approvals, and takes turns, tool calls and tokens but not a cost limit nor durable runs', () => {
    expect(resolveOptions({ protocol: 'acp', command: 'gemini', resume: 'session-1' }, protocolNamed('acp')).resume).toBe('session-1');
    expect(APPROVING_PROTOCOLS).toContain('acp');
    expect(() => checkRunOptions({ protocol: 'acp', command: 'gemini', task: 'x', budget: { maxCostUsd: 1 } })).toThrow(/maxCostUsd/);
    expect(() => checkRunOptions({ protocol: 'acp', command: 'gemini', task: 'x', durable: {} })).toThrow(/cannot run durable/);
    expect(() => checkRunOptions({ protocol: 'acp', command: 'gemini', task: 'x', budget: { maxTurns: 3, maxToolCalls: 5, maxTokens: 100_000 } })).not.toThrow();
  });

  it('is a profile protocol of the queue like every spawned one', async () => {
    const { checkProfiles } = await import('../../../src/queue/profiles.js');
    expect(() => checkProfiles({ gemini: { command: 'gemini', protocol: 'acp', args: ['--acp'] } })).not.toThrow();
  });
});
