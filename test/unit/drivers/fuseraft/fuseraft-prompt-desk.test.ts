// Unit tests of fuseraft approvals and questions: deny by default, unknown kinds, order, exactly one response each.
import { describe, expect, it } from 'vitest';
import { PromptDesk } from '../../../../src/drivers/fuseraft/prompt-desk.js';
import { approvalRequestOf } from '../../../../src/drivers/fuseraft/prompts.js';
import type { ApprovalAnswer, ApprovalRequest, ApproveCallback } from '../../../../src/protocol/requests.js';
import type { Frame } from '../../../../src/drivers/fuseraft/frames.js';
import type { RunEventDraftOf } from '../../../../src/api/types.js';
import type { JsonObject } from '../../../../src/wire/index.js';

const shell = { type: 'approval_request', kind: 'shell_command', command: 'rm -rf build' } as Frame;
const mystery = { type: 'approval_request', kind: 'teleport', target: 'mars' } as Frame;

function desk(handlers: { approve?: ApproveCallback; answerQuestion?: (q: unknown) => unknown } = {}) {
  const responses: JsonObject[] = [];
  const reports: RunEventDraftOf<'info'>[] = [];
  const made = new PromptDesk(
    { protocol: 'fuseraft', ...(handlers as object) },
    { respond: (line) => responses.push(line), report: (draft) => reports.push(draft) },
  );
  return { desk: made, responses, reports, decided: () => reports.filter((r) => String(r['nativeType']).endsWith('_response')) };
}

