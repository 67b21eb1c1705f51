// Unit tests of supervise --approve: never, always-known, ask on a terminal, deny without one, unknown kinds.
import { describe, expect, it } from 'vitest';
import { approveCallbackFor, describeRequest } from '../../../src/cli/approval-policy.js';
import type { ApprovalRequest } from '../../../src/protocol/requests.js';

const shell: ApprovalRequest = { protocol: 'fuseraft', fields: { kind: 'shell_command', command: 'ls' }, kind: 'shell_command', known: true, command: 'ls' };
const unknown: ApprovalRequest = { protocol: 'fuseraft', fields: { kind: 'teleport', to: 'mars' }, kind: 'teleport', known: false };

describe('--approve', () => {
  it('never denies everything; always-known approves known kinds only', async () => {
    const never = approveCallbackFor('never', undefined, () => undefined);
    const known = approveCallbackFor('always-known', undefined, () => undefined);
    expect([await never(shell), await never(unknown)]).toEqual([false, false]);
    expect([await known(shell), await known(unknown)]).toEqual([true, false]);
  });

  it('ask without a terminal denies without asking', async () => {
    const said: string[] = [];
    const ask = approveCallbackFor('ask', undefined, (text) => said.push(text));
    expect(await ask(shell)).toBe(false);
    expect(said).toEqual([]);
  });

  it('ask shows the request and takes y/yes for a known kind, only a typed "yes" for an unknown one', async () => {
    const typed = ['y', 'No', 'Yes', 'y', ' yes '];
    const questions: string[] = [];
    const said: string[] = [];
    const ask = approveCallbackFor('ask', async (question) => (questions.push(question), typed.shift()!), (text) => said.push(text));
    expect(await ask(shell)).toBe(true);
    expect(await ask(shell)).toBe(false);
    expect(await ask(shell)).toBe(true);
    expect(await ask(unknown)).toBe(false);
    expect(await ask(unknown)).toBe('approve-unknown-kind');
    expect(questions[3]).toBe('unknown approval kind "teleport": type "yes" to approve it anyway [no]: ');
    expect(said[0]).toBe('fuseraft asks for approval: shell_command\n  command: ls');
  });

  it('describes requests without letting the child drive the terminal, and cuts long values', () => {
    const evil: ApprovalRequest = { ...shell, command: `rm \u001b[2J${'x'.repeat(500)}` } as ApprovalRequest;
    const text = describeRequest(evil);
    expect(text).not.toContain('\u001b');
    expect(text).toContain('... (107 more characters)');
    expect(describeRequest(unknown)).toBe('fuseraft asks for approval: teleport (a kind subvisor does not know)\n  to: "mars"');
    expect(
      describeRequest({ protocol: 'fuseraft', fields: {}, kind: 'file_write', known: true, plugin: 'fs', action: 'write', path: 'a.ts', oldContent: null, newContent: 'abc' }),
    ).toContain('content: no file -> 3 characters');
  });

  it('describes mew\'s workspace, subagent, plan and goal requests by what they ask', () => {
    const mew = { protocol: 'mew' as const, fields: {}, known: true as const, requestId: '7' };
    expect(describeRequest({ ...mew, kind: 'workspace_permission', path: '/etc/hosts' })).toBe('mew asks for approval: workspace_permission\n  path: /etc/hosts');
    expect(describeRequest({ ...mew, kind: 'subagent_permission', parentCallId: 'call_2', toolName: 'bash', input: { command: 'ls' } })).toBe(
      'mew asks for approval: subagent_permission\n  tool: bash (a subagent of call call_2)\n  input: {"command":"ls"}',
    );
    expect(describeRequest({ ...mew, kind: 'plan_approval', callId: 'c', planPath: 'plan.md', planMarkdown: '# Plan', persona: 'plan' })).toBe(
      'mew asks for approval: plan_approval\n  plan: plan.md (persona plan)\n  markdown: # Plan',
    );
    expect(describeRequest({ ...mew, kind: 'goal_proposal', callId: 'c', objective: 'Make the tests pass' })).toBe('mew asks for approval: goal_proposal\n  goal: Make the tests pass');
  });

  it("describes an ACP agent's tool call by its title, kind and input", () => {
    const acp = { protocol: 'acp', fields: {}, known: true as const, kind: 'tool_call' as const, toolCallId: 'run_shell_command-1', toolKind: 'execute', options: [] };
    expect(describeRequest({ ...acp, title: 'touch a.txt', rawInput: null })).toBe('acp asks for approval: tool_call\n  tool call: touch a.txt (execute)');
    expect(describeRequest({ ...acp, title: 'Edit', rawInput: { path: 'a.txt' } })).toBe('acp asks for approval: tool_call\n  tool call: Edit (execute)\n  input: {"path":"a.txt"}');
  });
});
