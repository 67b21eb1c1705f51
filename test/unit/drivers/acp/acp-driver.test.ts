// The acp driver against a scripted ACP agent over linked stdio: the handshake, a prompt's updates and answer, permissions,
// cancel, errors, steer and follow-up, resume, and every client method subvisor does not offer answered -32601.
import { describe, expect, it } from 'vitest';
import type { ApprovalRequest } from '../../../../src/index.js';
import { acpLinked, GEMINI_INIT, SESSION } from '../../../helpers/acp-linked.js';

describe('acp driver: the handshake', () => {
  it('initialize v1 without fs or terminal, auth methods reported, session/new in the cwd; ready, then the task as session/prompt', async () => {
    const h = acpLinked();
    expect(h.launch.process).toMatchObject({ command: 'scripted-acp-agent', args: [], stdin: 'pipe', stdout: 'driver' });
    const initialize = await h.agent.next();
    expect(initialize).toMatchObject({
      jsonrpc: '2.0',
      method: 'initialize',
      params: { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false }, clientInfo: { name: 'subvisor' } },
    });
    h.agent.answer(initialize.id, GEMINI_INIT);
    const created = await h.agent.next();
    expect(created).toMatchObject({ method: 'session/new', params: { cwd: '/tmp/acp-cwd', mcpServers: [] } });
    expect(h.ofType('info')[0]).toMatchObject({ nativeType: 'authMethods', extra: { authMethods: ['oauth-personal', 'gemini-api-key'] } });
    expect(h.agent.peer.lines.some((line) => line.includes('"authenticate"'))).toBe(false);
    h.agent.answer(created.id, { sessionId: SESSION, models: { currentModelId: 'auto' } });
    const prompt = await h.agent.next();
    expect(prompt).toMatchObject({ method: 'session/prompt', params: { sessionId: SESSION, prompt: [{ type: 'text', text: 'Say hello' }] } });
    expect(h.log.slice(h.log.indexOf(`session ${SESSION}`))).toEqual([`session ${SESSION}`, 'ready', 'event ready', 'event agent-started', 'turnStarted 1', 'event turn-started', `ack ${h.launch.taskRef} accepted`]);
  });

  it('an agent answering another protocol version is refused (version-mismatch), no session asked', async () => {
    const h = acpLinked();
    const initialize = await h.agent.next();
    h.agent.answer(initialize.id, { ...GEMINI_INIT, protocolVersion: 2 });
    await h.until(() => h.log.some((entry) => entry.startsWith('fatal')));
    expect(h.log).toContain('fatal version-mismatch: the agent speaks ACP version 2; subvisor speaks version 1');
    expect(h.agent.peer.lines).toHaveLength(1);
  });

  it('resume: session/load when the agent offers loadSession (its replayed history is notices), session/resume before it, refused when neither', async () => {
    const load = acpLinked({ resume: SESSION });
    const initialize = await load.agent.next();
    load.agent.answer(initialize.id, GEMINI_INIT);
    const loading = await load.agent.next();
    expect(loading).toMatchObject({ method: 'session/load', params: { sessionId: SESSION, cwd: '/tmp/acp-cwd', mcpServers: [] } });
    load.agent.update({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'old question' } });
    load.agent.answer(loading.id, { models: { currentModelId: 'auto' } });
    // Gemini CLI 0.61.0 streams most of the history after its answer: the run is ready once it is quiet.
    load.agent.update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'old answer' } });
    expect(await load.agent.next()).toMatchObject({ method: 'session/prompt', params: { sessionId: SESSION } });
    expect(load.ofType('assistant-text-delta')).toEqual([]);
    expect(load.ofType('info').find((event) => event.nativeType === 'agent_message_chunk')).toMatchObject({ summary: 'history replayed by session/load' });
    expect(load.log).toContain(`session ${SESSION}`);

    const resume = acpLinked({ resume: SESSION });
    resume.agent.answer((await resume.agent.next()).id, { ...GEMINI_INIT, agentCapabilities: { loadSession: true, sessionCapabilities: { resume: {} } } });
    expect(await resume.agent.next()).toMatchObject({ method: 'session/resume', params: { sessionId: SESSION } });

    const neither = acpLinked({ resume: SESSION });
    neither.agent.answer((await neither.agent.next()).id, { protocolVersion: 1, agentCapabilities: {} });
    await neither.until(() => neither.log.some((entry) => entry.startsWith('fatal')));
    expect(neither.log.find((entry) => entry.startsWith('fatal'))).toMatch(/^fatal usage-error: the agent can neither load nor resume/);

    const unknown = acpLinked({ resume: 'no-such-session' });
    unknown.agent.answer((await unknown.agent.next()).id, GEMINI_INIT);
    unknown.agent.fail((await unknown.agent.next()).id, -32602, 'Session not found: no-such-session');
    await unknown.until(() => unknown.log.some((entry) => entry.startsWith('fatal')));
    expect(unknown.log.find((entry) => entry.startsWith('fatal'))).toBe('fatal unknown-session: the agent refused session/load: Session not found: no-such-session');
  });
});

