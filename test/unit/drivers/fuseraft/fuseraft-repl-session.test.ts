// Unit tests of the fuseraft repl session: handshake, turns, usage, answer, controls, interjections, the end.
import { describe, expect, it } from 'vitest';
import { ReplSession } from '../../../../src/drivers/fuseraft/repl-session.js';
import { FINALIZE_PROMPT } from '../../../../src/drivers/shared/session.js';
import type { ReplSessionOptions } from '../../../../src/drivers/fuseraft/repl-session.js';
import { overlongRejection } from '../../../../src/drivers/shared/json-line.js';
import { recorder } from '../../../helpers/fuseraft-recorder.js';

const READY = { type: 'ready', protocolVersion: 1, sessionId: 's1', model: 'm', title: null, autoTitle: null, midTurnCommands: [] };
const OK_EXIT = { exitCode: 0, signal: null };

function session(options: Partial<ReplSessionOptions> = {}, recorderOptions: { stdinBroken?: boolean } = {}) {
  const rec = recorder(recorderOptions);
  const made = new ReplSession(rec.io, rec.facts, { protocol: 'fuseraft', interruptGraceMs: 1000, maxAnswerChars: 1_000_000, ...options });
  const feed = (...frames: Array<object | string>) => rec.feed(made, ...frames);
  return { rec, session: made, feed };
}

describe('handshake', () => {
  it('reports ready, publishes it with its fields, and sends the task as the first user_input', () => {
    const { rec, session: s, feed } = session({ task: 'do it' });
    expect(s.taskRef).toBe(1);
    expect(rec.written).toEqual([]);
    feed(READY);
    expect(rec.events[0]).toEqual({ type: 'ready', extra: { protocolVersion: 1, sessionId: 's1', model: 'm', title: null, autoTitle: null, midTurnCommands: [] } });
    expect(rec.written).toEqual([{ type: 'user_input', text: 'do it' }]);
    expect(rec.log.filter((entry) => entry[0] === 'ready' || entry[0] === 'ack')).toEqual([['ready'], ['ack', 1, 'accepted', undefined]]);
    expect(s.state).toBe('running');
  });

  it('fails fatally on another protocol version (or none), and answers a waiting approval', () => {
    for (const version of [2, '1', undefined]) {
      const { rec, session: s, feed } = session({ task: 'x' });
      feed({ type: 'approval_request', kind: 'shell_command', command: 'ls' });
      feed({ ...READY, protocolVersion: version });
      expect(rec.rejections.at(-1)).toMatchObject({ fatal: true, rejection: { code: 'version-mismatch', lineType: 'ready' } });
      expect(rec.log.some((entry) => entry[0] === 'ready')).toBe(false);
      expect(rec.written).toEqual([{ type: 'approval_response', approved: false }]);
      feed({ type: 'token', text: 'ignored' });
      expect(rec.events.some((event) => event.type === 'assistant-text-delta')).toBe(false);
      expect(s.finish(OK_EXIT)).toBeUndefined();
    }
  });

  it('reports frames before ready, a second ready and noise lines, and goes on', () => {
    const { rec, feed } = session();
    feed({ type: 'token', text: 'early' }, READY, READY, 'plain text', '{"type":"token","text":1}');
    expect(rec.rejections.map((r) => [r.rejection.code, r.fatal])).toEqual([
      ['out-of-order', false],
      ['out-of-order', false],
      ['malformed', false],
      ['invalid-payload', false],
    ]);
  });
});

