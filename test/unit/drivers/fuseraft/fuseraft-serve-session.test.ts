// Unit tests of the fuseraft serve session: hello, a task as user_input answered by queued and result, controls, the end, re-attaching, refusals.
import { describe, expect, it } from 'vitest';
import { ServeSession } from '../../../../src/drivers/fuseraft/serve-session.js';
import type { ServeFacts, ServeIo, ServeSessionOptions } from '../../../../src/drivers/fuseraft/serve-session.js';
import type { EventDraft } from '../../../../src/drivers/shared/event-drafts.js';
import type { ControlVerdict } from '../../../../src/drivers/shared/session.js';
import type { JsonObject } from '../../../../src/wire/index.js';

const HELLO = { type: 'hello', protocolVersion: 1 };

function session(options: Partial<ServeSessionOptions> = {}) {
  const sent: JsonObject[] = [];
  const log: unknown[][] = [];
  const events: EventDraft[] = [];
  let open = true;
  let left = 0;
  const io: ServeIo = {
    send: (message) => {
      if (!open) return false;
      sent.push(message);
      return true;
    },
    attached: () => log.push(['attached']),
    leave: () => left++,
  };
  const facts: ServeFacts = {
    ready: () => log.push(['ready']),
    event: (draft) => events.push(draft),
    ack: (ref, status, reason) => log.push(['ack', ref, status, ...(reason === undefined ? [] : [reason])]),
    delivery: (ref, delivery) => log.push(['delivery', ref, delivery]),
    turnStarted: (turn) => log.push(['turnStarted', turn]),
    turnCompleted: (turn, stopReason) => log.push(['turnCompleted', turn, stopReason]),
    result: (report) => log.push(['result', report]),
    session: (id) => log.push(['session', id]),
    rejected: (rejection, fatal = false, code) => log.push(['rejected', rejection.code, fatal, ...(code === undefined ? [] : [code])]),
    fatal: (code, error) => log.push(['fatal', code, error]),
    exit: (end) => log.push(['exit', end]),
  };
  const made = new ServeSession(io, facts, { protocol: 'fuseraft-serve', maxAnswerChars: 1_000_000, ...options });
  return {
    session: made,
    sent,
    log,
    events,
    left: () => left,
    setOpen: (value: boolean) => void (open = value),
    feed: (...frames: object[]) => {
      for (const frame of frames) made.onFrame(frame as never);
    },
    /** A control's verdict, its `then` run as the driver runs it after reporting the Ack. */
    control: (control: Parameters<ServeSession['send']>[0]): ControlVerdict => {
      const verdict = made.send(control);
      verdict.then?.();
      return verdict;
    },
  };
}

