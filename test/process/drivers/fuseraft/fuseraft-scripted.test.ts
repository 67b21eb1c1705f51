// End to end: spawnRun({ protocol: 'fuseraft' | 'fuseraft-bridge' }) against scripted fuseraft children (real processes).
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../../src/index.js';
import type { Outcome, Run, RunEvent, RunEventOf, RunOptions } from '../../../../src/index.js';
import { alivePids, waitUntilGone } from '../../../../src/testing/index.js';

const SCRIPT = fileURLToPath(new URL('../../../helpers/scripted-fuseraft.mjs', import.meta.url));
const BOUND_MS = 30_000;
const READY = { type: 'ready', protocolVersion: 1, sessionId: 's1', model: 'm', title: null, autoTitle: null, midTurnCommands: [] };
const BRIDGE_READY = { type: 'ready', protocolVersion: 1, sessionId: 'b1', task: 't', config: 'c.yaml', resumed: false, agents: ['Dev'] };
const END = [{ eof: true }, { send: { type: 'session_end' } }, { exit: 0 }];

type Step = Record<string, unknown>;

interface Scripted {
  run: Run;
  events: RunEvent[];
  /** The stdin lines the script read, in order (from its echo frames). */
  received: () => Array<Record<string, unknown>>;
  /** Pids the script or the kill ladder named: the root, grandchildren. */
  pids: Set<number>;
  waitEvent: (match: (event: RunEvent) => boolean) => Promise<RunEvent>;
  finish: () => Promise<Outcome>;
}

const live: Scripted[] = [];
afterEach(async () => {
  for (const scripted of live.splice(0)) await scripted.run.kill('test teardown');
});

function start(steps: Step[], options: Partial<RunOptions> & { protocol?: 'fuseraft' | 'fuseraft-bridge' } = {}): Scripted {
  const { env, ...rest } = options;
  const run = spawnRun({
    protocol: 'fuseraft',
    command: process.execPath,
    args: [SCRIPT],
    killGraceMs: 2000,
    readyTimeoutMs: BOUND_MS,
    ...rest,
    env: { ...env, SCRIPTED_FUSERAFT: JSON.stringify(steps) },
  } as RunOptions);
  const events: RunEvent[] = [];
  const pids = new Set<number>();
  if (run.pid !== undefined) pids.add(run.pid);
  const waiters: Array<{ match: (event: RunEvent) => boolean; resolve: (event: RunEvent) => void }> = [];
  run.on('event', (event) => {
    events.push(event);
    if (event.type === 'info' && event.nativeType === 'grandchild') pids.add(event.extra?.['pid'] as number);
    for (const waiter of [...waiters]) {
      if (waiter.match(event)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  });
  run.on('kill', (step) => step.pids.forEach((pid) => pids.add(pid)));
  const scripted: Scripted = {
    run,
    events,
    pids,
    received: () =>
      events.flatMap((event) => (event.type === 'info' && event.nativeType === 'echo' ? [event.extra?.['line'] as Record<string, unknown>] : [])),
    waitEvent: (match) => {
      const seen = events.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        waiters.push({ match, resolve });
        void run.outcome.then(() => setTimeout(() => reject(new Error('the run ended before the event came')), 50));
      });
    },
    finish: async () => {
      const outcome = await Promise.race([
        run.outcome,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no outcome within the bound')), BOUND_MS).unref()),
      ]);
      expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
      expect(events.at(-1)?.type).toBe('exit');
      expect(await waitUntilGone(pids, BOUND_MS)).toEqual([]);
      return outcome;
    },
  };
  live.push(scripted);
  return scripted;
}

const isType = <T extends RunEvent['type']>(type: T) => (event: RunEvent): event is RunEventOf<T> => event.type === type;
const turnStarted = isType('turn-started');

