// Unit tests of Codex's requests to the client: approvals to approve (decline by default, cancel when the run ends), file changes, permissions, questions, elicitations, withdrawal.
import { describe, expect, it } from 'vitest';
import type { ApprovalRequest, QuestionRequest } from '../../../../src/protocol/requests.js';
import { codexHarness, handshake, itemParams, THREAD, TURN, turnAnswer } from '../../../helpers/codex-session.js';
import type { CodexHarness } from '../../../helpers/codex-session.js';

/** The command approval of the transcript (request id 0). */
function commandApproval(h: CodexHarness, id = 0, command = "/bin/bash -lc 'touch allowed.txt && echo made'"): void {
  h.notify('item/started', itemParams({ type: 'commandExecution', id: 'call_fake_2', command, cwd: '/tmp/fm/cwd', processId: null, source: 'agent', status: 'inProgress', commandActions: [{ type: 'unknown', command: 'touch allowed.txt && echo made' }], aggregatedOutput: null, exitCode: null, durationMs: null }));
  h.line({
    method: 'item/commandExecution/requestApproval',
    id,
    params: { kind: 'command', threadId: THREAD, turnId: TURN, itemId: 'call_fake_2', startedAtMs: 1796605383580, environmentId: 'local', command, cwd: '/tmp/fm/cwd', commandActions: [], proposedExecpolicyAmendment: ['touch', 'allowed.txt'] },
  });
}