describe('acp driver: a prompt turn', () => {
  it('thoughts, text and a tool call as events; the answer is the last message; usage from _meta.quota; close ends stdin; done', async () => {
    const h = acpLinked();
    const prompt = await h.handshake();
    h.agent.update({ sessionUpdate: 'available_commands_update', availableCommands: [{ name: 'memory' }] });
    h.agent.update({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: '**Plan**\nthink' } });
    h.agent.update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'I will ' } });
    h.agent.update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'run it.' } });
    h.agent.update({ sessionUpdate: 'tool_call', toolCallId: 'run_shell_command-1', status: 'in_progress', title: 'echo hi', kind: 'execute', content: [] });
    h.agent.update({ sessionUpdate: 'tool_call_update', toolCallId: 'run_shell_command-1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'hi' } }] });
    h.agent.update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Done.' } });
    h.agent.update({ sessionUpdate: 'some_future_kind', detail: 1 });
    h.agent.update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'not ours' } }, 'another-session');
    h.agent.answer(prompt.id, { stopReason: 'end_turn', _meta: { quota: { token_count: { input_tokens: 120, output_tokens: 7 }, model_usage: [{ model: 'gemini-3.8-flash', token_count: { input_tokens: 120, output_tokens: 7 } }] } } });
    await h.until(() => h.log.includes('turnCompleted 1 end_turn'));
    expect(h.ofType('assistant-thinking-delta').map((event) => event.delta)).toEqual(['**Plan**\nthink']);
    expect(h.ofType('assistant-text-delta').map((event) => [event.delta, event.contentIndex])).toEqual([['I will ', 1], ['run it.', 1], ['Done.', 2]]);
    expect(h.ofType('assistant-thinking')).toMatchObject([{ text: '**Plan**\nthink', final: false, contentIndex: 0 }]);
    expect(h.ofType('assistant-text')).toMatchObject([{ text: 'I will run it.', final: false }, { text: 'Done.', final: true }]);
    expect(h.ofType('tool-call')).toMatchObject([{ name: 'execute', id: 'run_shell_command-1', arguments: { title: 'echo hi', kind: 'execute' } }]);
    expect(h.ofType('tool-result')).toMatchObject([{ name: 'execute', isError: false, toolCallId: 'run_shell_command-1', result: [{ type: 'content' }] }]);
    expect(h.ofType('info').map((event) => event.nativeType)).toEqual(['authMethods', 'available_commands_update', 'some_future_kind', 'agent_message_chunk']);
    expect(h.ofType('info').at(-1)).toMatchObject({ summary: 'of another session' });
    expect(h.ofType('llm-start')).toMatchObject([{ model: 'gemini-3.8-flash' }]);
    expect(h.ofType('turn-complete')).toMatchObject([{ turn: 1, stopReason: 'end_turn', usage: { inputTokens: 120, outputTokens: 7 } }]);
    const closed = h.send({ type: 'close' });
    await h.until(() => h.agent.peer.inputEnded);
    expect(h.log).toContain(`ack ${(closed as { ref: number }).ref} accepted`);
    await h.exitWith(0);
    expect(h.exit).toEqual({ status: 'done' });
    expect(await h.answers[0]).toMatchObject({ finalText: 'Done.' });
    expect(h.ofType('result')).toMatchObject([{ finalText: 'Done.', usage: { inputTokens: 120, outputTokens: 7 } }]);
  });

  it("a prompt answered with a JSON-RPC error ends the turn error with the model's message, and the run failed", async () => {
    const h = acpLinked();
    const prompt = await h.handshake();
    h.agent.fail(prompt.id, 400, '{"error":{"code":400,"message":"scripted failure: bad request","status":"INVALID_ARGUMENT"}}');
    await h.until(() => h.log.includes('turnCompleted 1 error'));
    expect(h.ofType('turn-complete')).toMatchObject([{ stopReason: 'error', error: 'scripted failure: bad request' }]);
    h.send({ type: 'close' });
    await h.until(() => h.agent.peer.inputEnded);
    await h.exitWith(0);
    expect(h.exit).toEqual({ status: 'failed', error: 'scripted failure: bad request' });
  });

  it('a prompt refused with 429 (Gemini CLI once its retries are spent) is rate-limit news, with the turn-complete\'s seq', async () => {
    const h = acpLinked();
    const prompt = await h.handshake();
    h.agent.fail(prompt.id, 429, 'Rate limit exceeded. Try again later.');
    await h.until(() => h.ofType('rate-limit').length === 1);
    expect(h.log.slice(h.log.indexOf('rateLimit limited 429'))).toEqual(['rateLimit limited 429', 'turnCompleted 1 error', 'event turn-complete', 'event rate-limit']);
    const [complete] = h.ofType('turn-complete');
    expect(h.ofType('rate-limit')[0]).toMatchObject({ status: 'limited', httpStatus: 429, agentRetries: false, nativeType: 'session/prompt', seq: complete!.seq });
  });

  it('a session/new refused (Kimi CLI without a login answers AUTH_REQUIRED) fails the run with the agent\'s message', async () => {
    const h = acpLinked();
    h.agent.answer((await h.agent.next()).id, GEMINI_INIT);
    h.agent.fail((await h.agent.next()).id, -32000, 'Authentication required');
    await h.until(() => h.log.some((entry) => entry.startsWith('fatal')));
    expect(h.log.find((entry) => entry.startsWith('fatal'))).toBe('fatal protocol-error: the agent refused session/new: Authentication required');
  });

  it('a stop reason ACP does not have, or a bad update, is reported and the run goes on', async () => {
    const h = acpLinked();
    const prompt = await h.handshake();
    h.agent.send('not json');
    h.agent.update({ sessionUpdate: 'tool_call', title: 'no id' });
    h.agent.send({ jsonrpc: '2.0', method: 'session/update', params: { update: {} } });
    h.agent.answer(prompt.id, { stopReason: 'finished' });
    await h.until(() => h.log.includes('turnCompleted 1 error'));
    expect(h.log.filter((entry) => entry.startsWith('rejected'))).toHaveLength(3);
    expect(h.ofType('turn-complete')[0]).toMatchObject({ error: 'the agent answered session/prompt with the stop reason "finished"' });
  });

  it('fs/* and terminal/* (and any other client method) are answered -32601 and reported', async () => {
    const h = acpLinked();
    await h.handshake();
    h.agent.request(0, 'fs/read_text_file', { sessionId: SESSION, path: '/etc/passwd' });
    h.agent.request(1, 'terminal/create', { sessionId: SESSION, command: 'ls' });
    const first = await h.agent.next();
    const second = await h.agent.next();
    expect([first, second]).toMatchObject([
      { id: 0, error: { code: -32601 } },
      { id: 1, error: { code: -32601 } },
    ]);
    await h.until(() => h.ofType('info').length >= 3);
    expect(h.ofType('info').slice(1).map((event) => event.nativeType)).toEqual(['fs/read_text_file', 'terminal/create']);
  });
});