describe('turns', () => {
  it('maps a whole turn, sums usage, and the answer is the tokens of the last completed turn', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(
      READY,
      { type: 'turn_start', text: null },
      { type: 'thinking', text: 'hmm' },
      { type: 'token', text: 'Hel' },
      { type: 'tool_call', id: 't1', name: 'read', summary: 'a.txt' },
      { type: 'tool_result', id: 't1', name: 'read', ok: true, output: 'x' },
      { type: 'token', text: 'lo' },
      { type: 'message_end', turnIndex: 0, toolCalls: [{ name: 'read' }], inputTokens: 100, outputTokens: 20, cachedInputTokens: 50 },
    );
    expect(rec.events.map((event) => event.type)).toEqual([
      'ready',
      'turn-started',
      'assistant-thinking-delta',
      'assistant-text-delta',
      'tool-call',
      'tool-result',
      'assistant-text-delta',
      'turn-complete',
    ]);
    expect(rec.events.at(-1)).toEqual({
      type: 'turn-complete',
      turn: 1,
      stopReason: 'end_turn',
      usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 50 },
      extra: { turnIndex: 0, toolCalls: [{ name: 'read' }] },
    });
    expect(rec.log.filter((entry) => String(entry[0]).startsWith('turn'))).toEqual([
      ['turnStarted', 1],
      ['turnCompleted', 1, 'end_turn', { inputTokens: 100, outputTokens: 20, cacheReadTokens: 50 }],
    ]);
    expect(s.answer()).toEqual({ text: 'Hello', truncated: false });
    expect(s.state).toBe('ready');
    s.send({ type: 'prompt', text: 'again' });
    feed({ type: 'turn_start' }, { type: 'token', text: 'Bye' }, { type: 'message_end', inputTokens: 1, outputTokens: null });
    expect(s.answer()).toEqual({ text: 'Bye', truncated: false });
    expect(s.usage()).toEqual({ inputTokens: 101, outputTokens: 20, cacheReadTokens: 50 });
  });

  it('ends a turn on cancelled and on error without message_end, keeping the last completed answer', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'turn_start' }, { type: 'token', text: 'ok' }, { type: 'message_end' });
    s.send({ type: 'prompt', text: 'two' });
    feed({ type: 'turn_start' }, { type: 'token', text: 'par' }, { type: 'cancelled' });
    s.send({ type: 'prompt', text: 'three' });
    feed({ type: 'turn_start' }, { type: 'error', text: 'provider down' });
    const completes = rec.events.filter((event) => event.type === 'turn-complete');
    expect(completes.map((event) => [event['turn'], event['stopReason']])).toEqual([
      [1, 'end_turn'],
      [2, 'aborted'],
      [3, 'error'],
    ]);
    expect(completes[2]?.['error']).toBe('provider down');
    expect(rec.events.find((event) => event.type === 'error')).toEqual({ type: 'error', error: 'provider down' });
    expect(s.answer()?.text).toBe('ok');
    expect(s.state).toBe('ready');
  });

  it('ends a requested turn that errors before it starts', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'error', text: 'not configured' });
    expect(rec.log.filter((entry) => String(entry[0]).startsWith('turn'))).toEqual([
      ['turnStarted', 1],
      ['turnCompleted', 1, 'error', undefined],
    ]);
    expect(s.state).toBe('ready');
  });

  it('an error while idle is only an error event', () => {
    const { rec, feed } = session();
    feed(READY, { type: 'error', text: 'unknown command' });
    expect(rec.events.map((event) => event.type)).toEqual(['ready', 'error']);
  });

  it('cuts the answer at maxAnswerChars and says so', () => {
    const { session: s, feed } = session({ task: 'go', maxAnswerChars: 4 });
    feed(READY, { type: 'turn_start' }, { type: 'token', text: 'abc' }, { type: 'token', text: 'def' }, { type: 'message_end' });
    expect(s.answer()).toEqual({ text: 'abcd', truncated: true });
  });
});

