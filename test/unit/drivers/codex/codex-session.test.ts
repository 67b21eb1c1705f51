// Unit tests of the Codex session: the handshake, turns, steers, follow-ups, cancel, finalize, failures and the end, from lines shaped like codex 0.169.0 app-server's.
import { describe, expect, it } from 'vitest';
import { FINALIZE_PROMPT } from '../../../../src/drivers/shared/session.js';
import { configOverrides } from '../../../../src/drivers/codex/requests-out.js';
import { codexHarness, handshake, honestTurn, itemParams, THREAD, tokenUsage, TURN, TURN_2, turnAnswer, turnCompleted } from '../../../helpers/codex-session.js';

/** The 400 of the transcript: the provider's whole body as the message. */
const BODY_400 = JSON.stringify({ error: { message: 'scripted failure: bad request', type: 'invalid_request_error', param: null, code: 'invalid_request_error' } });

describe('CodexSession: the handshake', () => {
  it('initializes, says initialized, starts a thread with the safe defaults, and is ready with the thread id as its session', () => {
    const h = codexHarness({ task: undefined });
    handshake(h);
    expect(h.sent).toEqual([
      { id: 1, method: 'initialize', params: { clientInfo: { name: 'subvisor', title: 'subvisor', version: '0.1.0' }, capabilities: null } },
      { method: 'initialized' },
      { id: 2, method: 'thread/start', params: { cwd: '/tmp/fm/cwd', approvalPolicy: 'untrusted', sandbox: 'workspace-write' } },
    ]);
    expect(h.sent.every((message) => !('jsonrpc' in message))).toBe(true);
    expect(h.log).toEqual(['event info', `session ${THREAD}`, 'ready', 'event ready', 'event agent-started']);
    expect(h.ofType('agent-started')).toEqual([{ type: 'agent-started', model: 'fake-model', provider: 'fake-model' }]);
    expect(h.ofType('ready')[0]!.extra).toMatchObject({ threadId: THREAD, approvalPolicy: 'untrusted', cwd: '/tmp/fm/cwd' });
    expect(h.session.state).toBe('ready');
  });

  it('starts the task as the first turn once the thread runs, and acks it when Codex answers with the turn', () => {
    const h = codexHarness();
    handshake(h);
    expect(h.last()).toEqual({ id: 3, method: 'turn/start', params: { threadId: THREAD, input: [{ type: 'text', text: 'Say hello', text_elements: [] }] } });
    expect(h.log).not.toContain('ack 1 accepted');
    h.line(turnAnswer(3));
    expect(h.log.slice(-3)).toEqual(['ack 1 accepted', 'turnStarted 1', 'event turn-started']);
  });

  it('leaves out what the caller overrides with -c, so Codex\'s configuration decides', () => {
    expect([...configOverrides(['-c', 'approval_policy="never"', '--config=sandbox_mode="danger-full-access"', '-cmodel="o3"', '--enable', 'x'])]).toEqual(['approval_policy', 'sandbox_mode', 'model']);
    const h = codexHarness({ task: undefined, args: ['-c', 'approval_policy="never"'] });
    handshake(h);
    expect(h.sent[2]).toEqual({ id: 2, method: 'thread/start', params: { cwd: '/tmp/fm/cwd', sandbox: 'workspace-write' } });
  });

  it('resumes a thread by id, and fails unknown-session when Codex has no such thread', () => {
    const h = codexHarness({ task: undefined, resume: THREAD });
    h.session.start();
    h.line({ id: 1, result: {} });
    expect(h.last()).toEqual({ id: 2, method: 'thread/resume', params: { threadId: THREAD, cwd: '/tmp/fm/cwd', approvalPolicy: 'untrusted', sandbox: 'workspace-write', excludeTurns: true } });
    h.line({ error: { code: -32600, message: `no rollout found for thread id ${THREAD}` }, id: 2 });
    expect(h.log).toEqual([`fatal unknown-session: codex refused thread/resume: no rollout found for thread id ${THREAD}`]);
  });

  it('fails protocol-error when Codex refuses initialize, and says nothing more when the process went first', () => {
    const refused = codexHarness();
    refused.session.start();
    refused.line({ error: { code: -32600, message: 'Already initialized' }, id: 1 });
    expect(refused.log).toEqual(['fatal protocol-error: codex refused initialize: Already initialized']);
    const gone = codexHarness();
    gone.session.start();
    expect(gone.session.finish({ exitCode: 1, signal: null })).toBeUndefined();
    expect(gone.log).toEqual([]);
  });
});

