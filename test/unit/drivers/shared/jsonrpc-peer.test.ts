// Unit tests of the shared JSON-RPC 2.0 peer: classification without throwing, correlation by id, dispatch by method, typed errors, bounds, close; end to end over a linked stdio pair.
import { describe, expect, it } from 'vitest';
import { classify } from '../../../../src/drivers/shared/jsonrpc/message.js';
import { JsonRpcPeer } from '../../../../src/drivers/shared/jsonrpc/peer.js';
import type { JsonRpcHandlers, RequestFailure, ResponseHandlers } from '../../../../src/drivers/shared/jsonrpc/peer.js';
import type { FrameRejection } from '../../../../src/drivers/shared/json-line.js';
import type { SetTimer } from '../../../../src/drivers/shared/pending-requests.js';
import { RequestDesk } from '../../../../src/drivers/shared/request-desk.js';
import { StdioChannel } from '../../../../src/drivers/shared/stdio/channel.js';
import { linkedStdio } from '../../../../src/testing/linked-stdio.js';
import type { JsonObject, JsonValue } from '../../../../src/wire/index.js';

/** A peer whose written messages and reports are recorded; `log` keeps everything in the order it happened. */
function peer(handlers: Partial<JsonRpcHandlers> = {}, options: { writeVersion?: boolean; setTimer?: SetTimer; firstId?: number; writable?: () => boolean } = {}) {
  const sent: JsonObject[] = [];
  const rejections: FrameRejection[] = [];
  const log: string[] = [];
  const made = new JsonRpcPeer(
    {
      send: (message) => {
        if (options.writable?.() === false) return { ok: false, reason: 'stdin closed' };
        sent.push(message);
        return { ok: true };
      },
      ...(options.writeVersion === undefined ? {} : { writeVersion: options.writeVersion }),
      ...(options.setTimer === undefined ? {} : { setTimer: options.setTimer }),
      ...(options.firstId === undefined ? {} : { firstId: options.firstId }),
    },
    {
      rejected: (rejection) => void (rejections.push(rejection), log.push(`rejected ${rejection.code}`)),
      notification: (method, params) => void log.push(`notification ${method} ${JSON.stringify(params)}`),
      ...handlers,
    },
  );
  const recorder = (name: string): ResponseHandlers => ({
    result: (value) => void log.push(`${name} result ${JSON.stringify(value)}`),
    failed: (failure) => void log.push(`${name} failed ${failure.kind}: ${failure.reason}`),
  });
  const line = (value: unknown) => made.receive(typeof value === 'string' ? value : JSON.stringify(value), 'stdout line 1');
  return { peer: made, sent, rejections, log, recorder, line };
}

describe('classify', () => {
  it('tells requests, notifications, responses and errors apart, with or without "jsonrpc"', () => {
    expect(classify({ jsonrpc: '2.0', id: 1, method: 'session/new', params: { cwd: '/' } }, 'l').message).toEqual({ kind: 'request', id: 1, method: 'session/new', params: { cwd: '/' } });
    expect(classify({ id: 0, method: 'item/commandExecution/requestApproval' }, 'l').message).toEqual({ kind: 'request', id: 0, method: 'item/commandExecution/requestApproval', params: undefined });
    expect(classify({ method: 'session/update', params: [1] }, 'l').message).toEqual({ kind: 'notification', method: 'session/update', params: [1] });
    expect(classify({ id: 'a', result: null }, 'l').message).toEqual({ kind: 'response', id: 'a', result: null });
    expect(classify({ id: 3, error: { code: 400, message: 'scripted failure', data: { x: 1 } } }, 'l').message).toEqual({ kind: 'error', id: 3, error: { code: 400, message: 'scripted failure', data: { x: 1 } } });
    expect(classify({ id: null, error: { code: -32700, message: 'Parse error' } }, 'l').message).toMatchObject({ kind: 'error', id: null });
  });

  it('says what is wrong, and which id can still be answered or failed', () => {
    const cases: Array<[JsonObject, string, object]> = [
      [{ jsonrpc: '1.0', id: 1, method: 'm' }, '"jsonrpc" must be "2.0"', { requestId: 1 }],
      [{ id: 2, method: 5 }, '"method" must be a string', { requestId: 2 }],
      [{ id: 'x', method: 'm', params: 'p' }, '"params" must be an object or an array', { requestId: 'x' }],
      [{ id: { a: 1 }, method: 'm' }, 'a request\'s "id" must be a number or a string', {}],
      [{ id: 4, result: 1, error: { code: 1, message: 'm' } }, 'a response has either "result" or "error"', { responseId: 4 }],
      [{ id: 5, error: { code: 'bad' } }, '"error" must be an object with an integer "code" and a string "message"', { responseId: 5 }],
      [{ result: 1 }, 'a response\'s "id" must be a number or a string', {}],
      [{ id: 6 }, 'neither "method" nor "result" nor "error"', { responseId: 6 }],
    ];
    for (const [value, problem, ids] of cases) {
      const { invalid } = classify(value, 'stdout line 9');
      expect(invalid).toEqual({ rejection: expect.objectContaining({ code: 'invalid', reason: `stdout line 9 is not a JSON-RPC 2.0 message: ${problem}` }), problem, ...ids });
    }
  });
});