describe('acp driver: permissions', () => {
  const permission = (toolCallId: string) => ({
    sessionId: SESSION,
    options: [
      { optionId: 'proceed_always', name: 'Allow for this session', kind: 'allow_always' },
      { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
      { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
    ],
    toolCall: { toolCallId, status: 'pending', title: 'touch made.txt', content: [], locations: [], kind: 'execute' },
  });

  it('without approve the reject_once option is chosen; the tool call is announced and ends an error', async () => {
    const h = acpLinked();
    await h.handshake();
    h.agent.request(0, 'session/request_permission', permission('run_shell_command-1'));
    expect(await h.agent.next()).toEqual({ jsonrpc: '2.0', id: 0, result: { outcome: { outcome: 'selected', optionId: 'cancel' } } });
    expect(h.ofType('tool-call')).toMatchObject([{ id: 'run_shell_command-1', name: 'execute' }]);
    expect(h.ofType('tool-result')).toMatchObject([{ id: 'run_shell_command-1', isError: true, result: 'denied (reject_once)' }]);
    expect(h.ofType('info').find((event) => event.nativeType === 'approval_response')).toMatchObject({ approved: false, decidedBy: 'no-callback', kind: 'tool_call' });
  });

  it('approve sees a tool_call approval; approved, the allow_once option is chosen', async () => {
    const asked: ApprovalRequest[] = [];
    const h = acpLinked({ approve: (request) => (asked.push(request), true) });
    await h.handshake();
    h.agent.request(0, 'session/request_permission', permission('run_shell_command-2'));
    expect(await h.agent.next()).toMatchObject({ id: 0, result: { outcome: { outcome: 'selected', optionId: 'proceed_once' } } });
    expect(asked).toEqual([expect.objectContaining({ protocol: 'acp', kind: 'tool_call', known: true, toolCallId: 'run_shell_command-2', title: 'touch made.txt', toolKind: 'execute', rawInput: null })]);
    expect(h.ofType('tool-result')).toEqual([]);
  });

  it('a request whose tool call cannot be read is an unknown kind: true from approve is a denial; no reject option: cancelled', async () => {
    const h = acpLinked({ approve: () => true });
    await h.handshake();
    h.agent.request(0, 'session/request_permission', { sessionId: SESSION, options: [{ optionId: 'ok', name: 'OK', kind: 'allow_once' }] });
    expect(await h.agent.next()).toMatchObject({ id: 0, result: { outcome: { outcome: 'cancelled' } } });
  });

  it('cancel: session/cancel, the waiting permission answered cancelled, the prompt answers cancelled, stdin ends, the run cancelled', async () => {
    const h = acpLinked({ approve: () => new Promise<boolean>(() => undefined) });
    const prompt = await h.handshake();
    h.agent.request(7, 'session/request_permission', permission('run_shell_command-3'));
    await h.until(() => h.ofType('tool-call').length === 1);
    h.send({ type: 'cancel' });
    expect(await h.agent.next()).toEqual({ jsonrpc: '2.0', method: 'session/cancel', params: { sessionId: SESSION } });
    expect(await h.agent.next()).toEqual({ jsonrpc: '2.0', id: 7, result: { outcome: { outcome: 'cancelled' } } });
    expect(h.agent.peer.inputEnded).toBe(false);
    h.agent.answer(prompt.id, { stopReason: 'cancelled' });
    await h.until(() => h.agent.peer.inputEnded);
    expect(h.ofType('turn-complete')).toMatchObject([{ stopReason: 'aborted' }]);
    await h.exitWith(0);
    expect(h.exit).toEqual({ status: 'cancelled' });
  });

  it('$/cancel_request withdraws a request not answered yet: it gets no answer', async () => {
    const h = acpLinked({ approve: () => new Promise<boolean>(() => undefined) });
    await h.handshake();
    h.agent.request(3, 'session/request_permission', permission('run_shell_command-4'));
    h.agent.send({ jsonrpc: '2.0', method: '$/cancel_request', params: { requestId: 3 } });
    await h.until(() => h.ofType('info').some((event) => event.nativeType === '$/cancel_request'));
    h.send({ type: 'cancel' });
    expect(await h.agent.next()).toMatchObject({ method: 'session/cancel' });
    await h.until(() => h.log.some((entry) => entry.startsWith('ack')));
    const answers = h.agent.peer.lines.map((line) => JSON.parse(line) as { id?: number; method?: string }).filter((message) => message.method === undefined);
    expect(answers).toEqual([]);
  });
});

describe('acp driver: steer and follow-up', () => {
  it('a steer while a prompt runs is refused; a follow-up waits for the turn and is the next session/prompt', async () => {
    const h = acpLinked();
    const prompt = await h.handshake();
    const steer = h.send({ type: 'steer', text: 'also this' }) as { ref: number };
    const followUp = h.send({ type: 'follow-up', text: 'then this' }) as { ref: number };
    await h.until(() => h.log.some((entry) => entry.startsWith(`ack ${followUp.ref}`)));
    expect(h.log).toContain(`ack ${steer.ref} rejected: ACP v1 has no steer: a prompt is running (send a follow-up to queue the text as the next prompt, or cancel)`);
    expect(h.log).toContain(`ack ${followUp.ref} accepted`);
    h.agent.answer(prompt.id, { stopReason: 'end_turn' });
    const second = await h.agent.next();
    expect(second).toMatchObject({ method: 'session/prompt', params: { prompt: [{ type: 'text', text: 'then this' }] } });
    expect(h.log).toContain(`delivery ${followUp.ref} injected`);
    const order = h.events.map((event) => event.type).filter((type) => type.startsWith('turn-') || type === 'follow-up-injected');
    expect(order).toEqual(['turn-started', 'turn-complete', 'turn-started', 'follow-up-injected']);
  });

  it('finalize while a prompt runs: session/cancel, then one last prompt with the note, then stdin ends; done with its answer', async () => {
    const h = acpLinked();
    const prompt = await h.handshake();
    h.send({ type: 'finalize', note: 'Wrap up now.' });
    expect(await h.agent.next()).toMatchObject({ method: 'session/cancel', params: { sessionId: SESSION } });
    h.agent.answer(prompt.id, { stopReason: 'cancelled' });
    const last = await h.agent.next();
    expect(last).toMatchObject({ method: 'session/prompt', params: { prompt: [{ type: 'text', text: 'Wrap up now.' }] } });
    h.agent.update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Final words.' } });
    h.agent.answer(last.id, { stopReason: 'end_turn' });
    await h.until(() => h.agent.peer.inputEnded);
    expect(h.ofType('turn-complete').map((event) => event.stopReason)).toEqual(['aborted', 'end_turn']);
    await h.exitWith(0);
    expect(h.exit).toEqual({ status: 'done' });
    expect(await h.answers[0]).toMatchObject({ finalText: 'Final words.' });
  });

  it('a steer when no prompt runs starts one', async () => {
    const h = acpLinked({ task: undefined, keepAlive: true });
    const initialize = await h.agent.next();
    h.agent.answer(initialize.id, GEMINI_INIT);
    h.agent.answer((await h.agent.next()).id, { sessionId: SESSION });
    await h.until(() => h.log.includes('ready'));
    const steer = h.send({ type: 'steer', text: 'go' }) as { ref: number };
    expect(await h.agent.next()).toMatchObject({ method: 'session/prompt', params: { prompt: [{ text: 'go' }] } });
    await h.until(() => h.log.includes(`delivery ${steer.ref} injected`));
    expect(h.log).toContain(`ack ${steer.ref} accepted`);
  });
});