describe('controls', () => {
  it('answers controls as a Fen child in the same state would', () => {
    const { session: s, feed } = session();
    expect(s.send({ type: 'prompt', text: 'x' })).toEqual({ ref: 1, status: 'rejected', reason: 'child is not ready' });
    feed(READY);
    expect(s.send({ type: 'prompt', text: 'a' })).toEqual({ ref: 2, status: 'accepted' });
    expect(s.send({ type: 'prompt', text: 'b' })).toMatchObject({ status: 'rejected', reason: 'a turn is running; send steer or follow-up' });
  });

  it('a steer or follow-up from ready starts a turn and is injected at once', () => {
    const { rec, session: s, feed } = session();
    feed(READY);
    expect(s.send({ type: 'steer', text: 's' })).toEqual({ ref: 1, status: 'accepted', injected: true });
    expect(rec.written).toEqual([{ type: 'user_input', text: 's' }]);
  });

  it('steers mid-turn map their delivery from interjection: joined, carried (injected next turn), dropped', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'turn_start' });
    const a = s.send({ type: 'steer', text: 'a' }).ref;
    const b = s.send({ type: 'steer', text: 'b' }).ref;
    const c = s.send({ type: 'steer', text: 'c' }).ref;
    expect(rec.written.slice(1)).toEqual([
      { type: 'user_input', text: 'a' },
      { type: 'user_input', text: 'b' },
      { type: 'user_input', text: 'c' },
    ]);
    feed({ type: 'interjection', status: 'joined', count: 1 });
    expect(rec.deliveries).toEqual([[a, 'injected']]);
    feed({ type: 'interjection', status: 'carried', count: 1 }, { type: 'interjection', status: 'dropped', count: 1 });
    expect(rec.deliveries).toEqual([
      [a, 'injected'],
      [c, 'dropped'],
    ]);
    expect(rec.events.find((event) => event.type === 'info' && Array.isArray(event['refs']))).toMatchObject({ refs: [c] });
    feed({ type: 'message_end' });
    expect(s.state).toBe('ready');
    // fuseraft starts the carried turn by itself.
    feed({ type: 'turn_start', text: 'b' });
    expect(rec.deliveries.at(-1)).toEqual([b, 'injected']);
    expect(rec.events.filter((event) => event.type === 'follow-up-injected')).toEqual([{ type: 'follow-up-injected', ref: b }]);
    expect(s.state).toBe('running');
  });

  it('holds follow-ups until the turn ends, sends them one turn each, and injects each at its turn_start', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'turn_start' });
    const f1 = s.send({ type: 'follow-up', text: 'f1' });
    const f2 = s.send({ type: 'follow-up', text: 'f2' });
    expect(f1.status).toBe('accepted');
    expect(rec.written).toHaveLength(1);
    feed({ type: 'message_end' });
    expect(rec.written.at(-1)).toEqual({ type: 'user_input', text: 'f1' });
    expect(s.state).toBe('running');
    feed({ type: 'turn_start' });
    expect(rec.deliveries).toEqual([[f1.ref, 'injected']]);
    feed({ type: 'message_end' });
    expect(rec.written.at(-1)).toEqual({ type: 'user_input', text: 'f2' });
    feed({ type: 'turn_start' }, { type: 'message_end' });
    expect(rec.deliveries).toEqual([
      [f1.ref, 'injected'],
      [f2.ref, 'injected'],
    ]);
    expect(rec.written).toHaveLength(3);
  });

  it('holds a prompt while fuseraft is about to start a carried turn', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'turn_start' });
    s.send({ type: 'steer', text: 'late' });
    feed({ type: 'interjection', status: 'carried', count: 1 }, { type: 'message_end' });
    expect(s.send({ type: 'prompt', text: 'next' }).status).toBe('accepted');
    expect(rec.written.map((line) => line['text'])).toEqual(['go', 'late']);
    feed({ type: 'turn_start', text: 'late' }, { type: 'message_end' });
    expect(rec.written.map((line) => line['text'])).toEqual(['go', 'late', 'next']);
  });

  it('close from ready ends stdin; after session_end and exit 0 the child says done', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'turn_start' }, { type: 'token', text: 'A' }, { type: 'message_end', inputTokens: 3 });
    expect(s.send({ type: 'close' }).status).toBe('accepted');
    expect(rec.inputEnded()).toBe(true);
    expect(s.send({ type: 'prompt', text: 'late' })).toMatchObject({ status: 'rejected', reason: 'run is done' });
    feed({ type: 'session_end' });
    expect(rec.events.find((event) => event.type === 'result')).toEqual({
      type: 'result',
      stopReason: 'end_turn',
      finalText: 'A',
      usage: { inputTokens: 3 },
    });
    expect(rec.log.filter((entry) => entry[0] === 'result' || entry[0] === 'ending')).toEqual([
      ['result', { stopReason: 'end_turn', answer: { text: 'A', truncated: false }, usage: { inputTokens: 3 } }],
      ['ending'],
    ]);
    expect(s.provisionalEnd()).toEqual({ status: 'done' });
    expect(s.finish(OK_EXIT)).toEqual({ status: 'done' });
  });

  it('no provisional end before session_end; a second session_end is out of order', () => {
    const { rec, session: s, feed } = session();
    feed(READY);
    expect(s.provisionalEnd()).toBeUndefined();
    feed({ type: 'session_end' }, { type: 'session_end' });
    expect(rec.rejections.map((r) => r.rejection.reason)).toEqual(['a second session_end frame']);
    expect(rec.log.filter((entry) => entry[0] === 'ending')).toHaveLength(1);
    // No completed turn: no result, but a clean end.
    expect(rec.log.some((entry) => entry[0] === 'result')).toBe(false);
    expect(s.provisionalEnd()).toEqual({ status: 'done' });
  });

  it('close mid-turn drops held follow-ups and ends stdin after the turn', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'turn_start' });
    const f = s.send({ type: 'follow-up', text: 'f' }).ref;
    expect(s.send({ type: 'close' }).status).toBe('accepted');
    expect(rec.deliveries).toEqual([[f, 'dropped']]);
    expect(rec.inputEnded()).toBe(false);
    expect(s.send({ type: 'close' }).status).toBe('applied');
    feed({ type: 'message_end' });
    expect(rec.inputEnded()).toBe(true);
    expect(rec.written).toHaveLength(1);
  });

  it('cancel mid-turn: interrupt, stdin ended, SIGINT only if the turn outlives the grace; the child says cancelled', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'turn_start' });
    expect(s.send({ type: 'cancel' }).status).toBe('accepted');
    expect(rec.written.at(-1)).toEqual({ type: 'interrupt' });
    expect(rec.inputEnded()).toBe(true);
    expect(rec.pendingTimers()).toBe(1);
    rec.fireTimers();
    expect(rec.sigints()).toBe(1);
    feed({ type: 'cancelled' }, { type: 'session_end' });
    expect(rec.events.some((event) => event.type === 'result')).toBe(false);
    expect(s.finish(OK_EXIT)).toEqual({ status: 'cancelled' });
    expect(s.send({ type: 'cancel' })).toMatchObject({ status: 'rejected', reason: 'run is cancelled' });
  });

  it('cancel: no SIGINT when the turn ends within the grace; SIGINT at once when stdin is broken', () => {
    const first = session({ task: 'go' });
    first.feed(READY, { type: 'turn_start' });
    first.session.send({ type: 'cancel' });
    first.feed({ type: 'cancelled' });
    expect(first.rec.pendingTimers()).toBe(0);
    expect(first.rec.sigints()).toBe(0);

    const broken = session({}, { stdinBroken: true });
    broken.feed(READY);
    broken.session.send({ type: 'prompt', text: 'x' });
    broken.session.send({ type: 'cancel' });
    expect(broken.rec.sigints()).toBe(1);
    expect(broken.rec.events.some((event) => event.type === 'error' && String(event['error']).includes('user_input'))).toBe(true);
  });

  it('cancel denies a pending approval before the interrupt, so fuseraft can read it', () => {
    const { rec, session: s, feed } = session({ task: 'go', approve: () => new Promise(() => undefined) });
    feed(READY, { type: 'turn_start' }, { type: 'approval_request', kind: 'shell_command', command: 'ls' });
    expect(rec.written).toHaveLength(1);
    s.send({ type: 'cancel' });
    expect(rec.written.slice(1)).toEqual([{ type: 'approval_response', approved: false }, { type: 'interrupt' }]);
  });

  it('finalize mid-turn: interrupt, then the note as the last turn, then stdin ended; its answer is the last turn', () => {
    const { rec, session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'turn_start' }, { type: 'token', text: 'partial' });
    const f = s.send({ type: 'follow-up', text: 'f' }).ref;
    expect(s.send({ type: 'finalize', note: 'wrap up' }).status).toBe('accepted');
    expect(rec.deliveries).toEqual([[f, 'dropped']]);
    expect(rec.written.at(-1)).toEqual({ type: 'interrupt' });
    expect(s.send({ type: 'finalize' }).status).toBe('applied');
    feed({ type: 'cancelled' });
    expect(rec.written.at(-1)).toEqual({ type: 'user_input', text: 'wrap up' });
    expect(s.state).toBe('finalizing');
    feed({ type: 'turn_start' }, { type: 'token', text: 'final' }, { type: 'message_end' });
    expect(rec.inputEnded()).toBe(true);
    expect(s.state).toBe('done');
    feed({ type: 'session_end' });
    expect(s.finish(OK_EXIT)).toEqual({ status: 'done' });
    expect(s.answer()?.text).toBe('final');
  });

  it('finalize from ready sends the default note as one last turn', () => {
    const { rec, session: s, feed } = session();
    feed(READY);
    s.send({ type: 'finalize' });
    expect(rec.written).toEqual([{ type: 'user_input', text: FINALIZE_PROMPT }]);
    feed({ type: 'turn_start' }, { type: 'message_end' });
    expect(rec.inputEnded()).toBe(true);
  });
});