/** A promise with its resolve exposed. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('approval requests', () => {
  it('types the documented kinds and treats anything else (or a known kind without its fields) as unknown', () => {
    expect(approvalRequestOf(shell, 'fuseraft')).toEqual({
      protocol: 'fuseraft',
      fields: { kind: 'shell_command', command: 'rm -rf build' },
      kind: 'shell_command',
      known: true,
      command: 'rm -rf build',
    });
    const write = approvalRequestOf(
      { type: 'approval_request', kind: 'file_write', plugin: 'fs', action: 'write', path: 'a', oldContent: null, newContent: 'x' } as Frame,
      'fuseraft',
    );
    expect(write).toMatchObject({ known: true, oldContent: null, newContent: 'x' });
    expect(approvalRequestOf(mystery, 'fuseraft')).toMatchObject({ kind: 'teleport', known: false, fields: { target: 'mars' } });
    expect(approvalRequestOf({ type: 'approval_request', kind: 'shell_command' } as Frame, 'fuseraft').known).toBe(false);
  });

  it('denies every request when there is no callback', () => {
    const { desk: d, responses, decided } = desk();
    d.approvalRequested(shell, true);
    d.approvalRequested(mystery, true);
    expect(responses).toEqual([
      { type: 'approval_response', approved: false },
      { type: 'approval_response', approved: false },
    ]);
    expect(decided().map((r) => r['decidedBy'])).toEqual(['no-callback', 'no-callback']);
  });

  it('approves known kinds on true, but denies an unknown kind on true; only "approve-unknown-kind" approves it', () => {
    const always = desk({ approve: () => true });
    always.desk.approvalRequested(shell, true);
    always.desk.approvalRequested(mystery, true);
    expect(always.responses.map((r) => r['approved'])).toEqual([true, false]);
    expect(always.decided()[1]).toMatchObject({ decidedBy: 'unknown-kind', summary: 'denied teleport (unknown-kind)' });

    const optIn = desk({ approve: (request) => (request.known ? false : 'approve-unknown-kind') });
    optIn.desk.approvalRequested(shell, true);
    optIn.desk.approvalRequested(mystery, true);
    expect(optIn.responses.map((r) => r['approved'])).toEqual([false, true]);
  });

  it('denies when the callback throws, rejects or returns a non-answer', async () => {
    const answers: Array<() => unknown> = [
      () => {
        throw new Error('no');
      },
      () => Promise.reject(new Error('nope')),
      () => 'yes',
      () => Promise.resolve(1),
    ];
    const { desk: d, responses, decided } = desk({ approve: (() => answers.shift()!()) as unknown as ApproveCallback });
    for (let i = 0; i < 4; i++) d.approvalRequested(shell, true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(responses).toHaveLength(4);
    expect(responses.every((r) => r['approved'] === false)).toBe(true);
    expect(decided().map((r) => r['decidedBy'])).toEqual(['callback-error', 'callback-error', 'callback-error', 'callback-error']);
    expect(decided()[0]?.['callbackError']).toBe('no');
  });

  it('asks one at a time and answers in arrival order, whatever order async answers would come in', async () => {
    const pending: Array<{ request: ApprovalRequest; answer: ReturnType<typeof deferred<ApprovalAnswer>> }> = [];
    const { desk: d, responses } = desk({
      approve: (request) => {
        const answer = deferred<ApprovalAnswer>();
        pending.push({ request, answer });
        return answer.promise;
      },
    });
    d.approvalRequested({ ...shell, command: 'one' }, true);
    d.approvalRequested({ ...shell, command: 'two' }, true);
    expect(pending).toHaveLength(1); // the second is not asked before the first is answered
    expect(d.waiting).toBe(2);
    pending[0]!.answer.resolve(false);
    await Promise.resolve();
    await Promise.resolve();
    expect(pending).toHaveLength(2);
    expect((pending[1]!.request as { command: string }).command).toBe('two');
    pending[1]!.answer.resolve(true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(responses.map((r) => r['approved'])).toEqual([false, true]);
    expect(d.waiting).toBe(0);
  });

  it('on shutdown answers the request being decided and every queued one with a denial, and ignores late answers', async () => {
    const first = deferred<ApprovalAnswer>();
    const { desk: d, responses, decided } = desk({ approve: () => first.promise });
    d.approvalRequested(shell, true);
    d.approvalRequested(shell, true);
    d.shutDown();
    first.resolve(true);
    d.approvalRequested(shell, true); // after shutdown: denied unasked
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(responses).toEqual([
      { type: 'approval_response', approved: false },
      { type: 'approval_response', approved: false },
      { type: 'approval_response', approved: false },
    ]);
    expect(decided().map((r) => r['decidedBy'])).toEqual(['shutdown', 'shutdown', 'shutdown']);
  });

  it('denies an unusable request unasked', () => {
    let asked = 0;
    const { desk: d, responses, decided } = desk({ approve: () => (asked++, true) });
    d.approvalRequested({ type: 'approval_request' } as Frame, false);
    expect(asked).toBe(0);
    expect(responses).toEqual([{ type: 'approval_response', approved: false }]);
    expect(decided()[0]?.['decidedBy']).toBe('invalid-request');
  });
});

describe('questions', () => {
  const question = { type: 'question', question: 'Which db?', options: ['pg', 3, 'sqlite'], allowOther: true } as Frame;

  it('answers with the callback\'s text, skipping (null) without a callback or on a non-answer', async () => {
    const asked: unknown[] = [];
    const answering = desk({ answerQuestion: (q) => (asked.push(q), Promise.resolve('pg')) });
    answering.desk.questionAsked(question, true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(asked).toEqual([{ question: 'Which db?', options: ['pg', 'sqlite'], allowOther: true, fields: { question: 'Which db?', options: ['pg', 3, 'sqlite'], allowOther: true } }]);
    expect(answering.responses).toEqual([{ type: 'question_response', answer: 'pg' }]);

    const none = desk();
    none.desk.questionAsked(question, true);
    expect(none.responses).toEqual([{ type: 'question_response', answer: null }]);

    const odd = desk({ answerQuestion: () => 42 });
    odd.desk.questionAsked(question, true);
    expect(odd.responses).toEqual([{ type: 'question_response', answer: null }]);
    expect(odd.decided()[0]?.['decidedBy']).toBe('callback-error');
  });

  it('keeps approvals and questions in one order', async () => {
    const gate = deferred<ApprovalAnswer>();
    const { desk: d, responses } = desk({ approve: () => gate.promise, answerQuestion: () => 'a' });
    d.approvalRequested(shell, true);
    d.questionAsked(question, true);
    expect(responses).toEqual([]);
    gate.resolve(true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(responses.map((r) => r['type'])).toEqual(['approval_response', 'question_response']);
  });
});