describe('CodexSession: a turn', () => {
  it('maps the honest turn: thinking apart from the text, the answer the last agent message, usage from tokenUsage', () => {
    const h = codexHarness();
    handshake(h);
    h.clear();
    honestTurn(h);
    expect(h.events.map((event) => event.type)).toEqual([
      'turn-started',
      'info', // thread/status/changed
      'info', // turn/started
      'user',
      'info', // item/reasoning/summaryPartAdded
      'assistant-thinking-delta',
      'assistant-thinking-delta',
      'assistant-thinking',
      'assistant-text-delta',
      'assistant-text-delta',
      'assistant-text',
      'llm-end',
      'info', // account/rateLimits/updated: no window, no refusal
      'info', // thread/status/changed
      'turn-complete',
    ]);
    expect(h.ofType('assistant-thinking')).toEqual([expect.objectContaining({ text: 'The user wants a greeting.', final: false })]);
    expect(h.ofType('assistant-text-delta').map((event) => [event.delta, event.contentIndex])).toEqual([
      ['Hello from the s', 1],
      ['cripted model.', 1],
    ]);
    expect(h.ofType('assistant-text')).toEqual([expect.objectContaining({ text: 'Hello from the scripted model.', final: false, contentIndex: 1 })]);
    expect(h.ofType('llm-end')[0]!.usage).toMatchObject({ inputTokens: 10029, outputTokens: 14, totalTokens: 10043 });
    expect(h.ofType('turn-complete')).toEqual([expect.objectContaining({ turn: 1, stopReason: 'end_turn', usage: expect.objectContaining({ inputTokens: 10029, outputTokens: 14 }) })]);
    expect(h.rateLimits).toEqual([]);
    h.session.send({ type: 'close' });
    expect(h.inputEnded).toBe(true);
    expect(h.session.finish({ exitCode: 0, signal: null })).toEqual({ status: 'done' });
    expect(h.results).toEqual([{ stopReason: 'end_turn', text: 'Hello from the scripted model.' }]);
    expect(JSON.stringify(h.results)).not.toContain('greeting');
  });

  it('takes a second prompt in the same thread, and counts a usage update sent twice once', () => {
    const h = codexHarness({ task: undefined, outputSchema: { type: 'object' } });
    handshake(h);
    expect(h.session.send({ type: 'prompt', text: 'Again' })).toEqual({ ref: 1 });
    expect(h.last()).toEqual({ id: 3, method: 'turn/start', params: { threadId: THREAD, input: [{ type: 'text', text: 'Again', text_elements: [] }], outputSchema: { type: 'object' } } });
    h.line(turnAnswer(3));
    h.notify('thread/tokenUsage/updated', tokenUsage(100, { input: 90, output: 10 }));
    h.notify('thread/tokenUsage/updated', tokenUsage(100, { input: 90, output: 10 }));
    h.notify('turn/completed', turnCompleted('completed', { text: 'one' }));
    expect(h.ofType('llm-end')).toHaveLength(1);
    expect(h.answers).toEqual(['one']);
    h.session.send({ type: 'prompt', text: 'And again' });
    h.line(turnAnswer(4, TURN_2));
    h.notify('turn/completed', turnCompleted('completed', { turnId: TURN_2, text: 'two' }));
    expect(h.log.filter((entry) => entry.startsWith('turnCompleted'))).toEqual(['turnCompleted 1 end_turn', 'turnCompleted 2 end_turn']);
    h.session.send({ type: 'close' });
    h.session.finish({ exitCode: 0, signal: null });
    expect(h.results).toEqual([{ stopReason: 'end_turn', text: 'two' }]);
  });

  it('ends a turn failed with the model\'s own message out of the provider\'s body, and the run failed with it', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    h.notify('thread/status/changed', { threadId: THREAD, status: { type: 'systemError' } });
    const error = { message: BODY_400, codexErrorInfo: 'other', additionalDetails: null, misalignment: null };
    h.notify('error', { error, willRetry: false, threadId: THREAD, turnId: TURN });
    h.notify('turn/completed', turnCompleted('failed', { error }));
    expect(h.ofType('error')).toEqual([expect.objectContaining({ error: 'scripted failure: bad request', source: 'codex' })]);
    expect(h.ofType('turn-complete')).toEqual([expect.objectContaining({ stopReason: 'error', error: 'scripted failure: bad request' })]);
    expect(h.rateLimits).toEqual([]);
    h.session.send({ type: 'close' });
    expect(h.session.finish({ exitCode: 0, signal: null })).toEqual({ status: 'failed', error: 'scripted failure: bad request' });
    expect(h.results).toEqual([]);
  });

  it('is ready for the next prompt when the turn-complete event is published (a listener may send it from there)', () => {
    const h = codexHarness();
    const verdicts: unknown[] = [];
    h.onEvent((draft) => {
      if (draft.type === 'turn-complete') verdicts.push(h.session.send({ type: 'prompt', text: 'Next' }));
    });
    handshake(h);
    h.line(turnAnswer(3));
    h.notify('turn/completed', turnCompleted('completed', { text: 'one' }));
    expect(verdicts).toEqual([{ ref: 2 }]);
    expect(h.last()).toMatchObject({ method: 'turn/start', params: { input: [{ type: 'text', text: 'Next', text_elements: [] }] } });
  });

  it('reports a 429 Codex retries as rate-limit news, and the turn then completes', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    h.notify('error', {
      error: { message: 'Reconnecting... 1/5', codexErrorInfo: { responseStreamDisconnected: { httpStatusCode: 429 } }, additionalDetails: 'exceeded retry limit, last status: 429 Too Many Requests', misalignment: null },
      willRetry: true,
      threadId: THREAD,
      turnId: TURN,
    });
    expect(h.rateLimits).toEqual([
      { status: 'limited', nativeType: 'error', httpStatus: 429, agentRetries: true, attempt: 1, maxAttempts: 5, message: 'Reconnecting... 1/5: exceeded retry limit, last status: 429 Too Many Requests' },
    ]);
    expect(h.log.slice(-3)).toEqual(['rateLimit limited', 'event error', 'event rate-limit']);
    h.notify('turn/completed', turnCompleted('completed', { text: 'made it' }));
    expect(h.ofType('turn-complete')[0]).toMatchObject({ stopReason: 'end_turn' });
  });

  it('reads account/rateLimits/updated windows: warning at 90%, limited at 100% with the reset in epoch ms', () => {
    const h = codexHarness({ task: undefined });
    handshake(h);
    h.notify('account/rateLimits/updated', { rateLimits: { limitId: 'codex', primary: { usedPercent: 93, windowDurationMins: 300, resetsAt: 1796606000 }, secondary: null, rateLimitReachedType: null } });
    h.notify('account/rateLimits/updated', { rateLimits: { limitId: 'codex', primary: { usedPercent: 40, windowDurationMins: 300, resetsAt: null }, secondary: { usedPercent: 100, windowDurationMins: 10080, resetsAt: 1796609999 } } });
    expect(h.rateLimits).toEqual([
      { status: 'warning', nativeType: 'account/rateLimits/updated', resetsAt: 1796606000000, limitType: 'primary', message: 'primary window 93% used' },
      { status: 'limited', nativeType: 'account/rateLimits/updated', resetsAt: 1796609999000, limitType: 'secondary', message: 'secondary window 100% used' },
    ]);
  });

  it('keeps another thread\'s notifications (a sub-agent\'s) from ending this run\'s turn', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    h.notify('turn/completed', turnCompleted('completed', { threadId: 'another-thread', text: 'not ours' }));
    h.notify('item/agentMessage/delta', { threadId: 'another-thread', turnId: 'x', itemId: 'm', delta: 'not ours' });
    expect(h.ofType('turn-complete')).toEqual([]);
    expect(h.ofType('assistant-text-delta')).toEqual([]);
    expect(h.session.state).toBe('running');
  });

  it('rejects what it cannot read and goes on: a line that is not JSON, an item without its item, a completion with no readable status', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    h.line('\u001b[2m2026-12-07T01:25:15Z\u001b[0m ERROR codex_core');
    h.notify('item/completed', { threadId: THREAD, turnId: TURN });
    h.notify('item/agentMessage/delta', { threadId: THREAD, itemId: 7, delta: 'x' });
    expect(h.log.filter((entry) => entry.startsWith('rejected'))).toEqual([
      'rejected malformed: stdout line 5 is not JSON (45 characters)',
      'rejected invalid-payload: a codex notification (item/completed): item is missing',
      'rejected invalid-payload: a codex notification (item/agentMessage/delta): itemId must be a string',
    ]);
    h.notify('turn/completed', { threadId: THREAD, turn: { id: TURN, status: 'paused', items: [] } });
    expect(h.ofType('turn-complete')).toEqual([expect.objectContaining({ stopReason: 'error', error: 'codex completed the turn with status null' })]);
    expect(h.session.state).toBe('ready');
  });

  it('rejects a prompt Codex refuses, and goes back to ready', () => {
    const h = codexHarness({ task: undefined });
    handshake(h);
    h.session.send({ type: 'prompt', text: 'x' });
    h.line({ error: { code: -32600, message: 'thread not loaded' }, id: 3 });
    expect(h.log.slice(-2)).toEqual(['ack 1 rejected: codex did not start the turn: thread not loaded', 'event error']);
    expect(h.session.state).toBe('ready');
  });

  it('bounds turn/start: no answer within the bound rejects the prompt', () => {
    const h = codexHarness({ task: undefined, requestMs: 1000 });
    handshake(h);
    h.session.send({ type: 'prompt', text: 'x' });
    h.clock.advance(999);
    expect(h.log.filter((entry) => entry.startsWith('ack'))).toEqual([]);
    h.clock.advance(1);
    expect(h.log.filter((entry) => entry.startsWith('ack'))).toEqual(['ack 1 rejected: codex did not start the turn: no answer to request 3 within 1000 ms']);
  });
});

