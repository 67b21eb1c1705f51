// connectRun over fuseraft serve against the fake daemon: handshake, hello checks, tasks, approvals, re-attach, every fault, nothing left open, no token leaked.
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connectRun } from '../../../../src/index.js';
import type { ConnectOptions, Outcome, Run, RunEvent } from '../../../../src/index.js';
import { fakeFuseraftServe } from '../../../../src/testing/index.js';
import type { FakeFuseraftServe, ServeBuiltinName, ServeScenario } from '../../../../src/testing/index.js';

const TOKEN = 'tok-Z9q-very-secret-0042';
const daemons: FakeFuseraftServe[] = [];
afterEach(async () => {
  for (const daemon of daemons.splice(0)) await daemon.close();
});

async function daemonOf(scenario: ServeScenario | ServeBuiltinName = 'echo', options: { token?: string; unixSocket?: boolean } = {}) {
  const daemon = await fakeFuseraftServe(scenario, options);
  daemons.push(daemon);
  return daemon;
}

interface Seen {
  events: RunEvent[];
  outcome: Outcome;
}

async function finish(run: Run): Promise<Seen> {
  const events: RunEvent[] = [];
  for await (const event of run) events.push(event);
  return { events, outcome: await run.outcome };
}

function start(daemon: FakeFuseraftServe, options: Partial<ConnectOptions> = {}): Run {
  return connectRun({ protocol: 'fuseraft-serve', url: daemon.url!, readyTimeoutMs: 20_000, ...options } as ConnectOptions);
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const types = (events: RunEvent[]) => events.map((event) => event.type);
/** A field of an event that no RunEvent type names (extras such as `nativeType`). */
const field = (event: RunEvent, name: string): unknown => (event as unknown as Record<string, unknown>)[name];
const sentTypes = (daemon: FakeFuseraftServe) =>
  daemon.received.map(({ message }) => (typeof message === 'object' && message !== null && !Array.isArray(message) ? message['type'] : message));

describe('fuseraft serve: a task to its result', () => {
  it('echo over the WebSocket: headers, hello, queued as the Ack, the result as the answer, then nothing open', async () => {
    const daemon = await daemonOf('echo', { token: TOKEN });
    const run = start(daemon, { token: TOKEN, clientId: 'ci-1', task: 'hello there' });
    const { events, outcome } = await finish(run);
    expect(outcome).toMatchObject({ status: 'done', finalText: 'echo: hello there', turns: 1, stopReason: 'end_turn', exitCode: null, signal: null, outputTail: '', rejectedLines: 0 });
    expect(outcome.errorCode).toBeUndefined();
    expect(run.pid).toBeUndefined();
    expect((await run.taskAck)?.status).toBe('accepted');
    expect(types(events)).toEqual(['ready', 'turn-started', 'assistant-text', 'turn-complete', 'result', 'exit']);
    expect(events[1]).toMatchObject({ sessionId: 'sess-1', position: 0 });
    expect(events.at(-1)).toMatchObject({ status: 'done', synthetic: true });
    expect(daemon.handshakes[0]).toMatchObject({ authorization: `Bearer ${TOKEN}`, 'fuseraft-client-id': 'ci-1' });
    expect(daemon.handshakes[0]).not.toHaveProperty('origin');
    expect(daemon.received.map(({ message }) => message)).toEqual([{ type: 'user_input', text: 'hello there' }]);
    await waitFor(() => daemon.connections === 0, 'the connection to close');
  });

  it('sends no Authorization and no client id header when none is given', async () => {
    const daemon = await daemonOf();
    const { outcome } = await finish(start(daemon, { task: 'plain' }));
    expect(outcome.status).toBe('done');
    expect(daemon.handshakes[0]).not.toHaveProperty('authorization');
    expect(daemon.handshakes[0]).not.toHaveProperty('fuseraft-client-id');
  });

  it('works the same over the Unix socket', async () => {
    const daemon = await daemonOf('echo', { unixSocket: true });
    const run = connectRun({ protocol: 'fuseraft-serve', socketPath: daemon.socketPath!, task: 'over the socket' });
    const { outcome } = await finish(run);
    expect(outcome).toMatchObject({ status: 'done', finalText: 'echo: over the socket' });
    await waitFor(() => daemon.connections === 0, 'the connection to close');
  });

  it('surfaces progress events (broadcast by the daemon) as tool-call and info events', async () => {
    const daemon = await daemonOf('progress');
    const { events, outcome } = await finish(start(daemon, { task: 'read it' }));
    expect(outcome.finalText).toBe('The README describes subvisor.');
    expect(events.find((event) => event.type === 'tool-call')).toMatchObject({ name: 'read_file', agent: 'Coder', summary: 'path=README.md' });
    const natives = events.filter((event) => event.type === 'info').map((event) => field(event, 'nativeType'));
    expect(natives).toEqual(expect.arrayContaining(['agent_starting', 'token_budget_warning', 'task_resumed']));
  });

  it('a failed task fails the run with the daemon\'s errorMessage', async () => {
    const daemon = await daemonOf('failing');
    const { outcome } = await finish(start(daemon, { task: 'try' }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'child-error', error: 'the model provider is down', stopReason: 'error' });
  });

  it('keepAlive: one task at a time, a second prompt after the first result, close() ends done', async () => {
    const daemon = await daemonOf({ tasks: [{ approvals: [{ kind: 'shell_command', command: 'ls' }] }, {}] });
    let approveNow!: (answer: boolean) => void;
    const run = start(daemon, { keepAlive: true, task: 'one', approve: () => new Promise<boolean>((resolve) => (approveNow = resolve)) });
    const seen = finish(run);
    await waitFor(() => approveNow !== undefined, 'the approval request');
    expect(run.state).toBe('running');
    expect(await run.prompt('too soon')).toMatchObject({ status: 'rejected', reason: expect.stringContaining('one task of a client at a time') });
    approveNow(true);
    await waitFor(() => run.state === 'ready', 'the first result');
    expect((await run.prompt('two')).status).toBe('accepted');
    expect(await run.steer('mid-task').catch((error: Error) => error.message)).toMatchObject({ status: 'rejected' });
    await waitFor(() => run.state === 'ready', 'the second result');
    expect((await run.close()).status).toBe('accepted');
    const { outcome } = await seen;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'echo: two', turns: 2 });
    expect(sentTypes(daemon)).toEqual(['user_input', 'approval_response', 'user_input']);
  });
});

