// Unit tests of the mew session: handshake, versions, both tag spellings, turns, answer, receipts, controls, the end.
import { describe, expect, it } from 'vitest';
import { STEER_REFUSAL } from '../../../../src/drivers/mew/mew-session.js';
import { FINALIZE_PROMPT } from '../../../../src/drivers/shared/session.js';
import { delta, IDLE, messageEnd, mewSession, partStart, PONG, READY, TEXT_START, TURN_COMPLETE, TURN_FAILED } from '../../../helpers/mew-recorder.js';

describe('handshake', () => {
  it('pings and creates a session in cwd, is ready only after pong and session_ready, then submits the task', () => {
    const { rec, session, feed, receipt } = mewSession({ task: 'do it', cwd: '/work' });
    expect(session.taskRef).toBe(1);
    session.opened();
    expect(rec.sent).toEqual([{ type: 'ping' }, { type: 'new_session', cwd: '/work' }]);
    feed(READY);
    expect(rec.facts_('ready')).toEqual([]);
    feed(PONG);
    expect(rec.facts_('ready')).toEqual([['ready']]);
    expect(rec.events[0]).toEqual({ type: 'ready', extra: { session_id: 'sess_1', model: 'fake-model', provider: 'fake' } });
    expect(rec.sentOf('submit_prompt')).toEqual([{ type: 'submit_prompt', session_id: 'sess_1', request_id: 'r-1', text: 'do it', attachments: [] }]);
    expect(rec.facts_('ack')).toEqual([]);
    receipt('accepted');
    expect(rec.facts_('ack')).toEqual([['ack', 1, 'accepted', undefined]]);
    expect(rec.facts_('turnStarted')).toEqual([['turnStarted', 1]]);
    expect(session.state).toBe('running');
  });

  it('attaches to a given session, and fails when mew answers with another one', () => {
    const { rec, session, feed } = mewSession({ sessionId: 'sess_9' });
    session.opened();
    expect(rec.sent[1]).toEqual({ type: 'attach_session', session_id: 'sess_9' });
    feed(PONG, READY);
    expect(rec.facts_('fatal')).toEqual([['fatal', 'protocol-error', 'asked to attach session sess_9, mew answered with session sess_1']]);
    expect(rec.facts_('leave')).toHaveLength(1);
    expect(rec.facts_('ready')).toEqual([]);
  });

  it('an error answering attach_session (mew: "session not found") fails the run unknown-session, nothing submitted', () => {
    const { rec, session, feed } = mewSession({ sessionId: 'nope', task: 'x' });
    session.opened();
    feed(PONG, { type: 'error', message: 'session not found' });
    expect(rec.facts_('fatal')).toEqual([['fatal', 'unknown-session', 'mew could not attach session nope: session not found']]);
    expect(rec.facts_('leave')).toHaveLength(1);
    expect(rec.sentOf('submit_prompt')).toEqual([]);
  });

  it('the errors of a handshake are read in mew\'s order: one before the pong answers the ping (an old daemon), then the session\'s', () => {
    const old = mewSession({ sessionId: 'sess_1' });
    old.session.opened();
    old.feed({ type: 'error', message: 'invalid message: unknown variant `ping`' }, { type: 'error', message: 'session not found' });
    expect(old.rec.facts_('fatal')).toEqual([['fatal', 'version-mismatch', expect.stringMatching(/answered ping with an error \(invalid message: unknown variant `ping`\).*revision 3/)]]);
    const fresh = mewSession({ cwd: '/gone', task: 'x' });
    fresh.session.opened();
    fresh.feed(PONG, { type: 'error', message: 'session cwd does not exist: /gone' });
    expect(fresh.rec.facts_('fatal')).toEqual([['fatal', 'child-error', 'mew could not create a session: session cwd does not exist: /gone']]);
  });

  it('a session gone when re-attaching after a lost connection fails unknown-session', () => {
    const { rec, session, feed, handshake } = mewSession();
    handshake();
    expect(session.connectionLost('connection-lost', 'reset')).toBe(true);
    session.opened();
    feed(PONG, { type: 'error', message: 'session not found' });
    expect(rec.facts_('fatal')).toEqual([['fatal', 'unknown-session', 'mew could not attach session sess_1: session not found']]);
  });

  it('refuses a daemon below wire revision 3, or one that does not say, with a clear error and nothing submitted', () => {
    for (const pong of [{ type: 'pong', version: '0.4.1', protocol_version: 2 }, { type: 'pong', version: '0.4.1' }, { type: 'pong', protocol_version: '3' }]) {
      const { rec, session, feed } = mewSession({ task: 'x' });
      session.opened();
      feed(READY, pong);
      const [, code, error] = rec.facts_('fatal')[0]!;
      expect(code).toBe('version-mismatch');
      expect(error).toMatch(/needs revision 3 or later/);
      expect(rec.sentOf('submit_prompt')).toEqual([]);
    }
    const { rec, session, feed } = mewSession();
    session.opened();
    feed({ type: 'pong', version: '0.4.1', protocol_version: 2 });
    expect(rec.facts_('fatal')[0]![2]).toBe('the mew daemon "0.4.1" speaks wire revision 2; subvisor needs revision 3 or later (acknowledged submit_prompt with receipts): upgrade mew');
  });

  it('reads PascalCase tags (the seed example) as well as snake_case, nested provider tags and statuses included', () => {
    const { rec, session, feed } = mewSession({ task: 'x' });
    session.opened();
    feed({ type: 'Pong', version: '1', protocol_version: 3 }, { type: 'SessionReady', session_id: 'sess_1' });
    feed({ type: 'PromptReceipt', session_id: 'sess_1', request_id: 'r-1', status: 'Accepted' });
    feed({ type: 'Provider', event: { type: 'PartStart', part: { type: 'text', id: 'p', text: '' } } });
    feed({ type: 'Provider', event: { type: 'PartDelta', part_id: 'p', field: 'text', delta: 'hi' } }, { type: 'SessionAlert', alert: 'TurnComplete' });
    expect(rec.events.map((event) => event.type)).toEqual(['ready', 'info', 'turn-started', 'info', 'assistant-text-delta', 'info', 'turn-complete']);
    expect(session.answer()).toEqual({ text: 'hi', truncated: false });
  });

  it('reports badly tagged, early and incomplete messages, delivers unknown types raw, and goes on', () => {
    const { rec, session, feed } = mewSession();
    session.opened();
    feed({ type: 'provider', event: { type: 'part_delta', delta: 'early' } }, { type: 'Session-Ready' }, { type: 'sessionReady' });
    feed(PONG, READY, { type: 'mystery_event', x: 1 }, { type: 'tool_start' });
    expect(rec.rejections.map((r) => r.code)).toEqual(['out-of-order', 'invalid', 'invalid', 'invalid-payload']);
    expect(rec.rejections[1]!.reason).toBe('message 2 is not an object with a snake_case or PascalCase type');
    expect(rec.events.at(-1)).toEqual({ type: 'passthrough', protocol: 'mew', frame: { type: 'mystery_event', x: 1 } });
    expect(rec.facts_('ready')).toHaveLength(1);
    expect(rec.facts_('fatal')).toEqual([]);
  });

  it('does not replay session_history as events', () => {
    const { rec, session, feed } = mewSession({ sessionId: 'sess_1' });
    session.opened();
    feed(PONG, READY, { type: 'session_history', messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }] });
    expect(rec.events.at(-1)).toEqual({ type: 'info', nativeType: 'session_history', summary: 'session history: 2 message(s), not replayed', messageCount: 2 });
    expect(rec.events.some((event) => event.type === 'assistant-text-delta' || event.type === 'turn-started')).toBe(false);
  });
});