describe('JsonRpcPeer: this side\'s requests', () => {
  it('writes "jsonrpc" unless told not to, counts ids up, and settles each by id synchronously from its line', () => {
    const { peer: p, sent, log, recorder, line } = peer();
    expect(p.request('initialize', { protocolVersion: 1 }, recorder('init'))).toEqual({ ok: true, id: 1 });
    expect(p.request('session/new', undefined, recorder('new'))).toEqual({ ok: true, id: 2 });
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1 } }, { jsonrpc: '2.0', id: 2, method: 'session/new' }]);
    expect(p.pending).toBe(2);
    line({ jsonrpc: '2.0', id: 2, result: { sessionId: 's' } });
    log.push('after line');
    line({ id: 1, result: { protocolVersion: 1 } });
    expect(log).toEqual(['new result {"sessionId":"s"}', 'after line', 'init result {"protocolVersion":1}']);
    expect(p.pending).toBe(0);

    const codex = peer({}, { writeVersion: false, firstId: 0 });
    codex.peer.request('initialize', { clientInfo: { name: 'subvisor' } }, codex.recorder('i'));
    codex.peer.notify('initialized');
    expect(codex.sent).toEqual([{ id: 0, method: 'initialize', params: { clientInfo: { name: 'subvisor' } } }, { method: 'initialized' }]);
  });

  it('an error answer fails the request with the typed error; an answer to no pending id is rejected, never thrown', () => {
    const { peer: p, log, recorder, line, rejections } = peer();
    p.request('session/prompt', { sessionId: 's' }, recorder('prompt'));
    line({ jsonrpc: '2.0', id: 1, error: { code: 400, message: '{"error":"scripted failure"}' } });
    line({ jsonrpc: '2.0', id: 1, result: {} });
    line({ jsonrpc: '2.0', id: '1', result: {} });
    expect(log).toEqual(['prompt failed error: session/prompt failed: {"error":"scripted failure"} (400)', 'rejected out-of-order', 'rejected out-of-order']);
    expect(rejections[0]!.reason).toBe('stdout line 1 is an answer to request 1, which is not pending');
    const failures: RequestFailure[] = [];
    p.request('m', undefined, { result: () => undefined, failed: (failure) => void failures.push(failure) });
    line({ id: 2, error: { code: -32602, message: 'Invalid params', data: { field: 'x' } } });
    expect(failures).toEqual([{ kind: 'error', error: { code: -32602, message: 'Invalid params', data: { field: 'x' } }, reason: 'm failed: Invalid params (-32602)' }]);
  });

  it('a malformed answer with a pending id fails that request at once rather than leaving it waiting', () => {
    const { peer: p, log, recorder, line } = peer();
    p.request('thread/start', {}, recorder('start'));
    line({ id: 1, error: { code: 'x' } });
    expect(log).toEqual(['rejected invalid', 'start failed failed: its answer was not valid JSON-RPC (stdout line 1)']);
  });

  it('fails a request after its own bound; others wait; a late answer is rejected', () => {
    const timers: Array<() => void> = [];
    const { peer: p, log, recorder, line } = peer({}, { setTimer: (fn) => (timers.push(fn), { clear: () => undefined }) });
    p.request('initialize', {}, recorder('init'), { timeoutMs: 1000 });
    p.request('session/prompt', {}, recorder('prompt'));
    expect(timers).toHaveLength(1);
    timers[0]!();
    line({ id: 1, result: {} });
    expect(log).toEqual(['init failed timeout: no answer to request 1 within 1000 ms', 'rejected out-of-order']);
    expect(p.pending).toBe(1);
  });

  it('on close every pending request fails with the reason; nothing is sent or read after it', () => {
    const { peer: p, log, recorder, line, sent } = peer();
    p.request('a', {}, recorder('a'));
    p.request('b', {}, recorder('b'));
    p.close('the agent exited (code 1)');
    expect(log).toEqual(['a failed closed: the agent exited (code 1)', 'b failed closed: the agent exited (code 1)']);
    expect(p.request('c', {}, recorder('c'))).toEqual({ ok: false, reason: 'the JSON-RPC peer is closed' });
    expect(p.notify('session/cancel', { sessionId: 's' })).toBe(false);
    line({ id: 1, result: {} });
    expect(log).toHaveLength(2);
    expect(sent).toHaveLength(2);
  });

  it('an answer that comes back within the write itself still settles the request', () => {
    const results: JsonValue[] = [];
    const echo: JsonRpcPeer = new JsonRpcPeer(
      { send: (message) => (echo.receive(JSON.stringify({ id: message['id']!, result: 'at once' }), 'in memory'), { ok: true }) },
      { rejected: () => expect.fail('no rejection') },
    );
    echo.request('m', undefined, { result: (value) => void results.push(value), failed: () => expect.fail('not failed') });
    expect(results).toEqual(['at once']);
  });

  it('a request that cannot be written is not pending and its handlers are never called', () => {
    const { peer: p, log, recorder } = peer({}, { writable: () => false });
    expect(p.request('a', {}, recorder('a'))).toEqual({ ok: false, reason: 'stdin closed' });
    expect(p.pending).toBe(0);
    expect(log).toEqual([]);
  });
});