describe('fuseraft serve: approvals', () => {
  it('asks approve once per request and sends exactly one approval_response; approved', async () => {
    const daemon = await daemonOf('approval');
    const asked: unknown[] = [];
    const { outcome } = await finish(start(daemon, { task: 'test it', approve: (request) => (asked.push(request), true) }));
    expect(outcome).toMatchObject({ status: 'done', finalText: 'ran npm test' });
    expect(asked).toEqual([expect.objectContaining({ protocol: 'fuseraft-serve', kind: 'shell_command', known: true, command: 'npm test' })]);
    expect(daemon.approvalResponses).toEqual([{ type: 'approval_response', approved: true }]);
  });

  it('denies without a callback', async () => {
    const daemon = await daemonOf('approval');
    const { outcome } = await finish(start(daemon, { task: 'test it' }));
    expect(outcome).toMatchObject({ status: 'failed', error: 'denied: shell_command' });
    expect(daemon.approvalResponses).toEqual([{ type: 'approval_response', approved: false }]);
  });

  it('never approves an unknown kind on true; only the explicit opt-in approves it', async () => {
    const denied = await daemonOf({ misbehave: ['unknown-approval-kind'] });
    const { outcome, events } = await finish(start(denied, { task: 'launch', approve: () => true }));
    expect(outcome).toMatchObject({ status: 'failed', error: 'denied: launch_rocket' });
    expect(denied.approvalResponses).toEqual([{ type: 'approval_response', approved: false }]);
    expect(events.some((event) => field(event, 'decidedBy') === 'unknown-kind')).toBe(true);
    const allowed = await daemonOf({ misbehave: ['unknown-approval-kind'] });
    const second = await finish(start(allowed, { task: 'launch', approve: () => 'approve-unknown-kind' }));
    expect(second.outcome.status).toBe('done');
    expect(allowed.approvalResponses).toEqual([{ type: 'approval_response', approved: true }]);
  });
});