function running(options: Parameters<typeof codexHarness>[0] = {}): CodexHarness {
  const h = codexHarness(options);
  handshake(h);
  h.line(turnAnswer(3));
  return h;
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('Codex approvals', () => {
  it('asks approve about a command as shell_command, answers accept, and shows the call and the result', () => {
    const asked: ApprovalRequest[] = [];
    const h = running({ approve: (request) => (asked.push(request), true) });
    commandApproval(h);
    expect(asked).toEqual([
      expect.objectContaining({ protocol: 'codex', kind: 'shell_command', known: true, command: "/bin/bash -lc 'touch allowed.txt && echo made'", fields: expect.objectContaining({ itemId: 'call_fake_2', cwd: '/tmp/fm/cwd' }) }),
    ]);
    expect(h.last()).toEqual({ id: 0, result: { decision: 'accept' } });
    expect(h.ofType('info').slice(1).map((event) => [event.nativeType, event.summary])).toEqual([
      ['item/commandExecution/requestApproval', 'approval requested: shell_command'],
      ['approval_response', 'approved shell_command'],
    ]);
    h.notify('serverRequest/resolved', { threadId: THREAD, requestId: 0 });
    h.notify('item/commandExecution/outputDelta', { threadId: THREAD, turnId: TURN, itemId: 'call_fake_2', delta: 'made\n' });
    h.notify('item/completed', itemParams({ type: 'commandExecution', id: 'call_fake_2', command: 'x', cwd: '/tmp/fm/cwd', processId: '69131', source: 'unifiedExecStartup', status: 'completed', aggregatedOutput: 'made\n', exitCode: 0, durationMs: 79 }));
    expect(h.ofType('tool-call')).toEqual([expect.objectContaining({ name: 'commandExecution', id: 'call_fake_2', arguments: { command: "/bin/bash -lc 'touch allowed.txt && echo made'", cwd: '/tmp/fm/cwd' } })]);
    expect(h.ofType('tool-result')).toEqual([expect.objectContaining({ name: 'commandExecution', id: 'call_fake_2', isError: false, result: 'made\n', durationSeconds: 0.079 })]);
  });

  it('declines without approve, when approve says no or throws, and marks the declined command an error', async () => {
    const none = running();
    commandApproval(none);
    expect(none.last()).toEqual({ id: 0, result: { decision: 'decline' } });
    expect(none.events.at(-1)).toMatchObject({ nativeType: 'approval_response', approved: false, decidedBy: 'no-callback' });
    const throwing = running({ approve: () => { throw new Error('boom'); } });
    commandApproval(throwing, 1);
    expect(throwing.last()).toEqual({ id: 1, result: { decision: 'decline' } });
    expect(throwing.events.at(-1)).toMatchObject({ decidedBy: 'callback-error', callbackError: 'boom' });
    const later = running({ approve: async () => false });
    commandApproval(later);
    await flush();
    expect(later.last()).toEqual({ id: 0, result: { decision: 'decline' } });
    later.notify('item/completed', itemParams({ type: 'commandExecution', id: 'call_fake_2', command: 'x', cwd: '/', status: 'declined', aggregatedOutput: null, exitCode: null, durationMs: null }));
    expect(later.ofType('tool-result')).toEqual([expect.objectContaining({ isError: true, result: null })]);
  });

  it('answers cancel to a waiting approval when the run is cancelled, and nothing to one Codex withdrew', async () => {
    let release: (value: boolean) => void = () => undefined;
    const h = running({ approve: () => new Promise<boolean>((resolve) => (release = resolve)) });
    commandApproval(h);
    h.session.send({ type: 'cancel' });
    expect(h.sent.find((message) => message['id'] === 0)).toEqual({ id: 0, result: { decision: 'cancel' } });

    const w = running({ approve: () => new Promise<boolean>((resolve) => (release = resolve)) });
    commandApproval(w);
    w.notify('turn/completed', { threadId: THREAD, turn: { id: TURN, items: [], status: 'interrupted', error: null } });
    // A sub-agent's thread names the request it withdraws: it is withdrawn all the same.
    w.notify('serverRequest/resolved', { threadId: 'a-sub-agent-thread', requestId: 0 });
    release(true);
    await flush();
    expect(w.sent.some((message) => message['id'] === 0 && 'result' in message)).toBe(false);
    expect(w.events.at(-1)).toMatchObject({ nativeType: 'serverRequest/resolved', summary: 'codex withdrew the request before it was answered' });
  });

  it('asks about a file change with the files its item announced; a change with none is an unknown kind', () => {
    const asked: ApprovalRequest[] = [];
    const h = running({ approve: (request) => (asked.push(request), request.known ? false : 'approve-unknown-kind') });
    h.notify('item/started', itemParams({ type: 'fileChange', id: 'call_p', changes: [{ path: '/tmp/fm/cwd/a.txt', kind: { type: 'add' }, diff: '+hi\n' }, { path: '/tmp/fm/cwd/b.txt', kind: { type: 'update', move_path: '/tmp/fm/cwd/c.txt' }, diff: '' }], status: 'inProgress' }));
    h.line({ method: 'item/fileChange/requestApproval', id: 0, params: { threadId: THREAD, turnId: TURN, itemId: 'call_p', startedAtMs: 1, reason: 'needs to write', grantRoot: null } });
    expect(asked[0]).toMatchObject({
      kind: 'file_change',
      known: true,
      reason: 'needs to write',
      changes: [
        { path: '/tmp/fm/cwd/a.txt', kind: 'add', diff: '+hi\n' },
        { path: '/tmp/fm/cwd/b.txt', kind: 'update', movePath: '/tmp/fm/cwd/c.txt', diff: '' },
      ],
    });
    expect(h.last()).toEqual({ id: 0, result: { decision: 'decline' } });
    h.line({ method: 'item/fileChange/requestApproval', id: 1, params: { threadId: THREAD, turnId: TURN, itemId: 'never-announced', startedAtMs: 1 } });
    expect(asked[1]).toMatchObject({ kind: 'file_change', known: false });
    expect(h.last()).toEqual({ id: 1, result: { decision: 'accept' } });
  });

  it('grants no permission unless approve answers approve-unknown-kind, then what was asked, for the turn', () => {
    const params = { threadId: THREAD, turnId: TURN, itemId: 'call_x', environmentId: null, startedAtMs: 1, cwd: '/w', reason: 'Select a workspace root', permissions: { network: null, fileSystem: { write: ['/w/shared'] } } };
    const denied = running({ approve: () => true });
    denied.line({ method: 'item/permissions/requestApproval', id: 61, params });
    expect(denied.last()).toEqual({ id: 61, result: { permissions: {}, scope: 'turn' } });
    expect(denied.events.at(-1)).toMatchObject({ kind: 'permissions', decidedBy: 'unknown-kind' });
    const granted = running({ approve: () => 'approve-unknown-kind' });
    granted.line({ method: 'item/permissions/requestApproval', id: 61, params });
    expect(granted.last()).toEqual({ id: 61, result: { permissions: { fileSystem: { write: ['/w/shared'] } }, scope: 'turn' } });
  });

  it('calls a network approval without a command an unknown kind', () => {
    const asked: ApprovalRequest[] = [];
    const h = running({ approve: (request) => (asked.push(request), true) });
    h.line({ method: 'item/commandExecution/requestApproval', id: 0, params: { kind: 'command', threadId: THREAD, turnId: TURN, itemId: 'n', startedAtMs: 1, environmentId: null, networkApprovalContext: { host: 'example.com' } } });
    expect(asked[0]).toMatchObject({ kind: 'network_access', known: false });
    expect(h.last()).toEqual({ id: 0, result: { decision: 'decline' } });
  });
});

describe('Codex questions and the requests answered by rule', () => {
  const questions = [
    { id: 'q1', header: 'Pick', question: 'Which colour?', isOther: true, isSecret: false, options: [{ label: 'red', description: 'warm' }, { label: 'blue', description: 'cold' }] },
    { id: 'q2', header: 'Key', question: 'Your token?', isOther: false, isSecret: true, options: null },
  ];

  it('asks answerQuestion each question in turn and answers by question id; a secret answer never shows in an event', async () => {
    const asked: QuestionRequest[] = [];
    const h = running({ answerQuestion: async (question) => (asked.push(question), question.question === 'Your token?' ? 's3cret' : 'blue') });
    h.line({ method: 'item/tool/requestUserInput', id: 5, params: { threadId: THREAD, turnId: TURN, itemId: 'call_q', questions, isBlocking: true, autoResolutionMs: null } });
    await flush();
    await flush();
    expect(asked.map((question) => [question.question, question.options, question.allowOther])).toEqual([
      ['Which colour?', ['red', 'blue'], true],
      ['Your token?', [], false],
    ]);
    expect(h.last()).toEqual({ id: 5, result: { answers: { q1: { answers: ['blue'] }, q2: { answers: ['s3cret'] } } } });
    expect(JSON.stringify(h.events)).not.toContain('s3cret');
    expect(h.events.at(-1)).toMatchObject({ nativeType: 'question_response', answered: true, summary: 'question answered (2 of 2)' });
  });

  it('leaves questions unanswered without answerQuestion, and for a null', async () => {
    const none = running();
    none.line({ method: 'item/tool/requestUserInput', id: 5, params: { threadId: THREAD, turnId: TURN, itemId: 'call_q', questions, isBlocking: true, autoResolutionMs: null } });
    expect(none.last()).toEqual({ id: 5, result: { answers: {} } });
    const skip = running({ answerQuestion: (question) => (question.question === 'Which colour?' ? null : 'x') });
    skip.line({ method: 'item/tool/requestUserInput', id: 6, params: { threadId: THREAD, turnId: TURN, itemId: 'call_q', questions, isBlocking: true, autoResolutionMs: null } });
    await flush();
    await flush();
    expect(skip.last()).toEqual({ id: 6, result: { answers: { q2: { answers: ['x'] } } } });
  });

  it('declines an MCP elicitation and a dynamic tool call unasked', () => {
    const h = running({ approve: () => true });
    h.line({ method: 'mcpServer/elicitation/request', id: 8, params: { threadId: THREAD, turnId: null, serverName: 'docs', mode: 'form', _meta: null, message: 'Sign in', requestedSchema: {} } });
    expect(h.last()).toEqual({ id: 8, result: { action: 'decline', content: null, _meta: null } });
    h.line({ method: 'item/tool/call', id: 9, params: { threadId: THREAD, turnId: TURN, callId: 'c', namespace: null, tool: 'lookup', arguments: {} } });
    expect(h.last()).toMatchObject({ id: 9, result: { success: false } });
    expect(h.ofType('info').slice(-2).map((event) => event.decidedBy)).toEqual(['policy', 'policy']);
  });
});