describe("protocol 'fuseraft' (repl --vscode)", () => {
  it('runs a task to its answer, with usage, and closes the chat when idle', async () => {
    const s = start(
      [
        { send: READY },
        { read: 'user_input' },
        { send: { type: 'turn_start', text: null } },
        { send: { type: 'token', text: 'Hel' } },
        { send: { type: 'tool_call', id: 't', name: 'read', summary: 'a' } },
        { send: { type: 'tool_result', id: 't', name: 'read', ok: true, output: 'x'.repeat(100_000) } },
        { send: { type: 'token', text: 'lo' } },
        { send: { type: 'message_end', turnIndex: 0, toolCalls: [], inputTokens: 120, outputTokens: 30, cachedInputTokens: 100 } },
        ...END,
      ],
      { task: 'say hello' },
    );
    expect(await s.run.taskAck).toMatchObject({ status: 'accepted' });
    const outcome = await s.finish();
    expect(outcome).toMatchObject({
      status: 'done',
      finalText: 'Hello',
      truncated: false,
      turns: 1,
      usage: { inputTokens: 120, outputTokens: 30, cacheReadTokens: 100 },
      exitCode: 0,
      killed: false,
      rejectedLines: 0,
    });
    expect(s.received()).toEqual([{ type: 'user_input', text: 'say hello' }]);
    expect(s.events.find(isType('tool-result'))).toMatchObject({ transportTruncated: true, isError: false });
    expect(s.run.channelDir).toBe('');
  });

  it('answers approvals of known and unknown kinds with exactly one response each, in order', async () => {
    const steps = [
      { send: READY },
      { read: 'user_input' },
      { send: { type: 'turn_start' } },
      { send: { type: 'approval_request', kind: 'shell_command', command: 'ls' } },
      { read: 'approval_response' },
      { send: { type: 'approval_request', kind: 'teleport', target: 'mars' } },
      { read: 'approval_response' },
      { send: { type: 'approval_request', kind: 'file_write', plugin: 'fs', action: 'write', path: 'a', oldContent: null, newContent: 'b' } },
      { read: 'approval_response' },
      { send: { type: 'message_end' } },
      ...END,
    ];
    const asked: string[] = [];
    const approving = start(steps, {
      task: 'go',
      approve: async (request) => {
        asked.push(request.kind);
        return request.kind !== 'file_write';
      },
    });
    expect((await approving.finish()).status).toBe('done');
    expect(asked).toEqual(['shell_command', 'teleport', 'file_write']);
    // The unknown kind is denied although the callback said true; nothing else was written.
    expect(approving.received().slice(1)).toEqual([
      { type: 'approval_response', approved: true },
      { type: 'approval_response', approved: false },
      { type: 'approval_response', approved: false },
    ]);

    const silent = start(steps, { task: 'go' });
    expect((await silent.finish()).status).toBe('done');
    expect(silent.received().slice(1).map((line) => line['approved'])).toEqual([false, false, false]);
  });

  it('sets FUSERAFT_VSCODE_QUESTIONS only with answerQuestion, and answers each question once', async () => {
    const steps = [
      { send: READY },
      { env: 'FUSERAFT_VSCODE_QUESTIONS' },
      { read: 'user_input' },
      { send: { type: 'turn_start' } },
      { send: { type: 'question', question: 'db?', options: ['pg', 'sqlite'], allowOther: false } },
      { read: 'question_response' },
      { send: { type: 'message_end' } },
      ...END,
    ];
    const envOf = (scripted: Scripted) =>
      scripted.events.flatMap((event) => (event.type === 'info' && event.nativeType === 'env' ? [event.extra?.['value']] : []))[0];
    const asking = start(steps, { task: 'go', answerQuestion: (question) => question.options[1] ?? null, env: { FUSERAFT_VSCODE_QUESTIONS: '1' } });
    expect((await asking.finish()).status).toBe('done');
    expect(envOf(asking)).toBe('1');
    expect(asking.received()[1]).toEqual({ type: 'question_response', answer: 'sqlite' });

    // Without the callback the variable is 0 even when the parent's environment says 1; a question is skipped.
    const silent = start(steps, { task: 'go', env: { FUSERAFT_VSCODE_QUESTIONS: '1' } });
    expect((await silent.finish()).status).toBe('done');
    expect(envOf(silent)).toBe('0');
    expect(silent.received()[1]).toEqual({ type: 'question_response', answer: null });
  });

  it('steers mid-turn with the delivery fuseraft reports, and holds follow-ups for the next turn', async () => {
    const s = start(
      [
        { send: READY },
        { read: 'user_input' },
        { send: { type: 'turn_start' } },
        { read: 'user_input' },
        { send: { type: 'interjection', status: 'joined', count: 1 } },
        { send: { type: 'token', text: 'one' } },
        { send: { type: 'message_end' } },
        { read: 'user_input' },
        { send: { type: 'turn_start' } },
        { send: { type: 'token', text: 'two' } },
        { send: { type: 'message_end' } },
        ...END,
      ],
      { task: 'go' },
    );
    await s.waitEvent(turnStarted);
    const followUp = await s.run.followUp('then this');
    const steer = await s.run.steer('also that');
    expect([steer.status, followUp.status]).toEqual(['accepted', 'accepted']);
    expect(await steer.delivery).toBe('injected');
    expect(await followUp.delivery).toBe('injected');
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'done', finalText: 'two', turns: 2 });
    expect(s.received().map((line) => line['text'])).toEqual(['go', 'also that', 'then this']);
  });

  it('cancel interrupts the turn and ends the chat: cancelled, nothing left behind', async () => {
    const s = start(
      [
        { send: READY },
        { read: 'user_input' },
        { send: { type: 'turn_start' } },
        { read: 'interrupt' },
        { send: { type: 'cancelled' } },
        ...END,
      ],
      { task: 'go' },
    );
    await s.waitEvent(turnStarted);
    expect((await s.run.cancel()).status).toBe('accepted');
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted', exitCode: 0 });
    expect(s.events.find(isType('turn-complete'))).toMatchObject({ stopReason: 'aborted' });
  });

  it('finalize mid-turn interrupts, sends the note as the last turn, and ends done with its answer', async () => {
    const s = start(
      [
        { send: READY },
        { read: 'user_input' },
        { send: { type: 'turn_start' } },
        { send: { type: 'token', text: 'half' } },
        { read: 'interrupt' },
        { send: { type: 'cancelled' } },
        { read: 'user_input' },
        { send: { type: 'turn_start' } },
        { send: { type: 'token', text: 'final answer' } },
        { send: { type: 'message_end' } },
        ...END,
      ],
      { task: 'go', keepAlive: true },
    );
    await s.waitEvent(turnStarted);
    expect((await s.run.finalize('wrap up now')).status).toBe('accepted');
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'done', finalText: 'final answer', turns: 2 });
    expect(s.received()).toEqual([{ type: 'user_input', text: 'go' }, { type: 'interrupt' }, { type: 'user_input', text: 'wrap up now' }]);
  });

  it('an error turn ends the run failed with fuseraft\'s error', async () => {
    const s = start([{ send: READY }, { read: 'user_input' }, { send: { type: 'turn_start' } }, { send: { type: 'error', text: 'provider down' } }, ...END], {
      task: 'go',
    });
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'failed', error: 'provider down', errorCode: 'child-error' });
  });

  it('refuses another protocol version: failed, version-mismatch, reaped', async () => {
    const s = start([{ send: { ...READY, protocolVersion: 2 } }, { sleep: 60_000 }], { task: 'go' });
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'version-mismatch', rejectedLines: 1 });
    expect(s.events.find(isType('rejected'))).toMatchObject({ code: 'version-mismatch', fatal: true });
  });

  it('counts noise lines and overlong lines as rejections and goes on', async () => {
    const s = start(
      [
        { raw: 'fuseraft v9 starting' },
        { send: READY },
        { read: 'user_input' },
        { send: { type: 'turn_start' } },
        { raw: '/model gpt' },
        { big: 5000, type: 'token' },
        { send: { type: 'token', text: 'ok' } },
        { send: { type: 'message_end' } },
        ...END,
      ],
      { task: 'go', maxFrameBytes: 4096 },
    );
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'done', finalText: 'ok', rejectedLines: 3 });
    expect(s.events.filter(isType('rejected')).map((event) => event.code)).toEqual(['malformed', 'malformed', 'too-large']);
  });

  it('a crash mid-turn is failed, no-exit-event', async () => {
    const s = start([{ send: READY }, { read: 'user_input' }, { send: { type: 'turn_start' } }, { send: { type: 'token', text: 'par' } }, { kill: 'SIGKILL' }], {
      task: 'go',
    });
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'no-exit-event', signal: 'SIGKILL' });
    expect(outcome.finalText).toBeUndefined();
  });

  it('a stubborn child with a grandchild is killed, the whole tree reaped', async () => {
    const s = start(
      [{ send: READY }, { grandchild: true }, { ignore: ['SIGINT', 'SIGTERM'] }, { read: 'user_input' }, { send: { type: 'turn_start' } }, { sleep: 120_000 }],
      { task: 'go' },
    );
    await s.waitEvent(turnStarted);
    const grandchild = [...s.pids].find((pid) => pid !== s.run.pid);
    expect(grandchild).toBeDefined();
    void s.run.cancel();
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'cancelled', killed: true, escalated: true });
    expect(alivePids([grandchild!])).toEqual([]);
  });

  it('a child that lingers after session_end is reaped; its own verdict stands', async () => {
    const s = start(
      [{ send: READY }, { read: 'user_input' }, { send: { type: 'turn_start' } }, { send: { type: 'token', text: 'A' } }, { send: { type: 'message_end' } }, { eof: true }, { send: { type: 'session_end' } }, { sleep: 120_000 }],
      { task: 'go' },
    );
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'done', finalText: 'A', killed: true });
  });

  it('a child that finishes its turn but ignores end of input, SIGINT and SIGTERM (a setsid grandchild too) gets the whole ladder', async () => {
    const s = start(
      [
        { send: READY },
        { grandchild: 'setsid' },
        { ignore: ['SIGINT', 'SIGTERM'] },
        { read: 'user_input' },
        { send: { type: 'turn_start' } },
        { send: { type: 'token', text: 'A' } },
        { send: { type: 'message_end' } },
        { eof: true },
        { sleep: 120_000 },
      ],
      { task: 'go', killGraceMs: 300 },
    );
    const kills: string[] = [];
    s.run.on('kill', (step) => kills.push(step.signal));
    const outcome = await s.finish();
    expect(kills).toEqual(['SIGTERM', 'SIGKILL']);
    // Like a Fen child that never wrote its exit: the child never said how it ended (no session_end).
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'no-exit-event', signal: 'SIGKILL', killed: true, escalated: true });
    expect(s.events.at(-1)).toMatchObject({ type: 'exit', status: 'failed', synthetic: true });
  });

  it('a child that never says ready is failed, ready-timeout', async () => {
    const s = start([{ sleep: 120_000 }], { task: 'go', readyTimeoutMs: 300 });
    expect(await s.finish()).toMatchObject({ status: 'failed', errorCode: 'ready-timeout', killed: true });
  });

  it('backpressure: a slow consumer still gets every event, in order', async () => {
    const tokens = Array.from({ length: 2000 }, (_, i) => ({ send: { type: 'token', text: `${i},` } }));
    const s = start([{ send: READY }, { read: 'user_input' }, { send: { type: 'turn_start' } }, ...tokens, { send: { type: 'message_end' } }, ...END], {
      task: 'go',
      highWaterMark: 8,
    });
    const deltas: string[] = [];
    for await (const event of s.run) {
      if (event.type === 'assistant-text-delta') deltas.push(event.delta ?? '');
      if (deltas.length % 100 === 1) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const outcome = await s.finish();
    expect(deltas).toHaveLength(2000);
    expect(outcome.finalText).toBe(deltas.join(''));
    expect(deltas[1999]).toBe('1999,');
  });

  it('keepAlive: a multi-turn chat, closed by the caller', async () => {
    const s = start(
      [
        { send: READY },
        { read: 'user_input' },
        { send: { type: 'turn_start' } },
        { send: { type: 'token', text: 'first' } },
        { send: { type: 'message_end', inputTokens: 1 } },
        { read: 'user_input' },
        { send: { type: 'turn_start' } },
        { send: { type: 'token', text: 'second' } },
        { send: { type: 'message_end', inputTokens: 2 } },
        ...END,
      ],
      { task: 'one', keepAlive: true },
    );
    await s.waitEvent((event) => event.type === 'turn-complete' && event.turn === 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(s.run.state).toBe('ready');
    expect((await s.run.prompt('two')).status).toBe('accepted');
    await s.waitEvent((event) => event.type === 'turn-complete' && event.turn === 2);
    expect((await s.run.close()).status).toBe('accepted');
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'done', finalText: 'second', turns: 2, usage: { inputTokens: 3 } });
  });
});

