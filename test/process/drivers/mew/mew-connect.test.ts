// connectRun({ protocol: 'mew' }) against the fake mew daemon over real WebSockets: outcomes, controls, faults, nothing left open.
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connectRun } from '../../../../src/api/connect-run.js';
import type { ConnectOptions, Run, RunEvent } from '../../../../src/api/types.js';
import { fakeMewDaemon } from '../../../../src/testing/mew/server.js';
import type { FakeMewDaemonServer } from '../../../../src/testing/mew/server.js';
import type { MewBuiltinScenarioName } from '../../../../src/testing/mew/builtins.js';
import type { MewDaemonScenario } from '../../../../src/testing/mew/scenario.js';

const daemons: FakeMewDaemonServer[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((daemon) => daemon.close()));
});

async function daemon(scenario: MewDaemonScenario | MewBuiltinScenarioName): Promise<FakeMewDaemonServer> {
  const started = await fakeMewDaemon(scenario);
  daemons.push(started);
  return started;
}

function run(fake: FakeMewDaemonServer, options: Omit<ConnectOptions, 'protocol' | 'url'> = {}): Run {
  return connectRun({ protocol: 'mew', url: fake.url, pingIntervalMs: 200, pongTimeoutMs: 500, killGraceMs: 500, ...options });
}

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const all: RunEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