describe('turns', () => {
  it('maps a whole turn: text and thinking by part type, tools by call id, usage and cost summed over message_end', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    feed(
      partStart('reasoning', 'r1'),
      delta('hmm', 'r1'),
      TEXT_START,
      delta('Hel'),
      partStart('tool_call', 'p2'),
      delta('{"a"', 'p2', 'arguments'),
      // mew_message::Tokens {input, output, reasoning, cache_read, cache_write}.
      messageEnd({ input: 100, output: 5, reasoning: 0, cache_read: 0, cache_write: 0 }, 0.25, 'tool_use'),
      { type: 'tool_start', call_id: 'c1', name: 'read_file' },
      { type: 'tool_progress', call_id: 'c1', chunk: 'partial' },
      { type: 'tool_end', call_id: 'c1', success: true },
      // mew_message::ProviderEventWire::RetryWait {attempt, max_attempts, delay_secs, reason}.
      { type: 'provider', event: { type: 'retry_wait', attempt: 2, max_attempts: 5, delay_secs: 1, reason: '429 Too Many Requests' } },
      delta('lo'),
      messageEnd({ input: 120, output: 7, reasoning: 0, cache_read: 0, cache_write: 0 }, 0.5),
      { type: 'subagent_start', parent_call_id: 'c1', name: 'helper', child_session_id: 's2' },
      TURN_COMPLETE,
      IDLE,
    );
    const types = rec.events.map((event) => event.type);
    expect(types.slice(2)).toEqual([
      'turn-started', 'info', 'assistant-thinking-delta', 'info', 'assistant-text-delta', 'info', 'info', 'llm-end', 'tool-call', 'info', 'tool-result', 'info',
      'assistant-text-delta', 'llm-end', 'info', 'info', 'turn-complete', 'info',
    ]);
    expect(rec.events.find((event) => event.type === 'tool-call')).toEqual({ type: 'tool-call', name: 'read_file', id: 'c1' });
    expect(rec.events.find((event) => event.type === 'tool-result')).toEqual({ type: 'tool-result', name: 'read_file', isError: false, id: 'c1', toolCallId: 'c1' });
    expect(rec.events).toContainEqual(expect.objectContaining({ type: 'info', summary: 'the provider call failed (429 Too Many Requests); retrying (attempt 2 of 5) in 1000 ms' }));
    // mew's reasoning token count has no Usage field of its own: it is kept under other.
    const usage = { inputTokens: 220, outputTokens: 12, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.75, other: { reasoning: 0 } };
    expect(rec.facts_('turnCompleted')).toEqual([['turnCompleted', 1, 'stop', usage]]);
    expect(session.answer()).toEqual({ text: 'Hello', truncated: false });
    expect(session.state).toBe('ready');
    session.send({ type: 'close' }).then!();
    expect(rec.facts_('result')).toEqual([['result', { stopReason: 'end_turn', answer: { text: 'Hello', truncated: false }, usage }]]);
    expect(rec.facts_('exit')).toEqual([['exit', { status: 'done' }]]);
    expect(rec.log.at(-1)).toEqual(['leave']);
  });

  it('ends a turn on idle; a turn_failed alert after it makes the run fail', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    feed(delta('partial'), IDLE, { ...TURN_FAILED, message: 'provider gave up' });
    expect(rec.facts_('turnCompleted')).toEqual([['turnCompleted', 1, 'end_turn', undefined]]);
    session.send({ type: 'close' }).then!();
    expect(rec.facts_('result')).toEqual([]);
    expect(rec.facts_('exit')).toEqual([['exit', { status: 'failed', error: 'provider gave up' }]]);
  });

  it('error_event is a failed turn; the run fails with its message unless a later turn completes', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    feed(delta('x'), { type: 'error_event', message: 'context window exceeded' }, TURN_FAILED, IDLE);
    expect(rec.facts_('turnCompleted')).toEqual([['turnCompleted', 1, 'error', undefined]]);
    expect(rec.events.find((event) => event.type === 'error')).toEqual({ type: 'error', error: 'context window exceeded' });
    expect(session.send({ type: 'prompt', text: 'again' })).toEqual({ ref: 2 });
    receipt('accepted');
    feed(TEXT_START, delta('fine'), TURN_COMPLETE);
    session.send({ type: 'close' }).then!();
    expect(rec.facts_('exit')).toEqual([['exit', { status: 'done' }]]);
    expect(rec.facts_('result')[0]![1]).toMatchObject({ answer: { text: 'fine' } });
  });

  it('a rejected receipt is the prompt\'s rejected Ack with mew\'s message; request ids are never reused', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'one' });
    handshake();
    receipt('rejected', { message: 'session busy' });
    expect(rec.facts_('ack')).toEqual([['ack', 1, 'rejected', 'mew rejected the prompt: session busy']]);
    expect(session.state).toBe('ready');
    session.send({ type: 'prompt', text: 'two' });
    receipt('accepted');
    feed(TURN_COMPLETE);
    session.send({ type: 'prompt', text: 'three' });
    expect(rec.sentOf('submit_prompt').map((m) => m['request_id'])).toEqual(['r-1', 'r-2', 'r-3']);
    feed({ type: 'prompt_receipt', request_id: 'r-1', status: 'accepted' });
    expect(rec.events.at(-1)).toMatchObject({ type: 'info', nativeType: 'prompt_receipt', summary: 'a receipt for a request this run is not waiting on' });
  });

  it('a trailing message after the turn ended opens no turn; session_history before the pong is taken', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    feed(delta('done'), TURN_COMPLETE, messageEnd({ input_tokens: 1 }), { type: 'tool_end', call_id: 'c9', success: true });
    expect(rec.facts_('turnStarted')).toHaveLength(1);
    expect(session.state).toBe('ready');
    expect(rec.events.at(-1)).toMatchObject({ type: 'info', nativeType: 'tool_end', summary: 'after the turn ended' });
    const early = mewSession();
    early.session.opened();
    early.feed(READY, { type: 'session_history', messages: [] }, PONG);
    expect(early.rec.rejections).toEqual([]);
    expect(early.rec.facts_('ready')).toHaveLength(1);
  });

  it('a turn another client started is followed (and moves the run to running)', () => {
    const { rec, session, feed, handshake } = mewSession();
    handshake();
    feed(delta('theirs'));
    expect(session.state).toBe('running');
    feed(TURN_COMPLETE);
    expect(session.state).toBe('ready');
    expect(rec.facts_('turnCompleted')).toHaveLength(1);
  });
});

