// Unit tests of the fuseraft run --bridge session: turns from agent messages, the answer, result and exit, controls.
import { describe, expect, it } from 'vitest';
import { BridgeSession } from '../../../../src/drivers/fuseraft/bridge-session.js';
import type { BridgeSessionOptions } from '../../../../src/drivers/fuseraft/bridge-session.js';
import { recorder } from '../../../helpers/fuseraft-recorder.js';

const READY = { type: 'ready', protocolVersion: 1, sessionId: 's', task: 't', config: 'c.yaml', resumed: false, agents: ['Dev', 'Rev'] };
const OK_EXIT = { exitCode: 0, signal: null };

function message(agentName: string, content: string, extra: object = {}) {
  return {
    type: 'agent_message',
    elapsedMs: 5,
    message: { agentName, role: 'assistant', content, turnIndex: 0, timestamp: '2026-01-01T00:00:00Z', inputTokens: 10, outputTokens: 2, isCompactionSummary: false, toolCalls: [], ...extra },
  };
}

function result(succeeded: boolean, extra: object = {}) {
  return { type: 'result', sessionId: 's', task: 't', config: 'c', succeeded, errorMessage: succeeded ? null : 'it broke', exitCode: succeeded ? 0 : 1, turns: 2, elapsedSeconds: 1, inputTokens: 30, outputTokens: 6, ...extra };
}

function session(options: Partial<BridgeSessionOptions> = {}) {
  const rec = recorder();
  const made = new BridgeSession(rec.io, rec.facts, { protocol: 'fuseraft-bridge', interruptGraceMs: 1000, maxAnswerChars: 1_000_000, ...options });
  return { rec, session: made, feed: (...frames: Array<object | string>) => rec.feed(made, ...frames) };
}

