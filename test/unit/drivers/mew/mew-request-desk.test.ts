// Unit tests of mew's request desk (permissions, questions, request_resolved) and of the message codec.
import { describe, expect, it, vi } from 'vitest';
import { checkMessage, snakeTag, spellTag } from '../../../../src/drivers/mew/messages.js';
import type { MewMessage } from '../../../../src/drivers/mew/messages.js';
import { MewDesk } from '../../../../src/drivers/mew/request-desk.js';
import type { MewDeskHandlers } from '../../../../src/drivers/mew/request-desk.js';
import type { RunEventDraftOf } from '../../../../src/api/types.js';

/** The info events that report a response (or a request left to another client). */
const RESPONSES = ['permission_response', 'plan_approval_response', 'goal_response', 'ask_user_response'];

function desk(handlers: Omit<MewDeskHandlers, 'protocol'> = {}) {
  const sent: MewMessage[] = [];
  const events: RunEventDraftOf<'info'>[] = [];
  const blocked: unknown[][] = [];
  const made = new MewDesk({ protocol: 'mew', ...handlers }, {
    respond: (m) => void sent.push(m),
    report: (d) => void events.push(d),
    blocked: (key, what) => void blocked.push(['blocked', key, what]),
    unblocked: (key) => void blocked.push(['unblocked', key]),
  });
  return { desk: made, sent, events, blocked, infos: () => events.filter((e) => RESPONSES.includes(e['nativeType'] as string)) };
}

const permission = (id: string, extra: object = { tool_name: 'bash', input: { command: 'ls' } }) => ({ type: 'permission_request', request_id: id, ...extra }) as MewMessage;
const question = (id: string, questions: unknown[]) => ({ type: 'ask_user_request', request_id: id, call_id: 'c', questions }) as MewMessage;
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('permissions', () => {
  it('denies without a callback: exactly one permission_response per request id', async () => {
    const { desk: d, sent } = desk();
    d.take(permission('a'));
    d.take(permission('a'));
    await tick();
    expect(sent).toEqual([{ type: 'permission_response', request_id: 'a', decision: 'deny' }]);
  });

  it('asks approve one request at a time, in order, with the tool and its input; decisions are mew\'s allow_once / deny', async () => {
    const seen: unknown[] = [];
    const { desk: d, sent } = desk({ approve: async (request) => (seen.push(request), request.known && request.kind === 'tool_permission' && request.toolName === 'bash') });
    d.take(permission('a'));
    d.take(permission('b', { tool_name: 'rm' }));
    expect(seen).toHaveLength(1);
    await tick();
    expect(seen[0]).toEqual({ protocol: 'mew', kind: 'tool_permission', known: true, requestId: 'a', toolName: 'bash', input: { command: 'ls' }, fields: { request_id: 'a', tool_name: 'bash', input: { command: 'ls' } } });
    expect(sent).toEqual([
      { type: 'permission_response', request_id: 'a', decision: 'allow_once' },
      { type: 'permission_response', request_id: 'b', decision: 'deny' },
    ]);
  });

  it('an unnamed tool is unknown: true denies it, only approve-unknown-kind allows it; a throwing callback denies', async () => {
    const a = desk({ approve: () => true });
    a.desk.take(permission('x', {}));
    const b = desk({ approve: () => 'approve-unknown-kind' });
    b.desk.take(permission('x', {}));
    const c = desk({ approve: () => { throw new Error('boom'); } });
    c.desk.take(permission('x'));
    await tick();
    expect([a, b, c].map((x) => x.sent[0]!['decision'])).toEqual(['deny', 'allow_once', 'deny']);
    expect(c.infos()[0]).toMatchObject({ decidedBy: 'callback-error', callbackError: 'boom' });
  });

  it('request_resolved by another client: the running callback is ignored, a queued request is dropped, no response', async () => {
    let release!: (value: boolean) => void;
    const { desk: d, sent, infos } = desk({ approve: () => new Promise<boolean>((resolve) => (release = resolve)) });
    d.take(permission('a'));
    d.take(permission('b'));
    d.take({ type: 'request_resolved', request_id: 'b' });
    d.take({ type: 'request_resolved', request_id: 'a' });
    release(true);
    await tick();
    expect(sent).toEqual([]);
    expect(infos().map((e) => e['decidedBy'])).toEqual(['another-client', 'another-client']);
    expect(d.waiting).toBe(0);
    d.take({ type: 'request_resolved', request_id: 'a' });
    expect(sent).toEqual([]);
  });

  it('shutDown answers the running and queued requests with the default, once', async () => {
    const { desk: d, sent } = desk({ approve: () => new Promise<boolean>(() => undefined) });
    d.take(permission('a'));
    d.take(question('q', ['why?']));
    d.shutDown();
    d.take(permission('c'));
    await tick();
    expect(sent).toEqual([
      { type: 'permission_response', request_id: 'a', decision: 'deny' },
      { type: 'ask_user_response', request_id: 'q', answers: [], cancelled: true },
      { type: 'permission_response', request_id: 'c', decision: 'deny' },
    ]);
  });
});

