// The harness on the real binaries, with no subvisor driver: each pinned agent, pointed at fakeModel by its setup,
// streams thinking and text, asks before its shell tool writes a file and runs it when allowed, and exits on the end
// of stdin leaving no process. Proves the setup, the harness and fakeModel's three APIs against what the agents parse.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentBinary } from '../helpers/agent-binaries.js';
import { agentHarness } from '../helpers/agent-harness.js';

const TURNS = [
  { thinking: 'The user wants a greeting.', text: 'Hello from the scripted model.' },
  { text: 'I will create the file.', shell: 'touch made-by-agent.txt' },
  { text: 'Created it.' },
];

describe.skipIf(agentBinary('claude') === undefined)('Claude Code (stream-json) against fakeModel', () => {
  it('streams thinking and text, asks before Bash writes, runs it when allowed, exits 0 on end of stdin', async () => {
    const harness = await agentHarness('claude-code', { turns: TURNS });
    const claude = harness.start(['--output-format', 'stream-json', '--input-format', 'stream-json', '--verbose', '--include-partial-messages', '--permission-prompt-tool', 'stdio']);
    const user = (text: string) => ({ type: 'user', message: { role: 'user', content: text }, parent_tool_use_id: null, session_id: '' });

    claude.send(user('Say hello'));
    const init = await claude.line((line) => line['type'] === 'system' && line['subtype'] === 'init');
    expect(init['session_id']).toEqual(expect.any(String));
    const first = await claude.line((line) => line['type'] === 'result');
    expect(first).toMatchObject({ subtype: 'success', is_error: false, result: 'Hello from the scripted model.', total_cost_usd: expect.any(Number) });
    const deltas = claude.lines.flatMap((line) => (typeof line === 'object' && line['type'] === 'stream_event' ? [(line['event'] as { delta?: { type: string } }).delta?.type] : []));
    expect(deltas).toEqual(expect.arrayContaining(['thinking_delta', 'signature_delta', 'text_delta']));

    claude.send(user('Create the file'));
    const ask = await claude.line((line) => line['type'] === 'control_request' && (line['request'] as { subtype: string }).subtype === 'can_use_tool');
    const request = ask['request'] as { tool_name: string; input: Record<string, unknown> };
    expect(request).toMatchObject({ tool_name: 'Bash', input: { command: 'touch made-by-agent.txt' } });
    claude.send({ type: 'control_response', response: { subtype: 'success', request_id: ask['request_id'], response: { behavior: 'allow', updatedInput: request.input } } });
    const second = await claude.line((line) => line['type'] === 'result' && line !== first);
    expect(second).toMatchObject({ is_error: false, result: 'Created it.' });
    expect(existsSync(join(harness.cwd, 'made-by-agent.txt'))).toBe(true);
    expect(harness.model.turnRequests.at(-1)!.toolResults).toEqual([expect.objectContaining({ callId: expect.stringMatching(/^toolu_fake_/) })]);

    claude.end();
    expect(await claude.exited).toEqual({ code: 0, signal: null });
    expect(harness.liveProcesses()).toEqual([]);
    expect(harness.model.requests.map((r) => r.kind)).toEqual(['turn', 'turn', 'turn']);
  });
});