describe('parts: what is the answer', () => {
  const deltas = (events: ReadonlyArray<{ type: string }>, type: string) => events.filter((event) => event.type === type).map((event) => (event as Record<string, unknown>)['delta']);

  it('a delta is classified by the type of the part it names: text is the answer, reasoning is thinking, a tool call neither', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    // mew's providers: reasoning and text deltas both have field "text"; only part_start says which part is which.
    feed(partStart('reasoning', 'r1'), delta('Considering the files.', 'r1'), partStart('tool_call', 'c1'), delta('{"path":"a"}', 'c1', 'arguments'));
    feed(partStart('text', 't1'), delta('The answer', 't1'), delta(' is 42.', 't1'), TURN_COMPLETE);
    expect(session.answer()).toEqual({ text: 'The answer is 42.', truncated: false });
    expect(deltas(rec.events, 'assistant-thinking-delta')).toEqual(['Considering the files.']);
    expect(deltas(rec.events, 'assistant-text-delta')).toEqual(['The answer', ' is 42.']);
    session.send({ type: 'close' }).then!();
    expect(rec.facts_('result')[0]![1]).toMatchObject({ answer: { text: 'The answer is 42.' } });
  });

  it('a delta of a part this run never saw start is surfaced as info, never as the answer', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    feed(TEXT_START, delta('kept', 'p1'), delta('stray', 'unseen-part'), TURN_COMPLETE);
    expect(session.answer()?.text).toBe('kept');
    expect(rec.events).toContainEqual(expect.objectContaining({ type: 'info', nativeType: 'provider.part_delta', summary: expect.stringMatching(/part_start this client did not see/) }));
    expect(deltas(rec.events, 'assistant-text-delta')).toEqual(['kept']);
  });

  it('PascalCase daemons: PartStart / PartDelta tags (and a PascalCase part type) are read the same way', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    const pascal = (message: { event: Record<string, unknown> }, tag: string) => ({ type: 'Provider', event: { ...message.event, type: tag } });
    const reasoning = partStart('reasoning', 'r1');
    feed(pascal(reasoning, 'PartStart'), pascal(delta('Thinking hard.', 'r1'), 'PartDelta'));
    feed({ type: 'Provider', event: { type: 'PartStart', part: { ...partStart('text', 't1').event.part, type: 'Text' } } }, pascal(delta('Pascal answer.', 't1'), 'PartDelta'));
    feed({ type: 'SessionAlert', kind: 'TurnComplete' });
    expect(session.answer()?.text).toBe('Pascal answer.');
    expect(deltas(rec.events, 'assistant-thinking-delta')).toEqual(['Thinking hard.']);
  });

  it('after attach_session mid-turn: neither session_history nor the deltas of a part started before the attach are the answer', () => {
    const { rec, session, feed } = mewSession({ sessionId: 'sess_1' });
    session.opened();
    const history = [
      { id: 'm0', session_id: 'sess_1', role: 'user', parts: [{ type: 'text', id: 'u1', message_id: 'm0', session_id: 'sess_1', text: 'What is the answer?' }], time: { created: 1 } },
      { id: 'msg_1', session_id: 'sess_1', role: 'assistant', parts: [{ type: 'reasoning', id: 'r1', message_id: 'msg_1', session_id: 'sess_1', text: 'Considering the files.' }], time: { created: 2 } },
    ];
    feed(PONG, READY, { type: 'session_history', messages: history });
    // Another client's turn goes on: the reasoning part it started before this client attached, then a new text part.
    feed(delta(' Still considering.', 'r1'), partStart('text', 't1'), delta('The answer is 42.', 't1'), TURN_COMPLETE);
    expect(session.answer()).toEqual({ text: 'The answer is 42.', truncated: false });
    expect(deltas(rec.events, 'assistant-text-delta')).toEqual(['The answer is 42.']);
  });
});