describe('bridge session', () => {
  it('maps agents to turns; the answer is the last non-Orchestrator message; result + exit 0 is done', () => {
    const { rec, session: s, feed } = session();
    feed(
      READY,
      { type: 'agent_starting', agent: 'Dev' },
      { type: 'tool_calling', agent: 'Dev', tool: 'shell', argsSummary: 'ls' },
      message('Dev', 'built it'),
      message('Orchestrator', 'route to Rev', { role: 'user', inputTokens: null, outputTokens: null }),
      { type: 'token_budget_warning', agent: 'Rev', inputTokens: 900, warnThreshold: 800 },
      { type: 'agent_starting', agent: 'Rev' },
      message('Rev', 'looks good'),
      message('Orchestrator', 'done now'),
      result(true),
    );
    expect(rec.events.map((event) => event.type)).toEqual([
      'ready',
      'turn-started',
      'tool-call',
      'assistant-text',
      'turn-complete',
      'turn-started',
      'user',
      'turn-complete',
      'info',
      'turn-started',
      'assistant-text',
      'turn-complete',
      'turn-started',
      'assistant-text',
      'turn-complete',
      'result',
    ]);
    expect(rec.events[2]).toEqual({ type: 'tool-call', name: 'shell', agent: 'Dev', summary: 'ls' });
    expect(rec.events[6]).toMatchObject({ type: 'user', text: 'route to Rev', agent: 'Orchestrator', orchestrator: true });
    expect(rec.events[4]).toEqual({ type: 'turn-complete', turn: 1, stopReason: 'end_turn', agent: 'Dev', usage: { inputTokens: 10, outputTokens: 2 }, toolCalls: [] });
    expect(rec.events.at(-1)).toMatchObject({ type: 'result', stopReason: 'end_turn', finalText: 'looks good', usage: { inputTokens: 30, outputTokens: 6 }, extra: { succeeded: true } });
    expect(s.answer()).toEqual({ text: 'looks good', truncated: false });
    expect(s.usage()).toEqual({ inputTokens: 30, outputTokens: 6 });
    expect(rec.log.filter((entry) => entry[0] === 'result' || entry[0] === 'ending')).toEqual([
      ['result', { stopReason: 'end_turn', answer: { text: 'looks good', truncated: false }, usage: { inputTokens: 30, outputTokens: 6 } }],
      ['ending'],
    ]);
    expect(s.provisionalEnd()).toEqual({ status: 'done' });
    expect(s.finish(OK_EXIT)).toEqual({ status: 'done' });
  });

  it('the task gets a ref, accepted once fuseraft is ready', () => {
    const { rec, session: s, feed } = session({ task: 'ship it' });
    expect(s.taskRef).toBe(1);
    expect(s.send({ type: 'close' }).ref).toBe(2);
    feed(READY);
    expect(rec.log.filter((entry) => entry[0] === 'ack')).toEqual([['ack', 1, 'accepted', undefined]]);
    expect(rec.written).toEqual([]);
  });

  it('a compaction summary is not the answer', () => {
    const { session: s, feed } = session();
    feed(READY, message('Dev', 'real'), message('Dev', 'summary', { isCompactionSummary: true }), result(true));
    expect(s.answer()?.text).toBe('real');
  });

  it('a failed result is failed with fuseraft\'s error message; success with a non-zero exit is failed too', () => {
    const failed = session();
    failed.feed(READY, { type: 'agent_starting', agent: 'Dev' }, result(false));
    expect(failed.rec.log.filter((entry) => entry[0] === 'turnCompleted')).toEqual([['turnCompleted', 1, 'error', undefined]]);
    expect(failed.session.finish({ exitCode: 1, signal: null })).toEqual({ status: 'failed', error: 'it broke' });

    const announced = session();
    announced.feed(READY, result(true, { exitCode: 4 }));
    expect(announced.session.provisionalEnd()).toEqual({ status: 'failed', error: 'fuseraft reported success but exited with code 4' });

    const odd = session();
    expect(odd.session.provisionalEnd()).toBeUndefined();
    odd.feed(READY, result(true));
    expect(odd.session.finish({ exitCode: 2, signal: null })).toEqual({ status: 'failed', error: 'fuseraft reported success but exited with code 2' });
  });

  it('a run that fails before it starts sends only result', () => {
    const { rec, session: s, feed } = session();
    feed(result(false, { sessionId: null, errorMessage: 'no such config' }));
    expect(rec.rejections).toEqual([]);
    expect(s.finish({ exitCode: 1, signal: null })).toEqual({ status: 'failed', error: 'no such config' });
  });

  it('no result means fuseraft did not say how it ended', () => {
    const { session: s, feed } = session();
    feed(READY, { type: 'agent_starting', agent: 'Dev' });
    expect(s.finish({ exitCode: null, signal: 'SIGSEGV' })).toBeUndefined();
  });

  it('rejects prompt, steer, follow-up and finalize; close is applied; cancel interrupts and ends cancelled', () => {
    const { rec, session: s, feed } = session({ approve: () => new Promise(() => undefined) });
    feed(READY, { type: 'agent_starting', agent: 'Dev' });
    for (const control of [
      { type: 'prompt', text: 'x' },
      { type: 'steer', text: 'x' },
      { type: 'follow-up', text: 'x' },
      { type: 'finalize' },
    ] as const) {
      expect(s.send(control)).toMatchObject({ status: 'rejected', reason: 'fuseraft run --bridge reads no user input (only approvals and interrupt)' });
    }
    expect(s.send({ type: 'close' }).status).toBe('applied');
    feed({ type: 'approval_request', kind: 'route_approval', keyword: 'ship', sourceAgent: 'Dev', targetAgent: 'Ops' });
    expect(s.send({ type: 'cancel' }).status).toBe('accepted');
    expect(rec.written).toEqual([{ type: 'approval_response', approved: false }, { type: 'interrupt' }]);
    expect(rec.inputEnded()).toBe(false);
    feed(result(false, { errorMessage: 'cancelled' }));
    expect(rec.pendingTimers()).toBe(0);
    expect(rec.events.at(-1)).toMatchObject({ type: 'result', stopReason: 'aborted' });
    expect(s.finish({ exitCode: 1, signal: null })).toEqual({ status: 'cancelled' });
    expect(s.send({ type: 'cancel' }).status).toBe('rejected');
  });

  it('cancel falls back to SIGINT when no result comes within the grace', () => {
    const { rec, session: s, feed } = session();
    feed(READY);
    s.send({ type: 'cancel' });
    rec.fireTimers();
    expect(rec.sigints()).toBe(1);
    expect(s.finish({ exitCode: null, signal: 'SIGTERM' })).toEqual({ status: 'cancelled' });
  });

  it('reports frames after result, and version mismatches as fatal', () => {
    const after = session();
    after.feed(READY, result(true), message('Dev', 'late'));
    expect(after.rec.rejections.map((r) => r.rejection.reason)).toEqual(['a agent_message frame after result']);
    expect(after.session.answer()).toBeUndefined();

    const wrong = session();
    wrong.feed({ ...READY, protocolVersion: 2 });
    expect(wrong.rec.rejections[0]).toMatchObject({ fatal: true, rejection: { code: 'version-mismatch' } });
    expect(wrong.session.finish(OK_EXIT)).toBeUndefined();
  });

  it('approves a known route approval through the same callback, and denies unknown kinds on true', () => {
    const { rec, feed } = session({ approve: () => true });
    feed(READY, { type: 'approval_request', kind: 'route_approval', keyword: 'k', sourceAgent: 'a', targetAgent: 'b' }, { type: 'approval_request', kind: 'deploy' });
    expect(rec.written).toEqual([
      { type: 'approval_response', approved: true },
      { type: 'approval_response', approved: false },
    ]);
  });
});