describe('the blocking requests of newer mew builds', () => {
  const workspace = { type: 'workspace_permission_request', request_id: 'w1', path: '/etc/hosts' } as MewMessage;
  const subagent = { type: 'subagent_permission_request', request_id: 's1', parent_call_id: 'call_9', tool_name: 'bash', input: { command: 'ls' } } as MewMessage;
  const plan = { type: 'plan_approval_request', request_id: 'p1', call_id: 'call_3', plan_path: '.mew/plans/a.md', plan_markdown: '# Plan', persona: 'plan' } as MewMessage;
  const goal = { type: 'goal_proposed', request_id: 'g1', call_id: 'call_4', objective: 'Make the tests pass' } as MewMessage;

  it('are denied by default with the denial mew defines for each: permission_response, plan_approval_response, goal_response', async () => {
    const { desk: d, sent, blocked } = desk();
    for (const message of [workspace, subagent, plan, goal]) expect(d.take(message)).toBe(true);
    await tick();
    expect(sent).toEqual([
      { type: 'permission_response', request_id: 'w1', decision: 'deny' },
      { type: 'permission_response', request_id: 's1', decision: 'deny' },
      { type: 'plan_approval_response', request_id: 'p1', approved: false },
      { type: 'goal_response', request_id: 'g1', accepted: false },
    ]);
    expect(blocked).toEqual([]);
  });

  it('go to approve as known kinds with their fields; true approves each, one response apiece', async () => {
    const seen: unknown[] = [];
    const { desk: d, sent, infos } = desk({ approve: (request) => (seen.push(request), true) });
    for (const message of [workspace, subagent, plan, goal]) d.take(message);
    await tick();
    expect(seen).toEqual([
      { protocol: 'mew', kind: 'workspace_permission', known: true, requestId: 'w1', path: '/etc/hosts', fields: { request_id: 'w1', path: '/etc/hosts' } },
      expect.objectContaining({ kind: 'subagent_permission', known: true, requestId: 's1', parentCallId: 'call_9', toolName: 'bash', input: { command: 'ls' } }),
      expect.objectContaining({ kind: 'plan_approval', known: true, requestId: 'p1', callId: 'call_3', planPath: '.mew/plans/a.md', planMarkdown: '# Plan', persona: 'plan' }),
      expect.objectContaining({ kind: 'goal_proposal', known: true, requestId: 'g1', callId: 'call_4', objective: 'Make the tests pass' }),
    ]);
    expect(sent).toEqual([
      { type: 'permission_response', request_id: 'w1', decision: 'allow_once' },
      { type: 'permission_response', request_id: 's1', decision: 'allow_once' },
      { type: 'plan_approval_response', request_id: 'p1', approved: true },
      { type: 'goal_response', request_id: 'g1', accepted: true },
    ]);
    expect(infos().map((e) => [e['nativeType'], e['kind'], e['approved']])).toEqual([
      ['permission_response', 'workspace_permission', true],
      ['permission_response', 'subagent_permission', true],
      ['plan_approval_response', 'plan_approval', true],
      ['goal_response', 'goal_proposal', true],
    ]);
  });

  it('a known kind without its documented fields is unknown: true denies it, only approve-unknown-kind allows it', async () => {
    const a = desk({ approve: () => true });
    a.desk.take({ type: 'workspace_permission_request', request_id: 'w2' } as MewMessage);
    const b = desk({ approve: () => 'approve-unknown-kind' });
    b.desk.take({ type: 'plan_approval_request', request_id: 'p2', call_id: 'c' } as MewMessage);
    await tick();
    expect(a.sent).toEqual([{ type: 'permission_response', request_id: 'w2', decision: 'deny' }]);
    expect(b.sent).toEqual([{ type: 'plan_approval_response', request_id: 'p2', approved: true }]);
  });

  it('a *_request of a kind subvisor does not know is never answered, whatever approve says: surfaced, blocked until request_resolved names it', async () => {
    const approve = vi.fn(() => 'approve-unknown-kind' as const);
    const { desk: d, sent, events, blocked } = desk({ approve });
    expect(d.take({ type: 'hologram_request', request_id: 'h1', call_id: 'c1' } as MewMessage)).toBe(true);
    expect(d.take({ type: 'hologram_update', frames: 3 } as MewMessage)).toBe(false);
    expect(d.take({ type: 'teleport_request', call_id: 'no id here' } as MewMessage)).toBe(false);
    await tick();
    expect(sent).toEqual([]);
    expect(approve).not.toHaveBeenCalled();
    expect(events[0]).toMatchObject({ type: 'info', nativeType: 'hologram_request', summary: expect.stringMatching(/^hologram_request cannot be answered: subvisor knows no response/) });
    expect(blocked).toEqual([['blocked', '"h1"', expect.stringMatching(/hologram_request/)]]);
    d.take({ type: 'request_resolved', request_id: 'h1' } as MewMessage);
    expect(blocked.at(-1)).toEqual(['unblocked', '"h1"']);
  });
});