describe("protocol 'fuseraft-bridge' (run --bridge)", () => {
  const message = (agentName: string, content: string) => ({
    type: 'agent_message',
    elapsedMs: 3,
    message: { agentName, role: 'assistant', content, turnIndex: 0, timestamp: '2026-01-01T00:00:00Z', inputTokens: 5, outputTokens: 1, isCompactionSummary: false, toolCalls: [] },
  });

  it('succeeds with the last agent message as the answer; the task is the last argument', async () => {
    const s = start(
      [
        { send: BRIDGE_READY },
        { argv: true },
        { send: { type: 'agent_starting', agent: 'Dev' } },
        { send: message('Dev', 'shipped') },
        { send: message('Orchestrator', 'correction') },
        { send: { type: 'result', sessionId: 'b1', task: 't', config: 'c', succeeded: true, errorMessage: null, exitCode: 0, turns: 2, elapsedSeconds: 1, inputTokens: 10, outputTokens: 2 } },
        { exit: 0 },
      ],
      { protocol: 'fuseraft-bridge', args: [SCRIPT, 'run', '--bridge', '-c', 'c.yaml'], task: 'ship it' },
    );
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'done', finalText: 'shipped', turns: 2, usage: { inputTokens: 10, outputTokens: 2 } });
    expect(s.events.find((event) => event.type === 'info' && event.nativeType === 'argv')).toMatchObject({ extra: { argv: ['run', '--bridge', '-c', 'c.yaml', 'ship it'] } });
  });

  it('fails with fuseraft\'s error message; rejects turn controls', async () => {
    const s = start(
      [{ send: BRIDGE_READY }, { sleep: 300 }, { send: { type: 'result', sessionId: 'b1', succeeded: false, errorMessage: 'boom', exitCode: 1, turns: 0, inputTokens: 0, outputTokens: 0 } }, { exit: 1 }],
      { protocol: 'fuseraft-bridge', task: 'x' },
    );
    await s.waitEvent(isType('ready'));
    expect(await s.run.prompt('more')).toMatchObject({ status: 'rejected' });
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'failed', error: 'boom', errorCode: 'child-error', exitCode: 1 });
  });

  it('cancel denies the pending approval, interrupts, and ends cancelled', async () => {
    const s = start(
      [
        { send: BRIDGE_READY },
        { send: { type: 'agent_starting', agent: 'Dev' } },
        { send: { type: 'approval_request', kind: 'tool_action', plugin: 'git', action: 'push', detail: 'main' } },
        { read: 'approval_response' },
        { read: 'interrupt' },
        { send: { type: 'result', sessionId: 'b1', succeeded: false, errorMessage: 'cancelled', exitCode: 1, turns: 0, inputTokens: null, outputTokens: null } },
        { exit: 1 },
      ],
      { protocol: 'fuseraft-bridge', task: 'x', approve: () => new Promise(() => undefined) },
    );
    await s.waitEvent((event) => event.type === 'info' && event.nativeType === 'approval_request');
    expect((await s.run.cancel()).status).toBe('accepted');
    const outcome = await s.finish();
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(s.received()).toEqual([{ type: 'approval_response', approved: false }, { type: 'interrupt' }]);
  });
});