describe('JsonRpcPeer: the peer\'s requests and notifications', () => {
  it('dispatches by method; the handler answers now or later, once; ids may be 0 or strings', () => {
    const later: Array<(value: JsonValue) => boolean> = [];
    const keys: string[] = [];
    const { sent, line } = peer({
      requests: {
        'session/request_permission': (_params, reply) => void (keys.push(reply.key), later.push((value) => reply.result(value))),
        ping: (_params, reply) => {
          expect([reply.key, reply.method]).toEqual(['0', 'ping']);
          reply.result({ pong: true });
          expect(reply.answered).toBe(true);
          expect(reply.error({ code: 1, message: 'twice' })).toBe(false);
        },
      },
    });
    line({ id: 0, method: 'ping' });
    line({ jsonrpc: '2.0', id: 'perm-1', method: 'session/request_permission', params: { options: [] } });
    expect(keys).toEqual(['"perm-1"']);
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 0, result: { pong: true } }]);
    expect(later[0]!({ outcome: { outcome: 'cancelled' } })).toBe(true);
    expect(later[0]!({ again: true })).toBe(false);
    expect(sent[1]).toEqual({ jsonrpc: '2.0', id: 'perm-1', result: { outcome: { outcome: 'cancelled' } } });
  });

  it('answers an unknown method -32601 (never silence) and says so; a handler that throws -32603', () => {
    const unknown: string[] = [];
    const { sent, line } = peer({
      unknownMethod: (method, id) => void unknown.push(`${method} #${id}`),
      requests: { 'boom/now': () => { throw new Error('handler bug'); } },
    });
    line({ jsonrpc: '2.0', id: 7, method: 'fs/read_text_file', params: { path: '/etc/passwd' } });
    line({ jsonrpc: '2.0', id: 8, method: '__proto__' });
    line({ jsonrpc: '2.0', id: 9, method: 'boom/now' });
    expect(sent).toEqual([
      { jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found: fs/read_text_file' } },
      { jsonrpc: '2.0', id: 8, error: { code: -32601, message: 'Method not found: __proto__' } },
      { jsonrpc: '2.0', id: 9, error: { code: -32603, message: 'Internal error: handler bug' } },
    ]);
    expect(unknown).toEqual(['fs/read_text_file #7', '__proto__ #8']);
  });

  it('an invalid request whose id can be read is answered -32600; one whose id cannot is only rejected', () => {
    const { sent, line, rejections } = peer();
    line({ id: 3, method: 'x', params: 42 });
    line({ id: [1], method: 'x' });
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 3, error: { code: -32600, message: 'Invalid Request: "params" must be an object or an array' } }]);
    expect(rejections.map((rejection) => rejection.code)).toEqual(['invalid', 'invalid']);
  });

  it('delivers notifications, and never throws on a bad line: each is a typed rejection and the next line is read', () => {
    const { line, log, rejections } = peer();
    for (const bad of ['', 'not json {', '[1,2]', '7', 'null', '{"id":1}', '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}']) expect(() => line(bad)).not.toThrow();
    line({ method: 'session/update', params: { update: { sessionUpdate: 'agent_message_chunk' } } });
    expect(rejections.map((rejection) => rejection.code)).toEqual(['malformed', 'malformed', 'invalid', 'invalid', 'invalid', 'invalid', 'invalid-payload']);
    expect(rejections[6]!.reason).toBe('stdout line 1 is an error response to no request (the peer could not read its id): code -32700');
    expect(log.at(-1)).toBe('notification session/update {"update":{"sessionUpdate":"agent_message_chunk"}}');
  });

  it('an overlong line: a request is answered -32600 by its sniffed id, a pending answer fails; an id inside params is not taken', () => {
    const { peer: p, sent, log, recorder } = peer();
    const rejection: FrameRejection = { code: 'too-large', reason: 'stdout line 4 is longer than the 64-byte line bound (maxFrameBytes); skipped' };
    p.overlong(rejection, '{"jsonrpc":"2.0","id":12,"method":"session/request_permission","params":{"toolCall":{"rawInput":"xxxx');
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 12, error: { code: -32600, message: 'Invalid Request: the message is longer than the line bound' } }]);
    p.request('session/prompt', {}, recorder('prompt'));
    p.overlong(rejection, '{"jsonrpc":"2.0","method":"session/update","params":{"id":1,"text":"xxx');
    p.overlong(rejection, '{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn","_meta":"xxxx');
    expect(log).toEqual(['rejected too-large', 'rejected too-large', 'rejected too-large', 'prompt failed failed: its answer was longer than the line bound (maxFrameBytes)']);
    expect(sent).toHaveLength(2);
  });
});