describe('fuseraft serve: faults', () => {
  it('connection refused: nothing listens', async () => {
    const daemon = await daemonOf();
    const url = daemon.url!;
    await daemon.close();
    const { outcome, events } = await finish(connectRun({ protocol: 'fuseraft-serve', url, task: 'x' }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'connection-refused' });
    expect(types(events)).toEqual(['exit']);
  });

  it('connection refused: a wrong token gets HTTP 401, and the error does not repeat the token', async () => {
    const daemon = await daemonOf('echo', { token: 'the-right-one' });
    const { outcome } = await finish(start(daemon, { token: TOKEN, task: 'x' }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'connection-refused' });
    expect(outcome.error).toContain('HTTP 401');
    expect(JSON.stringify(outcome)).not.toContain(TOKEN);
  });

  it('dropped mid-turn with a client id: re-attached, the result collected from pendingResults', async () => {
    const daemon = await daemonOf({ misbehave: ['drop-mid-turn'] });
    const { outcome, events } = await finish(start(daemon, { clientId: 'again', task: 'survive' }));
    expect(outcome).toMatchObject({ status: 'done', finalText: 'echo: survive' });
    expect(events.map((event) => field(event, 'nativeType')).filter(Boolean)).toEqual(expect.arrayContaining(['connection-lost', 'reattached']));
    expect(daemon.connectionsMade).toBe(2);
    expect(daemon.handshakes.map((headers) => headers['fuseraft-client-id'])).toEqual(['again', 'again']);
    expect(sentTypes(daemon)).toEqual(['user_input']);
  });

  it('dropped mid-turn with a hanging task and a client id: re-attached to the task in flight', async () => {
    const daemon = await daemonOf({ tasks: [{ hang: true }], misbehave: ['drop-mid-turn'] });
    const run = start(daemon, { clientId: 'again', task: 'long', killGraceMs: 5000 });
    const seen = finish(run);
    await waitFor(() => daemon.connectionsMade === 2 && daemon.connections === 1, 're-attach');
    await waitFor(() => run.state === 'running', 'running');
    expect((await run.cancel()).status).toBe('accepted');
    const { outcome } = await seen;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(sentTypes(daemon)).toEqual(['user_input', 'interrupt']);
  });

  it('dropped before queued: a task the daemon shows in flight with the same text is adopted, never re-sent', async () => {
    const daemon = await daemonOf({ tasks: [{ hang: true }], misbehave: ['drop-before-queued'] });
    const run = start(daemon, { clientId: 'unsure', task: 'maybe sent' });
    const seen = finish(run);
    await waitFor(() => run.state === 'running', 'the adopted task');
    expect((await run.taskAck)?.status).toBe('accepted');
    await run.cancel();
    const { outcome, events } = await seen;
    expect(outcome.status).toBe('cancelled');
    expect(events.find((event) => event.type === 'turn-started')).toMatchObject({ sessionId: 'sess-1' });
    expect(sentTypes(daemon)).toEqual(['user_input', 'interrupt']);
  });

  it('dropped before queued, and the daemon shows no such task: not re-sent, connection-lost', async () => {
    const daemon = await daemonOf({ misbehave: ['drop-before-queued'] });
    const run = start(daemon, { clientId: 'unsure', task: 'maybe sent' });
    const { outcome } = await finish(run);
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'connection-lost' });
    expect(outcome.error).toContain('not sent again');
    expect((await run.taskAck)?.status).toBe('rejected');
    expect(sentTypes(daemon)).toEqual(['user_input']);
  });

  it('dropped before an approval: asked on the new connection, exactly one approval_response', async () => {
    const daemon = await daemonOf({ tasks: [{ approvals: [{ kind: 'file_write', plugin: 'fs', action: 'write', path: 'a.txt', oldContent: null, newContent: 'x' }] }], misbehave: ['drop-mid-turn'] });
    let asked = 0;
    const { outcome } = await finish(start(daemon, { clientId: 'w', task: 'write', approve: () => (asked++, true) }));
    expect(outcome).toMatchObject({ status: 'done', finalText: 'echo: write' });
    expect(asked).toBe(1);
    expect(daemon.approvalResponses).toEqual([{ type: 'approval_response', approved: true }]);
    expect(daemon.connectionsMade).toBe(2);
  });

  it('dropped mid-turn without a client id: connection-lost, promptly', async () => {
    const daemon = await daemonOf({ misbehave: ['drop-mid-turn'] });
    const { outcome } = await finish(start(daemon, { task: 'lost' }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'connection-lost' });
    expect(daemon.connectionsMade).toBe(1);
  });

  it('a daemon that stops answering pings: no-pong', async () => {
    const daemon = await daemonOf({ tasks: [{ hang: true }], misbehave: ['no-pong'] });
    const { outcome } = await finish(start(daemon, { task: 'x', pingIntervalMs: 50, pongTimeoutMs: 300 }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'no-pong' });
    await waitFor(() => daemon.connections === 0, 'the drop');
  });

  it('a malformed message is rejected and counted; the run goes on', async () => {
    const daemon = await daemonOf({ misbehave: ['malformed'] });
    const { outcome, events } = await finish(start(daemon, { task: 'x' }));
    expect(outcome).toMatchObject({ status: 'done', rejectedLines: 1 });
    expect(events.find((event) => event.type === 'rejected')).toMatchObject({ code: 'malformed', fatal: false });
  });

  it('an unknown message type is a passthrough event carrying the message; the run goes on', async () => {
    const daemon = await daemonOf({ misbehave: ['unknown-type'] });
    const { outcome, events } = await finish(start(daemon, { task: 'x' }));
    expect(outcome).toMatchObject({ status: 'done', rejectedLines: 0 });
    expect(events.find((event) => event.type === 'passthrough')).toMatchObject({ protocol: 'fuseraft-serve', frame: { type: 'quantum_flux', level: 3 } });
  });

  it('another protocol version is fatal', async () => {
    const daemon = await daemonOf({ misbehave: ['wrong-version'] });
    const { outcome } = await finish(start(daemon, { task: 'x' }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'version-mismatch' });
    expect(sentTypes(daemon)).toEqual([]);
  });

  it('readOnly refuses the task clearly and sends nothing; without a task, prompts are rejected', async () => {
    const daemon = await daemonOf({ misbehave: ['read-only'] });
    const { outcome } = await finish(start(daemon, { task: 'x' }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'read-only' });
    expect(outcome.error).toContain('read-only');
    expect(sentTypes(daemon)).toEqual([]);
    const watcher = start(daemon, { keepAlive: true });
    await waitFor(() => watcher.state === 'ready', 'ready');
    expect(await watcher.prompt('y')).toMatchObject({ status: 'rejected', reason: expect.stringContaining('read-only') });
    await watcher.close();
    expect((await watcher.outcome).status).toBe('done');
  });

  it('a daemon that never says hello: ready-timeout', async () => {
    const daemon = await daemonOf({ misbehave: ['silent'] });
    const { outcome } = await finish(start(daemon, { task: 'x', readyTimeoutMs: 200 }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'ready-timeout' });
    await waitFor(() => daemon.connections === 0, 'the drop');
  });

  it('a server that accepts the TCP connection and never answers the upgrade: never done; timed-out past timeoutMs, ready-timeout without one; nothing left open', async () => {
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.resume(); // reads the upgrade request, answers nothing
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/attach`;
      const late = await finish(connectRun({ protocol: 'fuseraft-serve', url, task: 'x', timeoutMs: 1500 }));
      expect(late.outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline' });
      expect(late.events.at(-1)).toMatchObject({ type: 'exit', status: 'timed-out' });
      const slow = await finish(connectRun({ protocol: 'fuseraft-serve', url, task: 'x', readyTimeoutMs: 300 }));
      expect(slow.outcome).toMatchObject({ status: 'failed', errorCode: 'ready-timeout' });
      expect(slow.outcome.durationMs).toBeLessThan(20_000);
      await waitFor(() => sockets.size === 0, 'both sockets closed');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('timeoutMs: the task is interrupted and the connection dropped at once; timed-out', async () => {
    const daemon = await daemonOf('hang');
    const { outcome } = await finish(start(daemon, { task: 'x', timeoutMs: 1500, killGraceMs: 60_000 }));
    expect(outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline' });
    expect(outcome.durationMs).toBeLessThan(30_000);
    await waitFor(() => daemon.connections === 0, 'the drop');
    expect(sentTypes(daemon)).toEqual(['user_input', 'interrupt']);
  });

  it('the abort signal and terminate(): interrupt, the cancelled result, cancelled/aborted', async () => {
    const daemon = await daemonOf('hang');
    const controller = new AbortController();
    const run = start(daemon, { task: 'x', signal: controller.signal, clientId: 'a' });
    await waitFor(() => run.state === 'running', 'running');
    controller.abort();
    expect(await run.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    const other = start(daemon, { task: 'y', clientId: 'b' });
    await waitFor(() => other.state === 'running', 'running');
    expect(await other.terminate('enough')).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(sentTypes(daemon)).toEqual(['user_input', 'interrupt', 'user_input', 'interrupt']);
    await waitFor(() => daemon.connections === 0, 'the drops');
  });
});

describe('fuseraft serve: detach and resume', () => {
  it('close() detaches from a running task; connectRun({ resume }) re-attaches and can cancel it', async () => {
    const daemon = await daemonOf('hang');
    const first = start(daemon, { task: 'long job', clientId: 'me', keepAlive: true });
    await waitFor(() => first.state === 'running', 'running');
    await first.close();
    const detached = await first.outcome;
    expect(detached).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(detached.error).toContain("resume: 'sess-1'");
    await waitFor(() => daemon.connections === 0, 'the detach');
    const second = start(daemon, { resume: 'sess-1', clientId: 'me' });
    const seen = finish(second);
    await waitFor(() => second.state === 'running', 'running again');
    await second.cancel();
    const { outcome, events } = await seen;
    expect(outcome).toMatchObject({ status: 'cancelled', turns: 1 });
    expect(events.find((event) => event.type === 'turn-started')).toMatchObject({ sessionId: 'sess-1', resumed: true });
    expect(sentTypes(daemon)).toEqual(['user_input', 'interrupt']);
  });

  it('resume of a task the daemon does not have: unknown-session', async () => {
    const daemon = await daemonOf();
    const { outcome } = await finish(start(daemon, { resume: 'sess-404', clientId: 'me' }));
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'unknown-session' });
  });

  it('checks its options: client id format, token on a socket, resume without client id, cwd', () => {
    const base = { protocol: 'fuseraft-serve', url: 'ws://127.0.0.1:1/attach' } as const;
    expect(() => connectRun({ ...base, clientId: 'has space' })).toThrow(/1-64 characters/);
    expect(() => connectRun({ ...base, clientId: 'x'.repeat(65) })).toThrow(/1-64 characters/);
    expect(() => connectRun({ protocol: 'fuseraft-serve', socketPath: '/tmp/s.sock', token: TOKEN })).toThrow(/Unix socket takes no token/);
    expect(() => connectRun({ ...base, resume: 's' })).toThrow(/needs options.clientId/);
    expect(() => connectRun({ ...base, cwd: '/tmp' })).toThrow(/cwd does not apply/);
    let message = '';
    try {
      connectRun({ ...base, token: `${TOKEN} x` });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).not.toContain(TOKEN);
  });
});

describe('fuseraft serve: the token stays secret', () => {
  it('appears in no event, outcome, ack reason or error, whatever happens', async () => {
    const observed: string[] = [];
    const scenarios: Array<[ServeScenario | ServeBuiltinName, Partial<ConnectOptions>]> = [
      ['echo', {}],
      ['failing', {}],
      ['approval', { approve: () => true }],
      [{ misbehave: ['malformed', 'unknown-type'] }, {}],
      [{ misbehave: ['wrong-version'] }, {}],
      [{ misbehave: ['read-only'] }, {}],
      [{ misbehave: ['drop-mid-turn'] }, { clientId: 'c' }],
      [{ misbehave: ['refuse'] }, {}],
    ];
    for (const [scenario, extra] of scenarios) {
      const daemon = await daemonOf(scenario, { token: TOKEN });
      const run = start(daemon, { token: TOKEN, task: 'secret test', keepAlive: true, ...extra });
      run.on('ack', (ack) => observed.push(JSON.stringify(ack)));
      run.on('rejected', (event) => observed.push(JSON.stringify(event)));
      const events = finish(run);
      await waitFor(() => run.state !== 'starting' || run.ended, 'ready');
      await run.prompt('again').then((ack) => observed.push(JSON.stringify(ack)), (error: Error) => observed.push(error.message));
      await run.close().catch((error: Error) => observed.push(error.message));
      const { events: all, outcome } = await events;
      observed.push(JSON.stringify(all), JSON.stringify(outcome), String(outcome.error));
    }
    const { outcome } = await finish(connectRun({ protocol: 'fuseraft-serve', url: 'ws://127.0.0.1:1/attach', token: TOKEN, task: 'x' }));
    observed.push(JSON.stringify(outcome));
    expect(observed.join('\n')).not.toContain(TOKEN);
    expect(observed.join('\n')).not.toContain('Bearer');
  });
});