describe('requests that cannot be answered', () => {
  it('a request without a usable id is surfaced and reported blocked (named by its tag), never answered; its turn\'s end unblocks it', async () => {
    const { desk: d, sent, events, blocked } = desk({ approve: () => true });
    d.take(permission('x', { request_id: { nested: true }, tool_name: 'bash' }));
    d.take(permission('y', { request_id: -3, tool_name: 'bash' }));
    await tick();
    expect(sent).toEqual([]);
    expect(blocked).toEqual([
      ['blocked', 'permission_request #1', expect.stringMatching(/no request_id/)],
      ['blocked', '-3', expect.stringMatching(/not an integer JSON can carry exactly/)],
    ]);
    expect(events.map((e) => e['summary'])).toEqual([expect.stringMatching(/^permission_request cannot be answered/), expect.stringMatching(/^permission_request cannot be answered/)]);
    d.turnEnded();
    expect(blocked.slice(2)).toEqual([['unblocked', 'permission_request #1'], ['unblocked', '-3']]);
  });
});

describe('questions', () => {
  it('cancels without a callback; with one, answers every question in order; null cancels the request', async () => {
    const a = desk();
    a.desk.take(question('q', ['one?']));
    const b = desk({ answerQuestion: (q) => `answer to ${q.question}` });
    b.desk.take(question('q', ['one?', { question: 'two?', options: ['x', 'y'] }]));
    const c = desk({ answerQuestion: (q) => (q.question === 'two?' ? null : 'ok') });
    c.desk.take(question('q', ['one?', 'two?']));
    await tick();
    expect(a.sent).toEqual([{ type: 'ask_user_response', request_id: 'q', answers: [], cancelled: true }]);
    expect(b.sent).toEqual([{ type: 'ask_user_response', request_id: 'q', answers: ['answer to one?', 'answer to two?'], cancelled: false }]);
    expect(c.sent).toEqual([{ type: 'ask_user_response', request_id: 'q', answers: [], cancelled: true }]);
  });

  it('reads mew\'s Question {prompt, options: [{label, description}]}', async () => {
    const seen: unknown[] = [];
    const { desk: d, sent } = desk({ answerQuestion: (q) => (seen.push(q), 'a.ts') });
    d.take(question('q', [{ prompt: 'Which file?', options: [{ label: 'a.ts', description: 'the first' }, { label: 'b.ts', description: '' }] }]));
    await tick();
    expect(seen[0]).toMatchObject({ question: 'Which file?', options: ['a.ts', 'b.ts'], allowOther: false });
    expect(sent).toEqual([{ type: 'ask_user_response', request_id: 'q', answers: ['a.ts'], cancelled: false }]);
  });
});