/** The daemon saw every connection of the run close (a close travels a moment after the outcome). */
async function allClosed(fake: FakeMewDaemonServer): Promise<void> {
  const start = Date.now();
  while (fake.openConnections() > 0) {
    if (Date.now() - start > 5000) throw new Error(`${fake.openConnections()} connection(s) still open`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const until = (target: Run, check: (event: RunEvent) => boolean) => new Promise<void>((resolve) => target.on('event', (event) => check(event) && resolve()));

describe('connectRun mew: scenarios', () => {
  it('a task ends done with the answer, usage and cost summed; the daemon saw ping, new_session {cwd}, submit_prompt', async () => {
    const fake = await daemon('chat');
    const handle = run(fake, { task: 'Summarise the README', cwd: '/work/project' });
    const [events, outcome] = await Promise.all([collect(handle), handle.outcome]);
    expect(outcome).toMatchObject({ status: 'done', finalText: 'The README describes subvisor.', turns: 1, exitCode: null, signal: null, outputTail: '' });
    expect(outcome.usage).toMatchObject({ inputTokens: 100, outputTokens: 8, costUsd: 0.001 });
    expect(await handle.taskAck).toMatchObject({ status: 'accepted' });
    expect(new Set(events.map((event) => event.type))).toEqual(new Set(['ready', 'info', 'turn-started', 'assistant-thinking-delta', 'tool-call', 'tool-result', 'assistant-text-delta', 'llm-end', 'turn-complete', 'result', 'exit']));
    expect(fake.receivedOf('new_session')[0]!.message).toEqual({ type: 'new_session', cwd: '/work/project' });
    expect(fake.receivedOf('submit_prompt')[0]!.message).toMatchObject({ text: 'Summarise the README', attachments: [], request_id: expect.stringMatching(/^subvisor-/) });
    await allClosed(fake);
  });

  it('attaches to an existing session with sessionId and submits the task there', async () => {
    const fake = await daemon('two-turns');
    const first = run(fake, { task: 'one' });
    const sessionId = (await collect(first)).find((event) => event.type === 'ready')!.extra?.['session_id'] as string;
    const second = run(fake, { task: 'two', sessionId });
    expect(await second.outcome).toMatchObject({ status: 'done', finalText: 'second answer' });
    expect(fake.receivedOf('attach_session')[0]!.message).toEqual({ type: 'attach_session', session_id: sessionId });
  });

  it('reasoning parts (streamed like text by mew) never reach the answer, also for a client that attaches mid-turn', async () => {
    const fake = await daemon({ turns: [{ steps: [{ thinking: 'Considering the files. Still considering.', chunks: 4, ms: 150 }, { text: 'The answer is 42.' }] }] });
    const first = run(fake, { task: 'What is the answer?' });
    const sessionId = await new Promise<string>((resolve) => first.on('event', (event) => event.type === 'ready' && resolve(event.extra?.['session_id'] as string)));
    await until(first, (event) => event.type === 'assistant-thinking-delta' || event.type === 'assistant-text-delta');
    // Attached while the reasoning part streams: its part_start and the history's copy of it came before.
    const second = run(fake, { sessionId, keepAlive: true });
    const secondEvents: RunEvent[] = [];
    second.on('event', (event) => void secondEvents.push(event));
    await until(second, (event) => event.type === 'turn-complete');
    await second.close();
    expect(await first.outcome).toMatchObject({ status: 'done', finalText: 'The answer is 42.' });
    expect(await second.outcome).toMatchObject({ status: 'done', finalText: 'The answer is 42.' });
    expect(secondEvents.filter((event) => event.type === 'assistant-text-delta').map((event) => (event as { delta: string }).delta)).toEqual(['The answer is 42.']);
    await allClosed(fake);
  });

  it('PascalCase: a daemon that spells its tags PascalCase is understood; mewTagCase makes the client write them so', async () => {
    const fake = await daemon('pascal-case');
    const outcome = await run(fake, { task: 'hi', mewTagCase: 'PascalCase' }).outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'Pascal says hi.' });
    expect(fake.received.map((entry) => entry.message['type'])).toEqual(expect.arrayContaining(['Ping', 'NewSession', 'SubmitPrompt']));
  });

  it('keepAlive: steer mid-turn is rejected, a follow-up becomes the next turn; the answer is the last turn\'s', async () => {
    const fake = await daemon('two-turns');
    const handle = run(fake, { task: 'first', keepAlive: true });
    const secondDone = until(handle, (event) => event.type === 'turn-complete' && event.turn === 2);
    await until(handle, (event) => event.type === 'assistant-text-delta');
    const steer = await handle.steer('faster');
    expect(steer).toMatchObject({ status: 'rejected', reason: expect.stringMatching(/mew has no mid-turn steering/) });
    const follow = await handle.followUp('then this');
    expect(follow.status).toBe('accepted');
    expect(await follow.delivery).toBe('injected');
    await secondDone;
    await handle.close();
    expect(await handle.outcome).toMatchObject({ status: 'done', finalText: 'second answer', turns: 2 });
    expect(fake.receivedOf('submit_prompt').map((entry) => entry.message['text'])).toEqual(['first', 'then this']);
    await allClosed(fake);
  });

  it('permissions: denied by default (one permission_response), approve allows; request_resolved elsewhere gets no response', async () => {
    const denied = await daemon('permission');
    await run(denied, { task: 't' }).outcome;
    expect(denied.receivedOf('permission_response').map((entry) => entry.message)).toEqual([{ type: 'permission_response', request_id: 'perm_1_1', decision: 'deny' }]);
    const allowed = await daemon('permission');
    const seen: unknown[] = [];
    await run(allowed, { task: 't', approve: (request) => (seen.push(request), true) }).outcome;
    expect(allowed.receivedOf('permission_response')[0]!.message['decision']).toBe('allow_once');
    expect(seen[0]).toMatchObject({ protocol: 'mew', kind: 'tool_permission', known: true, toolName: 'bash', input: { command: 'ls' } });
    const other = await daemon('resolved-by-other');
    const outcome = await run(other, { task: 't', approve: () => new Promise<boolean>(() => undefined) }).outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'resolved elsewhere' });
    expect(other.receivedOf('permission_response')).toEqual([]);
  });

  it('a daemon whose request ids are integers (u64) gets its answers with the same numbers; the run ends as it should', async () => {
    const steps = [{ permission: 'bash', input: { command: 'ls' } }, { ask: ['Which file?'] }, { text: ' and done' }];
    const fake = await daemon({ requestIds: 'integer', turns: [{ steps }] });
    const seen: unknown[] = [];
    const handle = run(fake, { task: 't', timeoutMs: 5000, approve: (request) => (seen.push(request), true), answerQuestion: () => 'src/index.ts' });
    expect(await handle.outcome).toMatchObject({ status: 'done', finalText: 'src/index.ts and done' });
    expect(seen[0]).toMatchObject({ kind: 'tool_permission', known: true, requestId: '1', toolName: 'bash' });
    expect(fake.receivedOf('permission_response').map((entry) => entry.message)).toEqual([{ type: 'permission_response', request_id: 1, decision: 'allow_once' }]);
    expect(fake.receivedOf('ask_user_response').map((entry) => entry.message)).toEqual([{ type: 'ask_user_response', request_id: 2, answers: ['src/index.ts'], cancelled: false }]);
    const denied = await daemon({ requestIds: 'integer', turns: [{ steps }] });
    expect(await run(denied, { task: 't', timeoutMs: 5000 }).outcome).toMatchObject({ status: 'done', finalText: '(no answer) and done' });
    expect(denied.receivedOf('permission_response').map((entry) => entry.message)).toEqual([{ type: 'permission_response', request_id: 1, decision: 'deny' }]);
  });

  it('a request id past 2^53 (JSON.parse rounds it) is never answered with another id: the run fails request-unanswered', async () => {
    const unsafe = '{"type":"permission_request","request_id":18446744073709551615,"tool_name":"bash","input":{}}';
    const fake = await daemon({ requestIds: 'integer', turns: [{ steps: [{ raw: unsafe }, { pause: 10_000 }, { text: 'never' }] }] });
    const handle = run(fake, { task: 't', timeoutMs: 5000, requestTimeoutMs: 300, approve: () => true });
    const [events, outcome] = await Promise.all([collect(handle), handle.outcome]);
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'request-unanswered' });
    expect(outcome.error).toMatch(/permission_request/);
    expect(events).toContainEqual(expect.objectContaining({ type: 'info', nativeType: 'permission_request', summary: expect.stringMatching(/cannot be answered/) }));
    expect(fake.receivedOf('permission_response')).toEqual([]);
    expect(fake.receivedOf('cancel')).toHaveLength(1);
    await allClosed(fake);
  });

  it('ask_user_request is answered cancelled without answerQuestion, and with its answers when given', async () => {
    const plain = await daemon('ask');
    expect(await run(plain, { task: 't' }).outcome).toMatchObject({ finalText: '(no answer)' });
    expect(plain.receivedOf('ask_user_response')[0]!.message).toMatchObject({ answers: [], cancelled: true });
    const answered = await daemon('ask');
    expect(await run(answered, { task: 't', answerQuestion: () => 'src/index.ts' }).outcome).toMatchObject({ finalText: 'src/index.ts' });
  });

  it('the blocking requests of newer builds are denied as mew defines by default, or go to approve; nothing hangs', async () => {
    const denied = await daemon('newer-requests');
    expect(await run(denied, { task: 't', timeoutMs: 5000 }).outcome).toMatchObject({
      status: 'done',
      finalText: 'access to /etc/hosts denied. subagent bash denied. plan not approved. goal rejected. ',
    });
    expect([...denied.receivedOf('permission_response'), ...denied.receivedOf('plan_approval_response'), ...denied.receivedOf('goal_response')].map((entry) => entry.message)).toEqual([
      { type: 'permission_response', request_id: 'workspace_1_1', decision: 'deny' },
      { type: 'permission_response', request_id: 'subagent_1_2', decision: 'deny' },
      { type: 'plan_approval_response', request_id: 'plan_1_3', approved: false },
      { type: 'goal_response', request_id: 'goal_1_4', accepted: false },
    ]);
    const approved = await daemon('newer-requests');
    const kinds: string[] = [];
    const outcome = await run(approved, { task: 't', timeoutMs: 5000, approve: (request) => (kinds.push(request.kind), request.known) }).outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'access to /etc/hosts allowed. subagent bash allowed. plan approved. goal accepted. ' });
    expect(kinds).toEqual(['workspace_permission', 'subagent_permission', 'plan_approval', 'goal_proposal']);
  });

  it('a request of a kind subvisor cannot answer is surfaced, and fails the run request-unanswered unless another client settles it in time', async () => {
    const fake = await daemon('unknown-request');
    const handle = run(fake, { task: 't', timeoutMs: 5000, requestTimeoutMs: 300, approve: () => 'approve-unknown-kind' });
    const [events, outcome] = await Promise.all([collect(handle), handle.outcome]);
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'request-unanswered', error: expect.stringMatching(/hologram_request/) });
    expect(events).toContainEqual(expect.objectContaining({ type: 'info', nativeType: 'hologram_request', summary: expect.stringMatching(/cannot be answered/) }));
    expect(fake.receivedOf('cancel')).toHaveLength(1);
    const settled = await daemon({ turns: [{ steps: [{ blockingRequest: 'hologram_request', resolvedByOther: 100 }, { text: 'settled elsewhere' }] }] });
    expect(await run(settled, { task: 't', timeoutMs: 5000, requestTimeoutMs: 2000 }).outcome).toMatchObject({ status: 'done', finalText: 'settled elsewhere' });
    await allClosed(fake);
  });

  it('a failed turn and a rejected submission end the run failed with mew\'s message', async () => {
    const failed = await daemon('failed-turn');
    expect(await run(failed, { task: 't' }).outcome).toMatchObject({ status: 'failed', error: 'the provider returned 500', errorCode: 'child-error' });
    const rejected = await daemon('rejected');
    const handle = run(rejected, { task: 't' });
    expect(await handle.taskAck).toMatchObject({ status: 'rejected', reason: 'mew rejected the prompt: the session is read-only' });
    expect(await handle.outcome).toMatchObject({ status: 'failed', error: 'mew rejected the prompt: the session is read-only' });
  });
});

