// Unit tests of mew's request desk (permissions, questions, request_resolved) and of the message codec.
import { describe, expect, it } from 'vitest';
import { encodeMessage, readMessage, snakeTag } from '../src/drivers/mew/messages.js';
import type { MewMessage } from '../src/drivers/mew/messages.js';
import { RequestDesk } from '../src/drivers/mew/request-desk.js';
import type { RequestDeskHandlers } from '../src/drivers/mew/request-desk.js';
import type { RunEventDraftOf } from '../src/run/types/index.js';

function desk(handlers: RequestDeskHandlers = {}) {
  const sent: MewMessage[] = [];
  const events: RunEventDraftOf<'info'>[] = [];
  const blocked: unknown[][] = [];
  const made = new RequestDesk(handlers, {
    respond: (m) => void sent.push(m),
    report: (d) => void events.push(d),
    blocked: (key, what) => void blocked.push(['blocked', key, what]),
    unblocked: (key) => void blocked.push(['unblocked', key]),
  });
  return { desk: made, sent, events, blocked, infos: () => events.filter((e) => e['nativeType'] === 'permission_response' || e['nativeType'] === 'ask_user_response') };
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
});

describe('message codec', () => {
  it('normalizes both tag spellings and spells outgoing ones as asked', () => {
    expect(['SessionReady', 'session_ready', 'ReadPromptReceipt', 'Pong', 'pong'].map(snakeTag)).toEqual(['session_ready', 'session_ready', 'read_prompt_receipt', 'pong', 'pong']);
    expect(['session-ready', 'sessionReady', '', 'Bad Tag', 3].map(snakeTag)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    const submit = { type: 'submit_prompt', session_id: 's', request_id: 'r', text: 't', attachments: [] };
    expect(encodeMessage(submit, 'snake_case')).toBe('{"type":"submit_prompt","session_id":"s","request_id":"r","text":"t","attachments":[]}');
    expect(JSON.parse(encodeMessage(submit, 'PascalCase'))).toEqual({ ...submit, type: 'SubmitPrompt' });
  });

  it('removes fields of the wrong type and marks a message unusable when a required one is missing', () => {
    const read = readMessage('{"type":"tool_end","call_id":"c","success":"yes"}', 7);
    expect(read).toEqual({
      message: { type: 'tool_end', call_id: 'c' },
      usable: true,
      rejection: { code: 'invalid-payload', reason: 'message 7 (tool_end): tool_end.success must be a boolean', lineType: 'tool_end', errors: ['tool_end.success must be a boolean'] },
    });
    expect(readMessage('{"type":"PromptReceipt","status":"accepted"}', 1).usable).toBe(false);
    expect(readMessage('{"type":"provider","event":{"type":"part_delta","delta":5}}', 1).usable).toBe(false);
    expect(readMessage('{"type":"session_ready","session_id":"s","model":null}', 1)).toEqual({ message: { type: 'session_ready', session_id: 's', model: null }, usable: true });
  });
});

describe('session signals', () => {
  it('reads a turn end leniently: the alert as a string or a tagged object; idle in its several spellings', async () => {
    const { alertOf, isIdle, versionProblem } = await import('../src/drivers/mew/session-signals.js');
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