describe('fuseraft serve session', () => {
  it('a task: sent after hello, queued is its Ack and opens the turn, the result is the answer; close ends it done', () => {
    const s = session({ task: 'fix it' });
    expect(s.session.taskRef).toBe(1);
    expect(s.sent).toEqual([]);
    s.feed(HELLO);
    expect(s.sent).toEqual([{ type: 'user_input', text: 'fix it' }]);
    s.feed({ type: 'queued', sessionId: 'T1', position: 0 }, { type: 'tool_calling', agent: 'Dev', tool: 'shell', argsSummary: 'ls' });
    s.feed({ type: 'result', sessionId: 'T1', succeeded: true, lastAgent: 'Dev', lastMessage: 'fixed' });
    expect(s.control({ type: 'close' })).toMatchObject({ ref: 2, status: 'accepted' });
    expect(s.log).toEqual([
      ['attached'],
      ['ready'],
      ['session', 'T1'],
      ['ack', 1, 'accepted'],
      ['turnStarted', 1],
      ['turnCompleted', 1, 'end_turn'],
      ['result', { stopReason: 'end_turn', answer: { text: 'fixed', truncated: false }, usage: undefined }],
      ['exit', { status: 'done' }],
    ]);
    expect(s.events.map((event) => event.type)).toEqual(['ready', 'turn-started', 'tool-call', 'assistant-text', 'turn-complete', 'result']);
    expect(s.events[1]).toEqual({ type: 'turn-started', turn: 1, sessionId: 'T1', position: 0 });
    expect(s.events[3]).toEqual({ type: 'assistant-text', final: true, text: 'fixed', sessionId: 'T1', agent: 'Dev' });
    expect(s.left()).toBe(1);
    expect(s.control({ type: 'prompt', text: 'more' })).toMatchObject({ status: 'rejected', reason: 'the run has ended' });
  });

  it('nothing before hello counts; a hello in another protocol version ends the run', () => {
    const s = session({ task: 'x' });
    s.feed({ type: 'queued', sessionId: 'T1' }, { ...HELLO, protocolVersion: 2 });
    expect(s.log).toEqual([
      ['rejected', 'out-of-order', false],
      ['rejected', 'version-mismatch', true, 'version-mismatch'],
    ]);
    expect(s.sent).toEqual([]);
  });

  it('one task at a time; steer, follow-up and finalize are refused; a prompt before hello waits for it', () => {
    const s = session();
    expect(s.control({ type: 'prompt', text: 'first' })).toEqual({ ref: 1 });
    expect(s.control({ type: 'prompt', text: 'second' })).toMatchObject({ status: 'rejected', reason: expect.stringContaining('one task of a client at a time') });
    expect(s.control({ type: 'steer', text: 'x' })).toMatchObject({ status: 'rejected', reason: expect.stringContaining('takes each user_input as a new task') });
    expect(s.control({ type: 'finalize' })).toMatchObject({ status: 'rejected', reason: expect.stringContaining('cancel() interrupts the task') });
    s.feed(HELLO);
    expect(s.sent).toEqual([{ type: 'user_input', text: 'first' }]);
  });

  it('cancel interrupts the running task; its result ends the run cancelled with the answer so far', () => {
    const s = session({ task: 'x' });
    s.feed(HELLO, { type: 'queued', sessionId: 'T1' });
    expect(s.control({ type: 'cancel' })).toMatchObject({ status: 'accepted' });
    expect(s.sent.at(-1)).toEqual({ type: 'interrupt' });
    s.feed({ type: 'result', sessionId: 'T1', succeeded: false, lastMessage: 'half' });
    expect(s.log.slice(-3)).toEqual([
      ['turnCompleted', 1, 'aborted'],
      ['result', { stopReason: 'aborted', answer: { text: 'half', truncated: false }, usage: undefined }],
      ['exit', { status: 'cancelled', code: 'aborted', error: 'the task was interrupted' }],
    ]);
  });

  it('a cancel while the connection is down is sent once the daemon’s hello is in again', () => {
    const s = session({ task: 'x', clientId: 'c1' });
    s.feed(HELLO, { type: 'queued', sessionId: 'T1' });
    expect(s.session.connectionLost()).toBe(true);
    s.setOpen(false);
    s.control({ type: 'cancel' });
    s.setOpen(true);
    s.session.opened(true);
    s.feed({ ...HELLO, inFlight: { sessionId: 'T1', status: 'running' } });
    expect(s.sent.filter((message) => message['type'] === 'interrupt')).toHaveLength(1);
    expect(s.events.at(-1)).toMatchObject({ type: 'info', nativeType: 'reattached' });
  });

  it('re-attaching: only under a client id; a task dropped before queued is adopted from inFlight, a task the daemon lost ends the run', () => {
    expect(session().session.connectionLost()).toBe(false);
    const adopted = session({ task: 'the task', clientId: 'c1' });
    adopted.feed(HELLO);
    adopted.session.connectionLost();
    adopted.session.opened(true);
    adopted.feed({ ...HELLO, inFlight: { sessionId: 'T9', task: 'the task', position: 2 } });
    expect(adopted.log).toContainEqual(['ack', 1, 'accepted']);
    expect(adopted.events).toContainEqual({ type: 'turn-started', turn: 1, sessionId: 'T9', position: 2 });
    expect(adopted.sent).toEqual([{ type: 'user_input', text: 'the task' }]); // never sent twice

    const lost = session({ task: 'the task', clientId: 'c1' });
    lost.feed(HELLO);
    lost.session.opened(true);
    lost.feed(HELLO);
    expect(lost.log.slice(-2)).toEqual([
      ['ack', 1, 'rejected', expect.stringContaining('it was not sent again')],
      ['fatal', 'connection-lost', expect.stringContaining('shows no such task')],
    ]);
  });

  it('the daemon refusing the task with an error: its Ack is rejected, and the run ends failed with the reason', () => {
    const s = session({ task: 'x' });
    s.feed(HELLO, { type: 'error', text: 'the queue is full' });
    expect(s.log).toContainEqual(['ack', 1, 'rejected', 'fuseraft serve refused the task: the queue is full']);
    s.control({ type: 'close' });
    expect(s.log.at(-1)).toEqual(['exit', { status: 'failed', error: 'fuseraft serve refused the task: the queue is full' }]);
  });

  it('a read-only connection with a task, or a resume the daemon does not hold, ends the run before anything is sent', () => {
    const readOnly = session({ task: 'x' });
    readOnly.feed({ ...HELLO, readOnly: true });
    expect(readOnly.log.at(-1)).toEqual(['rejected', 'invalid-payload', true, 'read-only']);
    const unknown = session({ resume: 'T5', clientId: 'c1' });
    unknown.feed({ ...HELLO, pendingResults: ['T4'] });
    expect(unknown.log.at(-1)).toEqual(['rejected', 'invalid-payload', true, 'unknown-session']);
    expect([...readOnly.sent, ...unknown.sent]).toEqual([]);
  });

  it('resume: the held task’s turn opens at hello and its result is collected', () => {
    const s = session({ resume: 'T4', clientId: 'c1' });
    s.feed({ ...HELLO, pendingResults: ['T4'] }, { type: 'result', sessionId: 'T4', succeeded: true, lastMessage: 'done earlier' });
    expect(s.log.slice(0, 5)).toEqual([['attached'], ['ready'], ['session', 'T4'], ['turnStarted', 1], ['turnCompleted', 1, 'end_turn']]);
    expect(s.events[1]).toEqual({ type: 'turn-started', turn: 1, sessionId: 'T4', resumed: true });
  });

  it('another task’s queued and result pass through without counting; a long answer is cut and marked', () => {
    const s = session({ task: 'x', maxAnswerChars: 4 });
    s.feed(HELLO, { type: 'queued', sessionId: 'T1' }, { type: 'queued', sessionId: 'OTHER' }, { type: 'result', sessionId: 'OTHER', succeeded: true, lastMessage: 'not ours' });
    expect(s.events.slice(-2)).toMatchObject([
      { type: 'info', nativeType: 'queued', summary: "a task OTHER was queued (not this run's)" },
      { type: 'info', nativeType: 'result', summary: "result of task OTHER, not this run's" },
    ]);
    expect(s.log.filter((entry) => entry[0] === 'turnStarted' || entry[0] === 'turnCompleted')).toEqual([['turnStarted', 1]]);
    s.feed({ type: 'result', sessionId: 'T1', succeeded: true, lastMessage: 'abcdefgh' });
    s.control({ type: 'close' });
    expect(s.log).toContainEqual(['result', { stopReason: 'end_turn', answer: { text: 'abcd', truncated: true }, usage: undefined }]);
    expect(s.events.at(-1)).toEqual({ type: 'result', stopReason: 'end_turn', sessionId: 'T1', finalText: 'abcd' });
  });

  it('closing with a task still open detaches: the task goes on in the daemon, the run ends cancelled saying how to collect it', () => {
    const s = session({ task: 'x', clientId: 'c1' });
    s.feed(HELLO, { type: 'queued', sessionId: 'T1' });
    s.control({ type: 'close' });
    expect(s.log.at(-1)).toEqual(['exit', { status: 'cancelled', code: 'aborted', error: expect.stringContaining("connectRun({ resume: 'T1', clientId }) collects it") }]);
    expect(s.sent).toEqual([{ type: 'user_input', text: 'x' }]);
  });
});