describe('request ids', () => {
  const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

  it('a numeric request_id (older builds: u64) is answered with the number as it came: permissions, questions, request_resolved', async () => {
    const seen: unknown[] = [];
    const { rec, feed, handshake, receipt } = mewSession({ task: 'go', approve: (request) => (seen.push(request), true), answerQuestion: () => 'src/a.ts' });
    handshake();
    receipt('accepted');
    feed({ type: 'permission_request', request_id: 7, tool_name: 'bash', input: { command: 'ls' } });
    feed({ type: 'ask_user_request', request_id: 8, call_id: 'c2', questions: [{ prompt: 'Which file?', options: [] }] });
    await tick();
    expect(seen[0]).toMatchObject({ kind: 'tool_permission', known: true, requestId: '7', toolName: 'bash' });
    expect(rec.sentOf('permission_response')).toEqual([{ type: 'permission_response', request_id: 7, decision: 'allow_once' }]);
    expect(rec.sentOf('ask_user_response')).toEqual([{ type: 'ask_user_response', request_id: 8, answers: ['src/a.ts'], cancelled: false }]);
    expect(rec.rejections).toEqual([]);
  });

  it('request_resolved with a numeric id dismisses the request this client had not answered', async () => {
    const { rec, feed, handshake, receipt } = mewSession({ task: 'go', approve: () => new Promise<boolean>(() => undefined) });
    handshake();
    receipt('accepted');
    feed({ type: 'permission_request', request_id: 41, tool_name: 'bash', input: {} }, { type: 'request_resolved', request_id: 41 });
    await tick();
    expect(rec.sentOf('permission_response')).toEqual([]);
    expect(rec.events).toContainEqual(expect.objectContaining({ type: 'info', nativeType: 'permission_response', decidedBy: 'another-client' }));
  });

  it('an integer past 2^53 cannot be echoed exactly: never answered (no other id), surfaced, reported blocked until mew resolves it', async () => {
    const { rec, feed, handshake, receipt } = mewSession({ task: 'go', approve: () => true });
    handshake();
    receipt('accepted');
    // JSON.parse('18446744073709551615') is 18446744073709552000: answering it would name another request.
    feed({ type: 'permission_request', request_id: 18446744073709551615, tool_name: 'bash', input: {} });
    await tick();
    expect(rec.sentOf('permission_response')).toEqual([]);
    expect(rec.facts_('blocked')).toEqual([['blocked', '18446744073709552000', expect.stringMatching(/permission_request/)]]);
    expect(rec.events).toContainEqual(expect.objectContaining({ type: 'info', nativeType: 'permission_request', summary: expect.stringMatching(/cannot be answered/) }));
    feed({ type: 'request_resolved', request_id: 18446744073709551615 });
    expect(rec.facts_('unblocked')).toEqual([['unblocked', '18446744073709552000']]);
  });
});