describe('connectRun mew: other sessions of the daemon', () => {
  it("notices, usage and alerts of another session mid-turn neither end this run's turn nor count into its usage", async () => {
    const others = (['idle', 'usage', 'turn_complete', 'turn_failed'] as const).map((what) => ({ otherSession: what }));
    const fake = await daemon({ turns: [{ steps: [{ text: 'The answer is 42' }, ...others, { pause: 50 }, { text: '.' }], usage: { input: 10, output: 4 }, cost: 0.002 }] });
    const handle = run(fake, { task: 'What is the answer?' });
    const [events, outcome] = await Promise.all([collect(handle), handle.outcome]);
    expect(outcome).toMatchObject({ status: 'done', finalText: 'The answer is 42.', turns: 1 });
    expect(outcome.usage).toEqual({ inputTokens: 10, outputTokens: 4, costUsd: 0.002 });
    expect(events.filter((event) => event.type === 'turn-complete')).toHaveLength(1);
    // Each is still shown, as a notice of the other session.
    const foreign = events.filter((event) => event.type === 'info' && event.extra?.['session_id'] === `${outcome.sessionId!}_other`);
    expect(foreign.map((event) => (event as { nativeType?: string }).nativeType)).toEqual(['session_activity_changed', 'session_usage_changed', 'session_alert', 'session_alert']);
    await allClosed(fake);
  });
});

