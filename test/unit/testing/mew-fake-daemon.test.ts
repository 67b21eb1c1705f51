// The mew session against the fake mew daemon in-process (no sockets): scenarios, misbehaviours, what the daemon received.
import { afterEach, describe, expect, it } from 'vitest';
import { linkedMew } from '../../helpers/mew-linked.js';

const stops: Array<() => void> = [];
afterEach(() => stops.splice(0).forEach((stop) => stop()));

function pair(...args: Parameters<typeof linkedMew>) {
  const made = linkedMew(...args);
  stops.push(made.stop);
  return made;
}

const received = (daemon: { received: Array<{ message: Record<string, unknown> }> }) => daemon.received.map((entry) => entry.message['type']);

describe('the session against the fake daemon', () => {
  it('runs a task with tools, thinking and a subagent, then closes: the daemon saw ping, new_session, submit_prompt', async () => {
    const { daemon, rec, session, until, ended } = pair(
      { turns: [{ steps: [{ thinking: 'plan' }, { tool: 'read_file', progress: 'x' }, { subagent: 'helper' }, { text: 'The answer.', chunks: 3 }] }] },
      { task: 'go', cwd: '/tmp' },
    );
    await until(() => session.state === 'ready' && rec.facts_('turnCompleted').length === 1);
    session.send({ type: 'close' }).then!();
    await ended();
    expect(session.answer()).toEqual({ text: 'The answer.', truncated: false });
    expect(rec.facts_('exit')).toEqual([['exit', { status: 'done' }]]);
    expect(received(daemon).filter((type) => type !== 'ping')).toEqual(['new_session', 'submit_prompt']);
    expect(daemon.received[1]!.message).toEqual({ type: 'new_session', cwd: '/tmp' });
    expect(rec.facts_('turnCompleted')[0]).toEqual(['turnCompleted', 1, 'stop', { inputTokens: 100, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.001, other: { reasoning: 0 } }]);
  });

  it('PascalCase both ways: the daemon spells its tags PascalCase, the session writes them on request', async () => {
    const { daemon, rec, session, until } = pair({ wireCase: 'PascalCase', turns: [{ steps: [{ permission: 'bash' }, { text: 'ok' }] }] }, { task: 'go', wireCase: 'PascalCase', approve: () => true });
    await until(() => rec.facts_('turnCompleted').length === 1);
    expect(session.answer()?.text).toBe('ok');
    expect(received(daemon)).toContain('SubmitPrompt');
    expect(daemon.received.find((entry) => entry.message['type'] === 'PermissionResponse')!.message['decision']).toBe('allow_once');
  });

  it('denies a permission by default, and a request resolved by another client gets no response', async () => {
    const denied = pair({ turns: [{ steps: [{ permission: 'rm' }] }] }, { task: 'go' });
    await denied.until(() => denied.rec.facts_('turnCompleted').length === 1);
    expect(denied.daemon.received.filter((entry) => entry.message['type'] === 'permission_response').map((entry) => entry.message)).toEqual([
      { type: 'permission_response', request_id: 'perm_1_1', decision: 'deny' },
    ]);
    expect(denied.rec.events.find((event) => event.type === 'tool-result')).toMatchObject({ name: 'rm', isError: true });
    const other = pair({ turns: [{ steps: [{ permission: 'rm', resolvedByOther: 20 }] }] }, { task: 'go', approve: () => new Promise(() => undefined) });
    await other.until(() => other.rec.facts_('turnCompleted').length === 1);
    expect(received(other.daemon)).not.toContain('permission_response');
    expect(other.rec.events.some((event) => event.type === 'info' && event.decidedBy === 'another-client')).toBe(true);
  });

  it('answers ask_user_request as cancelled without a callback', async () => {
    const { daemon, rec, session, until } = pair({ turns: [{ steps: [{ ask: ['Which file?'] }] }] }, { task: 'go' });
    await until(() => rec.facts_('turnCompleted').length === 1);
    expect(daemon.received.find((entry) => entry.message['type'] === 'ask_user_response')!.message).toEqual({ type: 'ask_user_response', request_id: 'ask_1_1', answers: [], cancelled: true });
    expect(session.answer()?.text).toBe('(no answer)');
  });

  it('a drop mid-turn fails the run connection-lost', async () => {
    const dropped = pair({ turns: [{ steps: [{ text: 'part' }, { drop: true }] }] }, { task: 'go' });
    await dropped.ended();
    expect(dropped.rec.facts_('fatal')[0]).toEqual(['fatal', 'connection-lost', expect.stringMatching(/during turn 1: the connection dropped/)]);
  });

  it('an old daemon is refused before anything is submitted', async () => {
    const { daemon, rec, ended } = pair({ protocolVersion: 2 }, { task: 'go' });
    await ended();
    expect(rec.facts_('fatal')[0]![1]).toBe('version-mismatch');
    expect(received(daemon)).not.toContain('submit_prompt');
  });

  it('malformed and unknown messages are reported and the turn goes on', async () => {
    const { rec, session, until } = pair({ turns: [{ steps: [{ raw: '{"type":"Bad-Tag"}' }, { unknown: 'mystery_event', fields: { a: 1 } }, { text: 'fine' }] }] }, { task: 'go' });
    await until(() => rec.facts_('turnCompleted').length === 1);
    expect(rec.rejections.map((r) => r.code)).toEqual(['invalid']);
    expect(rec.events.some((event) => event.type === 'passthrough')).toBe(true);
    expect(session.answer()?.text).toBe('fine');
  });

  it('a receipt lost across a reconnect is read back, never re-sent', async () => {
    for (const [status, ackStatus] of [['rejected', 'rejected'], ['unknown', 'rejected'], ['accepted', 'accepted']] as const) {
      const { daemon, rec, until } = pair({ loseReceipt: { submission: 1, status, message: 'busy' } }, { task: 'go' });
      await until(() => rec.facts_('ack').length === 1);
      expect(rec.facts_('ack')[0]!.slice(0, 3)).toEqual(['ack', 1, ackStatus]);
      expect(received(daemon).filter((type) => type !== 'ping')).toEqual(['new_session', 'submit_prompt', 'attach_session', 'read_prompt_receipt']);
      expect(daemon.connections).toBe(2);
      if (status === 'accepted') await until(() => rec.facts_('fatal').length === 1);
    }
  });

  it('cancel stops the daemon\'s turn: the daemon receives cancel, the session exits cancelled', async () => {
    const { daemon, rec, session, until, ended } = pair({ turns: [{ steps: [{ text: 'start' }, { pause: 5000 }] }] }, { task: 'go' });
    await until(() => rec.events.some((event) => event.type === 'assistant-text-delta'));
    session.send({ type: 'cancel' }).then!();
    await ended();
    await until(() => received(daemon).includes('cancel'));
    expect(rec.facts_('exit')).toEqual([['exit', { status: 'cancelled' }]]);
  });
});