describe('message codec', () => {
  it('normalizes both tag spellings and spells outgoing ones as asked', () => {
    expect(['SessionReady', 'session_ready', 'ReadPromptReceipt', 'Pong', 'pong'].map(snakeTag)).toEqual(['session_ready', 'session_ready', 'read_prompt_receipt', 'pong', 'pong']);
    expect(['session-ready', 'sessionReady', '', 'Bad Tag', 3].map(snakeTag)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(['submit_prompt', 'read_prompt_receipt', 'ping'].map((tag) => spellTag(tag, 'snake_case'))).toEqual(['submit_prompt', 'read_prompt_receipt', 'ping']);
    expect(['submit_prompt', 'read_prompt_receipt', 'ping'].map((tag) => spellTag(tag, 'PascalCase'))).toEqual(['SubmitPrompt', 'ReadPromptReceipt', 'Ping']);
  });

  it('removes fields of the wrong type and marks a message unusable when a required one is missing', () => {
    const read = checkMessage(JSON.parse('{"type":"tool_end","call_id":"c","success":"yes"}'), 7);
    expect(read).toEqual({
      message: { type: 'tool_end', call_id: 'c' },
      usable: true,
      rejection: { code: 'invalid-payload', reason: 'message 7 (tool_end): tool_end.success must be a boolean', lineType: 'tool_end', errors: ['tool_end.success must be a boolean'] },
    });
    expect(checkMessage(JSON.parse('{"type":"PromptReceipt","status":"accepted"}'), 1).usable).toBe(false);
    expect(checkMessage(JSON.parse('{"type":"provider","event":{"type":"part_delta","delta":5}}'), 1).usable).toBe(false);
    expect(checkMessage(JSON.parse('{"type":"session_ready","session_id":"s","model":null}'), 1)).toEqual({ message: { type: 'session_ready', session_id: 's', model: null }, usable: true });
  });
});

describe('session signals', () => {
  it('reads a turn end leniently: the alert as a string or a tagged object; idle in its several spellings', async () => {
    const { alertOf, isIdle, versionProblem } = await import('../../../../src/drivers/mew/session-signals.js');
    const msg = (fields: object) => ({ type: 'x', ...fields }) as MewMessage;
    expect([{ alert: 'turn_complete' }, { alert: 'TurnFailed' }, { kind: 'turn_complete' }, { alert: { type: 'TurnComplete' } }, {}].map((f) => alertOf(msg(f)))).toEqual([
      'turn_complete', 'turn_failed', 'turn_complete', 'turn_complete', undefined,
    ]);
    expect([{ idle: true }, { active: false }, { busy: false }, { activity: 'Idle' }, { state: 'idle' }, { idle: false }, { activity: 'busy' }].map((f) => isIdle(msg(f)))).toEqual([
      true, true, true, true, true, false, false,
    ]);
    expect(versionProblem(msg({ protocol_version: 3 }))).toBeUndefined();
    expect(versionProblem(msg({ protocol_version: 3.5 }))).toMatch(/speaks wire revision 3.5/);
  });
});