describe('CodexSession: steer, follow-up', () => {
  it('steers the running turn with its id, acks it when Codex takes it, and delivers it when its user message shows', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    h.notify('item/agentMessage/delta', { threadId: THREAD, turnId: TURN, itemId: 'msg_fake_7', delta: 'one ' });
    expect(h.session.send({ type: 'steer', text: 'STEER: also say banana' })).toEqual({ ref: 2 });
    expect(h.last()).toEqual({ id: 4, method: 'turn/steer', params: { threadId: THREAD, expectedTurnId: TURN, input: [{ type: 'text', text: 'STEER: also say banana', text_elements: [] }] } });
    h.line({ id: 4, result: { turnId: TURN } });
    expect(h.log.at(-1)).toBe('ack 2 accepted');
    h.notify('thread/tokenUsage/updated', tokenUsage(500, { input: 490, output: 10 }));
    h.notify('item/completed', itemParams({ type: 'userMessage', id: 'u2', clientId: null, content: [{ type: 'text', text: 'STEER: also say banana', text_elements: [] }] }));
    expect(h.log.slice(-2)).toEqual(['delivery 2 injected', 'event steering-injected']);
    h.notify('item/completed', itemParams({ type: 'agentMessage', id: 'msg_fake_8', text: 'after the steer', phase: null }));
    h.notify('turn/completed', turnCompleted('completed', { text: 'after the steer' }));
    expect(h.answers).toEqual(['after the steer']);
    // The cut message never completed: its deltas were block 0, the new message block 1.
    expect(h.ofType('assistant-text')[0]).toMatchObject({ contentIndex: 1 });
  });

  it('rejects a steer Codex refuses, and drops one whose turn ended before it reached it', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    h.session.send({ type: 'steer', text: 'late' });
    h.line({ error: { code: -32600, message: 'no active turn to steer' }, id: 4 });
    expect(h.log.at(-1)).toBe('ack 2 rejected: codex refused the steer: no active turn to steer');
    h.session.send({ type: 'steer', text: 'too late' });
    h.line({ id: 5, result: { turnId: TURN } });
    h.notify('turn/completed', turnCompleted('completed', { text: 'done' }));
    expect(h.log).toContain('delivery 3 dropped');
  });

  it('holds a steer until Codex names the turn, then steers it', () => {
    const h = codexHarness();
    handshake(h);
    h.session.send({ type: 'steer', text: 'early' });
    expect(h.last()?.['method']).toBe('turn/start');
    h.line(turnAnswer(3));
    expect(h.last()).toMatchObject({ method: 'turn/steer', params: { expectedTurnId: TURN } });
  });

  it('holds a follow-up for the end of the turn, then starts the next turn with it, delivered when Codex answers', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    expect(h.session.send({ type: 'follow-up', text: 'next' })).toEqual({ ref: 2, status: 'accepted' });
    expect(h.sent.filter((message) => message['method'] === 'turn/start')).toHaveLength(1);
    h.notify('turn/completed', turnCompleted('completed', { text: 'first' }));
    expect(h.last()).toMatchObject({ id: 4, method: 'turn/start', params: { input: [{ type: 'text', text: 'next', text_elements: [] }] } });
    h.line(turnAnswer(4, TURN_2));
    expect(h.log.slice(-4)).toEqual(['delivery 2 injected', 'event follow-up-injected', 'turnStarted 2', 'event turn-started']);
    expect(h.log.filter((entry) => entry.startsWith('ack 2'))).toEqual([]);
  });

  it('starts a turn with a steer sent while ready, delivered with the turn', () => {
    const h = codexHarness({ task: undefined });
    handshake(h);
    h.session.send({ type: 'steer', text: 'go' });
    h.line(turnAnswer(3));
    expect(h.log.slice(-5)).toEqual(['ack 1 accepted', 'delivery 1 injected', 'event steering-injected', 'turnStarted 1', 'event turn-started']);
  });
});