describe('blocking requests', () => {
  it('PascalCase request tags are read as snake_case; a request nobody here can answer is blocked until its turn ends', () => {
    const { rec, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    feed({ type: 'PlanApprovalRequest', request_id: 'p1', call_id: 'c', plan_path: 'p.md', plan_markdown: '# P', persona: 'plan' });
    feed({ type: 'HologramRequest', request_id: 'h1' });
    expect(rec.sentOf('plan_approval_response')).toEqual([{ type: 'plan_approval_response', request_id: 'p1', approved: false }]);
    expect(rec.facts_('blocked')).toEqual([['blocked', '"h1"', expect.stringMatching(/hologram_request/)]]);
    feed(TURN_COMPLETE);
    expect(rec.facts_('unblocked')).toEqual([['unblocked', '"h1"']]);
  });
});

describe('controls', () => {
  it('steer mid-turn is rejected (mew has none); from ready it starts a turn like a prompt', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    expect(session.send({ type: 'steer', text: 'faster' })).toEqual({ ref: 2, status: 'rejected', reason: STEER_REFUSAL });
    expect(session.send({ type: 'prompt', text: 'p' })).toMatchObject({ status: 'rejected', reason: 'a turn is running; send steer or follow-up' });
    feed(TURN_COMPLETE);
    expect(session.send({ type: 'steer', text: 'now' })).toEqual({ ref: 4 });
    expect(rec.sentOf('submit_prompt').at(-1)).toMatchObject({ text: 'now', request_id: 'r-2' });
  });

  it('a follow-up mid-turn is held and submitted when the turn ends; its receipt is its delivery', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    expect(session.send({ type: 'follow-up', text: 'next' })).toEqual({ ref: 2, status: 'accepted' });
    expect(session.send({ type: 'follow-up', text: 'after' })).toEqual({ ref: 3, status: 'accepted' });
    expect(rec.sentOf('submit_prompt')).toHaveLength(1);
    feed(delta('a'), TURN_COMPLETE);
    expect(rec.sentOf('submit_prompt').at(-1)).toMatchObject({ text: 'next', request_id: 'r-2' });
    receipt('accepted');
    expect(rec.facts_('delivery')).toEqual([['delivery', 2, 'injected']]);
    feed(delta('b'), TURN_COMPLETE);
    receipt('rejected', { message: 'no' });
    expect(rec.facts_('delivery')).toEqual([['delivery', 2, 'injected'], ['delivery', 3, 'dropped']]);
    expect(rec.facts_('turnStarted')).toHaveLength(2);
  });

  it('cancel: Ack first, then waiting permissions denied, mew\'s turn cancelled, detach with a cancelled exit', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go', approve: () => new Promise(() => undefined) });
    handshake();
    receipt('accepted');
    session.send({ type: 'follow-up', text: 'held' });
    feed({ type: 'permission_request', request_id: 'q1', tool_name: 'bash', input: { command: 'ls' } });
    const verdict = session.send({ type: 'cancel' });
    expect(verdict).toMatchObject({ ref: 3, status: 'accepted' });
    expect(rec.sentOf('cancel')).toEqual([]);
    verdict.then!();
    expect(rec.sent.slice(-2)).toEqual([{ type: 'permission_response', request_id: 'q1', decision: 'deny' }, { type: 'cancel' }]);
    expect(rec.facts_('delivery')).toEqual([['delivery', 2, 'dropped']]);
    expect(rec.facts_('exit')).toEqual([['exit', { status: 'cancelled' }]]);
    expect(rec.log.at(-1)).toEqual(['leave']);
    feed(delta('late'));
    expect(rec.events.at(-1)!.type).not.toBe('assistant-text-delta');
  });

  it('finalize mid-turn cancels the turn (aborted), then submits the note as the last turn and ends done with its answer', () => {
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    expect(session.send({ type: 'finalize' })).toEqual({ ref: 2, status: 'accepted' });
    expect(rec.sent.at(-1)).toEqual({ type: 'cancel' });
    feed(delta('cut'), TURN_FAILED);
    expect(rec.facts_('turnCompleted')[0]).toEqual(['turnCompleted', 1, 'aborted', undefined]);
    expect(rec.sentOf('submit_prompt').at(-1)).toMatchObject({ text: FINALIZE_PROMPT });
    receipt('accepted');
    feed(TEXT_START, delta('summary'), TURN_COMPLETE);
    expect(rec.facts_('exit')).toEqual([['exit', { status: 'done' }]]);
    expect(rec.facts_('result')[0]![1]).toMatchObject({ answer: { text: 'summary' } });
  });

  it('finalize from ready submits the note as the last turn at once, then ends done', () => {
    const { rec, session, feed, handshake } = mewSession();
    handshake();
    expect(session.send({ type: 'finalize', note: 'wrap up' })).toEqual({ ref: 1, status: 'accepted' });
    expect(rec.sentOf('submit_prompt')).toEqual([{ type: 'submit_prompt', session_id: 'sess_1', request_id: 'r-1', text: 'wrap up', attachments: [] }]);
    feed({ type: 'prompt_receipt', request_id: 'r-1', status: 'accepted' }, TEXT_START, delta('final words'), TURN_COMPLETE);
    expect(rec.facts_('exit')).toEqual([['exit', { status: 'done' }]]);
    expect(rec.facts_('result')[0]![1]).toMatchObject({ answer: { text: 'final words' } });
  });

  it('close mid-turn detaches after the turn; close in ready at once; close before ready is refused', () => {
    const early = mewSession();
    early.session.opened();
    expect(early.session.send({ type: 'close' })).toMatchObject({ status: 'rejected', reason: 'child is not ready' });
    const { rec, session, feed, handshake, receipt } = mewSession({ task: 'go' });
    handshake();
    receipt('accepted');
    expect(session.send({ type: 'close' })).toEqual({ ref: 2, status: 'accepted' });
    expect(rec.facts_('exit')).toEqual([]);
    feed(delta('done'), TURN_COMPLETE);
    expect(rec.facts_('exit')).toEqual([['exit', { status: 'done' }]]);
  });
});