describe('connectRun mew: faults and ends', () => {
  it('connection refused fails at once with connection-refused', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise((resolve) => server.close(resolve));
    const started = Date.now();
    const outcome = await connectRun({ protocol: 'mew', url: `ws://127.0.0.1:${port}`, task: 't' }).outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'connection-refused' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('a connection dropped mid-turn fails connection-lost; a daemon that stops answering pings fails no-pong', async () => {
    const dropped = await daemon('drop-mid-turn');
    const a = await run(dropped, { task: 't' }).outcome;
    expect(a).toMatchObject({ status: 'failed', errorCode: 'connection-lost' });
    expect(a.error).toMatch(/during turn 1/);
    const hung = await daemon('no-pong');
    const b = await run(hung, { task: 't' }).outcome;
    expect(b).toMatchObject({ status: 'failed', errorCode: 'no-pong' });
    await allClosed(dropped);
    await allClosed(hung);
  });

  it('attaching to a session the daemon does not know fails unknown-session promptly', async () => {
    const fake = await daemon('chat');
    const started = Date.now();
    const outcome = await connectRun({ protocol: 'mew', url: fake.url, sessionId: 'nope', task: 't', timeoutMs: 5000, killGraceMs: 500 }).outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'unknown-session', error: 'mew could not attach session nope: session not found' });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(fake.receivedOf('submit_prompt')).toEqual([]);
    await allClosed(fake);
  });

  it('an old daemon (wire revision 2) is refused with version-mismatch before the task is sent', async () => {
    const fake = await daemon('old-protocol');
    const outcome = await run(fake, { task: 't' }).outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'version-mismatch' });
    expect(outcome.error).toBe('the mew daemon "0.3.0" speaks wire revision 2; subvisor needs revision 3 or later (acknowledged submit_prompt with receipts): upgrade mew');
    expect(fake.receivedOf('submit_prompt')).toEqual([]);
    await allClosed(fake);
  });

  it('malformed and unknown-type messages are reported (rejected, passthrough) and the run still ends done', async () => {
    const malformed = await daemon('malformed');
    const handle = run(malformed, { task: 't' });
    const [events, outcome] = await Promise.all([collect(handle), handle.outcome]);
    expect(outcome).toMatchObject({ status: 'done', finalText: 'still here', rejectedLines: 1 });
    expect(events.find((event) => event.type === 'rejected')).toMatchObject({ code: 'malformed', fatal: false });
    const unknown = await daemon('unknown-type');
    const other = run(unknown, { task: 't' });
    const [otherEvents, otherOutcome] = await Promise.all([collect(other), other.outcome]);
    expect(otherOutcome).toMatchObject({ status: 'done', finalText: 'still here' });
    expect(otherEvents.find((event) => event.type === 'passthrough')).toMatchObject({ protocol: 'mew', frame: { type: 'hologram_update', frames: 3 } });
  });

  it('a receipt lost across a reconnect is read back with read_prompt_receipt and never re-sent', async () => {
    for (const [name, status] of [['receipt-lost', 'failed'], ['receipt-unknown', 'failed'], ['receipt-accepted-unseen', 'failed']] as const) {
      const fake = await daemon(name);
      const handle = run(fake, { task: 't' });
      const outcome = await handle.outcome;
      expect(outcome.status).toBe(status);
      expect(fake.receivedOf('submit_prompt')).toHaveLength(1);
      expect(fake.receivedOf('attach_session')).toHaveLength(1);
      expect(fake.receivedOf('read_prompt_receipt')).toHaveLength(1);
      if (name === 'receipt-lost') expect(await handle.taskAck).toMatchObject({ status: 'rejected', reason: 'mew rejected the prompt: the session was busy' });
      if (name === 'receipt-accepted-unseen') expect(outcome.errorCode).toBe('connection-lost');
      await allClosed(fake);
    }
  });

  it('cancel(), terminate(), the signal and timeoutMs end a run mid-turn promptly; the daemon gets cancel; nothing stays open', async () => {
    const fake = await daemon('slow');
    const cancelled = run(fake, { task: 't' });
    await until(cancelled, (event) => event.type === 'assistant-text-delta');
    expect((await cancelled.cancel()).status).toBe('accepted');
    expect(await cancelled.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    const terminated = run(fake, { task: 't' });
    await until(terminated, (event) => event.type === 'assistant-text-delta');
    expect(await terminated.terminate()).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    const controller = new AbortController();
    const aborted = run(fake, { task: 't', signal: controller.signal });
    await until(aborted, (event) => event.type === 'assistant-text-delta');
    controller.abort();
    expect(await aborted.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    const started = Date.now();
    expect(await run(fake, { task: 't', timeoutMs: 400 }).outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline' });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(fake.receivedOf('cancel').length).toBeGreaterThanOrEqual(3);
    await allClosed(fake);
  });
});