describe('CodexSession: cancel, close, finalize, the end', () => {
  it('cancels mid-stream: turn/interrupt, the interrupted turn aborted, then the end of stdin; the run cancelled', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    h.notify('item/agentMessage/delta', { threadId: THREAD, turnId: TURN, itemId: 'msg_fake_9', delta: 'neve' });
    expect(h.session.send({ type: 'cancel' })).toEqual({ ref: 2, status: 'accepted' });
    expect(h.last()).toEqual({ id: 4, method: 'turn/interrupt', params: { threadId: THREAD, turnId: TURN } });
    expect(h.inputEnded).toBe(false);
    h.notify('thread/tokenUsage/updated', tokenUsage(300, { input: 290, output: 10 }));
    h.line({ id: 4, result: {} });
    h.notify('turn/completed', turnCompleted('interrupted'));
    expect(h.ofType('turn-complete')).toEqual([expect.objectContaining({ stopReason: 'aborted' })]);
    expect(h.inputEnded).toBe(true);
    expect(h.session.finish({ exitCode: 0, signal: null })).toEqual({ status: 'cancelled' });
  });

  it('cancels an idle run at once, and ends stdin even when Codex never answers the interrupt', () => {
    const idle = codexHarness({ task: undefined });
    handshake(idle);
    idle.session.send({ type: 'cancel' });
    expect(idle.inputEnded).toBe(true);
    const deaf = codexHarness({ requestMs: 500 });
    handshake(deaf);
    deaf.line(turnAnswer(3));
    deaf.session.send({ type: 'cancel' });
    deaf.clock.advance(500);
    expect(deaf.inputEnded).toBe(true);
  });

  it('closes after the running turn, and after the finalize\'s last turn', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    h.session.send({ type: 'close' });
    expect(h.inputEnded).toBe(false);
    h.notify('turn/completed', turnCompleted('completed', { text: 'done' }));
    expect(h.inputEnded).toBe(true);

    const f = codexHarness();
    handshake(f);
    f.line(turnAnswer(3));
    f.session.send({ type: 'finalize' });
    expect(f.last()).toEqual({ id: 4, method: 'turn/interrupt', params: { threadId: THREAD, turnId: TURN } });
    f.line({ id: 4, result: {} });
    f.notify('turn/completed', turnCompleted('interrupted'));
    expect(f.last()).toMatchObject({ id: 5, method: 'turn/start', params: { input: [{ type: 'text', text: FINALIZE_PROMPT, text_elements: [] }] } });
    f.line(turnAnswer(5, TURN_2));
    f.notify('turn/completed', turnCompleted('completed', { turnId: TURN_2, text: 'what was done' }));
    expect(f.inputEnded).toBe(true);
    expect(f.session.finish({ exitCode: 0, signal: null })).toEqual({ status: 'done' });
    expect(f.results).toEqual([{ stopReason: 'end_turn', text: 'what was done' }]);
  });

  it('says nothing of an exit it did not ask for, and fails an exit code that is not 0 after the end of stdin', () => {
    const crashed = codexHarness();
    handshake(crashed);
    crashed.line(turnAnswer(3));
    expect(crashed.session.finish({ exitCode: null, signal: 'SIGKILL' })).toBeUndefined();
    const odd = codexHarness({ task: undefined });
    handshake(odd);
    odd.session.send({ type: 'close' });
    expect(odd.session.finish({ exitCode: 3, signal: null })).toEqual({ status: 'failed', error: 'codex app-server exited with code 3 after its stdin ended' });
  });

  it('refuses a prompt while a turn runs, and every control before ready but cancel', () => {
    const h = codexHarness();
    expect(h.session.send({ type: 'prompt', text: 'x' })).toEqual({ ref: 2, status: 'rejected', reason: 'child is not ready' });
    handshake(h);
    h.line(turnAnswer(3));
    expect(h.session.send({ type: 'prompt', text: 'x' })).toEqual({ ref: 3, status: 'rejected', reason: 'a turn is running; send steer or follow-up' });
  });

  it('drops a held follow-up when the run is cancelled', () => {
    const h = codexHarness();
    handshake(h);
    h.line(turnAnswer(3));
    h.session.send({ type: 'follow-up', text: 'later' });
    h.session.send({ type: 'cancel' });
    expect(h.log).toContain('delivery 2 dropped');
    expect(h.events.at(-1)).toMatchObject({ type: 'info', nativeType: 'dropped', refs: [2] });
  });

  it('answers -32601 to a method it does not serve, and says so', () => {
    const h = codexHarness({ task: undefined });
    handshake(h);
    h.line({ id: 7, method: 'account/chatgptAuthTokens/refresh', params: {} });
    expect(h.last()).toEqual({ id: 7, error: { code: -32601, message: 'Method not found: account/chatgptAuthTokens/refresh' } });
    expect(h.events.at(-1)).toMatchObject({ type: 'info', nativeType: 'account/chatgptAuthTokens/refresh', requestId: '7' });
  });
});