describe('JsonRpcPeer over a linked stdio pair', () => {
  it('an ACP-shaped exchange: handshake, a prompt with updates, a permission asked through the desk, an unknown client method', async () => {
    const { io, peer: agent } = linkedStdio();
    const desk = new RequestDesk<string>();
    const events: string[] = [];
    let channel: StdioChannel | undefined;
    const rpc = new JsonRpcPeer(
      { send: (message) => channel!.write(message) },
      {
        rejected: (rejection) => void events.push(`rejected ${rejection.code}`),
        notification: (method, params) => void events.push(`${method} ${JSON.stringify((params as JsonObject)['update'])}`),
        unknownMethod: (method) => void events.push(`unknown ${method}`),
        requests: {
          'session/request_permission': (params, reply) =>
            void desk.add({
              key: reply.key,
              ask: () => Promise.resolve('allow'),
              accept: (value) => ({ answer: value as string }),
              respond: (answer) => void reply.result({ outcome: { outcome: 'selected', optionId: answer ?? 'reject' } }),
            }),
        },
      },
    );
    channel = new StdioChannel({ maxLineBytes: 4096, shouldPause: () => false, lines: rpc.lines });
    channel.attach(io);
    // The agent: answers initialize and session/new, then streams an update, asks a permission, calls fs, ends the prompt.
    agent.onLine((text) => {
      const message = JSON.parse(text) as JsonObject;
      if (message['method'] === 'initialize') agent.send({ jsonrpc: '2.0', id: message['id']!, result: { protocolVersion: 1 } });
      if (message['method'] === 'session/new') agent.send({ jsonrpc: '2.0', id: message['id']!, result: { sessionId: 'sess-1' } });
      if (message['method'] === 'session/prompt') {
        agent.send({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: 'sess-1', update: { sessionUpdate: 'agent_message_chunk' } } });
        agent.send({ jsonrpc: '2.0', id: 0, method: 'session/request_permission', params: { options: [{ optionId: 'allow', kind: 'allow_once' }] } });
      }
      if (message['id'] === 0 && 'result' in message) {
        agent.send({ jsonrpc: '2.0', id: 1, method: 'fs/read_text_file', params: { path: '/x' } });
        agent.send('this is not JSON');
        agent.send({ jsonrpc: '2.0', id: 3, result: { stopReason: 'end_turn' } });
      }
    });
    const answer = <T>(method: string, params: JsonValue) =>
      new Promise<T>((resolve, reject) => void rpc.request(method, params, { result: (value) => resolve(value as T), failed: (failure) => reject(new Error(failure.reason)) }));
    expect(await answer('initialize', { protocolVersion: 1 })).toEqual({ protocolVersion: 1 });
    expect(await answer('session/new', { cwd: '/', mcpServers: [] })).toEqual({ sessionId: 'sess-1' });
    expect(await answer('session/prompt', { sessionId: 'sess-1', prompt: [] })).toEqual({ stopReason: 'end_turn' });
    expect(events).toEqual(['session/update {"sessionUpdate":"agent_message_chunk"}', 'unknown fs/read_text_file', 'rejected malformed']);
    for (let turns = 0; agent.lines.length < 5 && turns < 1000; turns++) await new Promise((resolve) => setImmediate(resolve));
    expect(agent.lines.map((text) => JSON.parse(text) as JsonObject).filter((message) => !('method' in message))).toEqual([
      { jsonrpc: '2.0', id: 0, result: { outcome: { outcome: 'selected', optionId: 'allow' } } },
      { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found: fs/read_text_file' } },
    ]);
    // The agent exits: what is pending fails closed.
    const pending = answer('session/prompt', { sessionId: 'sess-1', prompt: [] });
    agent.end();
    await channel.finish();
    rpc.close('the agent exited');
    await expect(pending).rejects.toThrow('the agent exited');
    channel.dispose();
  });
});