describe('liveness and reconnects', () => {
  it('pings first on every connection; every pong is checked, so a daemon swapped for an old one is refused', () => {
    const { rec, session, feed, handshake } = mewSession();
    handshake();
    expect(rec.sent[0]).toEqual({ type: 'ping' });
    expect(rec.facts_('attached')).toHaveLength(1);
    feed({ ...PONG, protocol_version: 4 });
    expect(rec.facts_('fatal')).toEqual([]);
    expect(session.connectionLost('connection-lost', 'reset')).toBe(true);
    session.opened();
    feed({ ...PONG, protocol_version: 1 });
    expect(rec.facts_('fatal')[0]![1]).toBe('version-mismatch');
  });

  it('a loss mid-turn fails the run with the transport\'s code (no-pong, connection-lost), no re-attach', () => {
    for (const code of ['no-pong', 'connection-lost'] as const) {
      const { rec, session, handshake, receipt } = mewSession({ task: 'go' });
      handshake();
      receipt('accepted');
      expect(session.connectionLost(code, 'no pong within 10000 ms')).toBe(false);
      expect(rec.facts_('fatal')).toEqual([['fatal', code, expect.stringMatching(/lost during turn 1: no pong within 10000 ms/)]]);
      expect(rec.facts_('leave')).toEqual([]);
    }
  });

  it('after a reconnect an uncertain submission is checked with read_prompt_receipt, never re-sent', () => {
    for (const [status, extra, reason] of [
      ['rejected', { message: 'busy' }, 'mew rejected the prompt: busy'],
      ['unknown', {}, 'mew has no receipt for request r-1: it was not re-sent; inspect the conversation before retrying'],
    ] as const) {
      const { rec, session, feed, handshake } = mewSession({ task: 'go' });
      handshake();
      expect(session.connectionLost('connection-lost', 'socket closed (1006)')).toBe(true);
      expect(session.send({ type: 'prompt', text: 'x' })).toMatchObject({ status: 'rejected' });
      session.opened();
      expect(rec.sent.slice(-2)).toEqual([{ type: 'ping' }, { type: 'attach_session', session_id: 'sess_1' }]);
      feed(PONG, READY);
      expect(rec.facts_('attached')).toHaveLength(2);
      expect(rec.sent.at(-1)).toEqual({ type: 'read_prompt_receipt', session_id: 'sess_1', request_id: 'r-1' });
      feed({ type: 'prompt_receipt', session_id: 'sess_1', request_id: 'r-1', status, ...extra });
      expect(rec.facts_('ack')).toEqual([['ack', 1, 'rejected', reason]]);
      expect(rec.sentOf('submit_prompt')).toHaveLength(1);
      expect(session.state).toBe('ready');
    }
  });

  it('an uncertain submission mew did accept fails the run: its turn ran unseen', () => {
    const { rec, session, feed, handshake } = mewSession({ task: 'go' });
    handshake();
    session.connectionLost('connection-lost', 'socket closed');
    session.opened();
    feed(PONG, READY, { type: 'prompt_receipt', session_id: 'sess_1', request_id: 'r-1', status: 'accepted' });
    expect(rec.facts_('ack')).toEqual([['ack', 1, 'accepted', undefined]]);
    expect(rec.facts_('fatal')[0]).toEqual(['fatal', 'connection-lost', 'mew accepted request r-1 while the connection was down: its turn ran unseen (it is never re-sent)']);
    expect(rec.sentOf('submit_prompt')).toHaveLength(1);
  });

  it('a loss before ready fails the run; while re-attaching only cancel and close from ready are taken', () => {
    const a = mewSession();
    a.session.opened();
    expect(a.session.connectionLost('connection-lost', 'reset')).toBe(false);
    expect(a.rec.facts_('fatal')[0]![2]).toMatch(/before the session was ready: reset/);
    const c = mewSession();
    c.handshake();
    c.session.connectionLost('connection-lost', 'reset');
    expect(c.session.send({ type: 'prompt', text: 'x' })).toMatchObject({ status: 'rejected', reason: 'the connection to mew is being re-opened; try again once it is back' });
    const close = c.session.send({ type: 'close' });
    expect(close.status).toBe('accepted');
    close.then!();
    expect(c.rec.facts_('exit')).toEqual([['exit', { status: 'done' }]]);
    const d = mewSession();
    d.handshake();
    d.session.connectionLost('connection-lost', 'reset');
    d.session.send({ type: 'cancel' }).then!();
    expect(d.rec.facts_('exit')).toEqual([['exit', { status: 'cancelled' }]]);
    expect(d.rec.sentOf('cancel')).toEqual([]);
  });
});