describe('the end', () => {
  it('no session_end means the child did not say how it ended (a crash)', () => {
    const { session: s, feed } = session({ task: 'go' });
    feed(READY, { type: 'turn_start' });
    expect(s.finish({ exitCode: null, signal: 'SIGKILL' })).toBeUndefined();
  });

  it('a last turn that errored, a non-zero exit after session_end, or a turn fuseraft cancelled are not done', () => {
    const errored = session({ task: 'go' });
    errored.feed(READY, { type: 'turn_start' }, { type: 'error', text: 'quota' }, { type: 'session_end' });
    expect(errored.session.finish(OK_EXIT)).toEqual({ status: 'failed', error: 'quota' });

    const nonZero = session({ task: 'go' });
    nonZero.feed(READY, { type: 'turn_start' }, { type: 'message_end' }, { type: 'session_end' });
    expect(nonZero.session.finish({ exitCode: 3, signal: null })).toEqual({ status: 'failed', error: 'fuseraft exited with code 3 after session_end' });

    const cancelled = session({ task: 'go' });
    cancelled.feed(READY, { type: 'turn_start' }, { type: 'cancelled' }, { type: 'session_end' });
    expect(cancelled.session.finish(OK_EXIT)).toMatchObject({ status: 'cancelled' });
  });

  it('answers an overlong approval_request line with a denial, and an overlong question with a skip', () => {
    const { rec, session: s, feed } = session({ approve: () => true, answerQuestion: () => 'x' });
    feed(READY);
    s.onOverlongLine(overlongRejection('{"type":"approval_request","kind":"file_write","newContent":"', 'stdout line 9', 1024));
    s.onOverlongLine(overlongRejection('{"type":"question","question":"', 'stdout line 9', 1024));
    s.onOverlongLine(overlongRejection('{"type":"token","text":"', 'stdout line 9', 1024));
    expect(rec.rejections.map((r) => r.rejection.lineType)).toEqual(['approval_request', 'question', 'token']);
    expect(rec.written).toEqual([
      { type: 'approval_response', approved: false },
      { type: 'question_response', answer: null },
    ]);
  });

  it('passes unknown frames and known frames without a mapping through as info', () => {
    const { rec, feed } = session();
    feed(READY, { type: 'status', model: 'm', context: 0.5 }, { type: 'brand_new', x: [1] });
    expect(rec.events.slice(1)).toEqual([
      { type: 'info', nativeType: 'status', extra: { model: 'm', context: 0.5 } },
      { type: 'info', nativeType: 'brand_new', extra: { x: [1] } },
    ]);
  });
});