describe.skipIf(agentBinary('codex') === undefined)('Codex (app-server) against fakeModel', () => {
  it('streams reasoning and text, asks before exec_command, runs it when accepted, exits 0 on end of stdin', async () => {
    const harness = await agentHarness('codex', { turns: TURNS });
    const codex = harness.start(['app-server']);
    const call = (method: string, params: unknown) => codex.request(method, params);
    await call('initialize', { clientInfo: { name: 'subvisor-test', title: 'subvisor test', version: '0' } });
    codex.send({ method: 'initialized' });
    const { thread } = (await call('thread/start', { cwd: harness.cwd, approvalPolicy: 'untrusted', sandbox: 'workspace-write' })) as { thread: { id: string } };
    const completed = (turnId: string) => codex.line((line) => line['method'] === 'turn/completed' && (line['params'] as { turn: { id: string } }).turn.id === turnId);

    const { turn } = (await call('turn/start', { threadId: thread.id, input: [{ type: 'text', text: 'Say hello' }] })) as { turn: { id: string } };
    const done = (await completed(turn.id))['params'] as { turn: { status: string; items: Array<{ type: string; text?: string }> } };
    expect(done.turn.status).toBe('completed');
    expect(done.turn.items.at(-1)).toMatchObject({ type: 'agentMessage', text: 'Hello from the scripted model.' });
    expect(codex.lines.some((line) => typeof line === 'object' && line['method'] === 'item/reasoning/summaryTextDelta')).toBe(true);

    const { turn: second } = (await call('turn/start', { threadId: thread.id, input: [{ type: 'text', text: 'Create the file' }] })) as { turn: { id: string } };
    const ask = await codex.line((line) => line['method'] === 'item/commandExecution/requestApproval');
    expect((ask['params'] as { command: string }).command).toContain('touch made-by-agent.txt');
    codex.send({ id: ask['id'], result: { decision: 'accept' } });
    expect(((await completed(second.id))['params'] as { turn: { status: string } }).turn.status).toBe('completed');
    expect(existsSync(join(harness.cwd, 'made-by-agent.txt'))).toBe(true);
    expect(harness.model.turnRequests.at(-1)!.toolResults[0]!.output).toContain('Process exited with code 0');

    codex.end();
    expect(await codex.exited).toEqual({ code: 0, signal: null });
    expect(harness.liveProcesses()).toEqual([]);
  });
});

describe.skipIf(agentBinary('gemini') === undefined)('Gemini CLI (ACP) against fakeModel', () => {
  it('streams thoughts and text, asks before run_shell_command, runs it when allowed, exits 0 on end of stdin', async () => {
    const harness = await agentHarness('gemini', { turns: TURNS });
    const gemini = harness.start(['--acp']);
    const call = (method: string, params: unknown) => gemini.request(method, params, { jsonrpc: '2.0' });
    const init = await call('initialize', { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } });
    expect(init['protocolVersion']).toBe(1);
    const { sessionId } = (await call('session/new', { cwd: harness.cwd, mcpServers: [] })) as { sessionId: string };

    const first = await call('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Say hello' }] });
    expect(first).toMatchObject({ stopReason: 'end_turn', _meta: { quota: { token_count: { input_tokens: expect.any(Number) } } } });
    const updates = gemini.lines.flatMap((line) => (typeof line === 'object' && line['method'] === 'session/update' ? [(line['params'] as { update: { sessionUpdate: string; content?: { text: string } } }).update] : []));
    expect(updates.filter((update) => update.sessionUpdate === 'agent_message_chunk').map((update) => update.content!.text).join('')).toBe('Hello from the scripted model.');
    expect(updates.some((update) => update.sessionUpdate === 'agent_thought_chunk')).toBe(true);

    const prompt = call('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'Create the file' }] });
    const ask = await gemini.line((line) => line['method'] === 'session/request_permission');
    const options = (ask['params'] as { options: Array<{ optionId: string; kind: string }> }).options;
    gemini.send({ jsonrpc: '2.0', id: ask['id'], result: { outcome: { outcome: 'selected', optionId: options.find((option) => option.kind === 'allow_once')!.optionId } } });
    expect(await prompt).toMatchObject({ stopReason: 'end_turn' });
    expect(existsSync(join(harness.cwd, 'made-by-agent.txt'))).toBe(true);
    // Gemini CLI asks its router (a side request) before each turn: the turns are still the script's three.
    expect(harness.model.turnRequests.map((request) => request.turn)).toEqual([0, 1, 2]);

    gemini.end();
    expect(await gemini.exited).toEqual({ code: 0, signal: null });
    expect(harness.liveProcesses()).toEqual([]);
  });
});
