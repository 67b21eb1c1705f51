// The shared daemon transport (src/drivers/socket/): WebSocket and Unix socket framing, bounds, liveness, refusals, one end, nothing left open.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server as NetServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { openConnection, safeTarget } from '../../../../src/drivers/shared/socket/connection.js';
import type { Connection, ConnectionEnd, ConnectionOptions } from '../../../../src/drivers/shared/socket/connection.js';
import type { FrameRejection, TypedFrame } from '../../../../src/drivers/shared/json-line.js';

interface Recorder {
  opened: boolean;
  frames: TypedFrame[];
  rejections: FrameRejection[];
  end: Promise<ConnectionEnd>;
  ends: number;
}

function connect(options: Partial<ConnectionOptions> & Pick<ConnectionOptions, 'target'>): { connection: Connection; seen: Recorder } {
  let resolveEnd!: (end: ConnectionEnd) => void;
  const seen: Recorder = { opened: false, frames: [], rejections: [], end: new Promise((resolve) => (resolveEnd = resolve)), ends: 0 };
  const connection = openConnection(
    { maxFrameBytes: 1024, pingIntervalMs: 0, pongTimeoutMs: 1000, ...options },
    {
      open: () => (seen.opened = true),
      frame: (frame) => seen.frames.push(frame),
      rejected: (rejection) => seen.rejections.push(rejection),
      end: (end) => {
        seen.ends++;
        resolveEnd(end);
      },
    },
  );
  return { connection, seen };
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A ws server on 127.0.0.1, port 0, recording each connection's handshake headers. */
async function wsServer(options: { autoPong?: boolean; verifyClient?: (info: { req: { headers: Record<string, unknown> } }) => boolean } = {}) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, autoPong: options.autoPong ?? true, ...(options.verifyClient ? { verifyClient: options.verifyClient } : {}) });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const sockets: WebSocket[] = [];
  const headers: Array<Record<string, unknown>> = [];
  const received: string[] = [];
  const connected: Array<(socket: WebSocket) => void> = [];
  server.on('connection', (socket, request) => {
    sockets.push(socket);
    headers.push(request.headers);
    socket.on('message', (data) => received.push(String(data)));
    for (const listener of connected) listener(socket);
  });
  const { port } = server.address() as { port: number };
  cleanups.push(() => new Promise<void>((resolve) => {
    for (const client of server.clients) client.terminate();
    server.close(() => resolve());
  }));
  const next = () => new Promise<WebSocket>((resolve) => connected.push(resolve));
  return { server, url: `ws://127.0.0.1:${port}/attach`, sockets, headers, received, next };
}

async function waitFor(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the WebSocket transport', () => {
  it('opens, sends the given headers and no Origin, decodes text messages, and closes with one end', async () => {
    const daemon = await wsServer();
    const accepted = daemon.next();
    const { connection, seen } = connect({ target: { url: daemon.url }, headers: { Authorization: 'Bearer s3cret-token', 'X-Test': 'yes' } });
    const socket = await accepted;
    await waitFor(() => seen.opened, 'open');
    expect(daemon.headers[0]).toMatchObject({ authorization: 'Bearer s3cret-token', 'x-test': 'yes' });
    expect(daemon.headers[0]).not.toHaveProperty('origin');
    socket.send('{"type":"hello","protocolVersion":1}');
    socket.send('not json');
    socket.send('[1,2]');
    socket.send(Buffer.from('{"type":"bin"}'), { binary: true });
    socket.send('{"type":"after"}');
    await waitFor(() => seen.frames.length === 2, 'two frames');
    expect(seen.frames).toEqual([{ type: 'hello', protocolVersion: 1 }, { type: 'after' }]);
    expect(seen.rejections.map((rejection) => rejection.code)).toEqual(['malformed', 'invalid', 'malformed']);
    expect(seen.rejections[0]!.reason).not.toContain('not json');
    expect(connection.send({ type: 'user_input', text: 'hi' })).toBe(true);
    await waitFor(() => daemon.received.length === 1, 'the message');
    expect(JSON.parse(daemon.received[0]!)).toEqual({ type: 'user_input', text: 'hi' });
    connection.close(1000);
    expect(await seen.end).toEqual({ code: 'closed', reason: 'the connection was closed by subvisor' });
    await waitFor(() => daemon.server.clients.size === 0, 'the server to see the close');
    expect(connection.send({ type: 'late' })).toBe(false);
    expect(seen.ends).toBe(1);
  });

  it('reports connection-refused when nothing listens', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const { seen } = connect({ target: { url: `ws://127.0.0.1:${port}/attach?secret=q` } });
    const end = await seen.end;
    expect(end.code).toBe('connection-refused');
    expect(end.reason).toContain('ECONNREFUSED');
    expect(end.reason).not.toContain('secret');
    expect(seen.opened).toBe(false);
  });

  it('reports a refused handshake (HTTP 401) as connection-refused without repeating the token', async () => {
    const daemon = await wsServer({ verifyClient: () => false });
    const { seen } = connect({ target: { url: daemon.url }, headers: { Authorization: 'Bearer s3cret-token' } });
    const end = await seen.end;
    expect(end).toMatchObject({ code: 'connection-refused' });
    expect(end.reason).toContain('HTTP 401');
    expect(end.reason).not.toContain('s3cret');
  });

  it('reports connection-lost when the daemon drops the connection', async () => {
    const daemon = await wsServer();
    const accepted = daemon.next();
    const { seen } = connect({ target: { url: daemon.url } });
    (await accepted).terminate();
    expect((await seen.end).code).toBe('connection-lost');
  });

  it('ends no-pong when ping frames go unanswered, and stays open while they are answered', async () => {
    const silent = await wsServer({ autoPong: false });
    const { seen } = connect({ target: { url: silent.url }, pingIntervalMs: 30, pongTimeoutMs: 100 });
    const end = await seen.end;
    expect(end.code).toBe('no-pong');
    await waitFor(() => silent.server.clients.size === 0, 'the server to see the drop');

    const answering = await wsServer();
    const { connection, seen: alive } = connect({ target: { url: answering.url }, pingIntervalMs: 30, pongTimeoutMs: 2000 });
    await waitFor(() => alive.opened, 'open');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(alive.ends).toBe(0);
    connection.dispose();
  });

  it('sends the protocol probe message when one is given; any message answers it', async () => {
    const daemon = await wsServer();
    const accepted = daemon.next();
    const { connection, seen } = connect({ target: { url: daemon.url }, pingIntervalMs: 30, pongTimeoutMs: 2000, probe: () => ({ type: 'ping' }) });
    const socket = await accepted;
    socket.on('message', (data) => {
      if (JSON.parse(String(data)).type === 'ping') socket.send('{"type":"pong","protocol_version":3}');
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(seen.ends).toBe(0);
    expect(daemon.received.filter((text) => text === '{"type":"ping"}').length).toBeGreaterThan(1);
    socket.removeAllListeners('message');
    expect((await seen.end).code).toBe('no-pong');
    connection.dispose();
  });

  it('rejects a message over maxFrameBytes as too-large and ends connection-lost', async () => {
    const daemon = await wsServer();
    const accepted = daemon.next();
    const { seen } = connect({ target: { url: daemon.url }, maxFrameBytes: 64 });
    (await accepted).send(JSON.stringify({ type: 'big', text: 'x'.repeat(200) }));
    const end = await seen.end;
    expect(end.code).toBe('connection-lost');
    expect(end.reason).toContain('maxFrameBytes');
    expect(seen.rejections).toEqual([expect.objectContaining({ code: 'too-large' })]);
  });

  it('dispose() closes at once and calls no handler afterwards', async () => {
    const daemon = await wsServer();
    const accepted = daemon.next();
    const { connection, seen } = connect({ target: { url: daemon.url }, pingIntervalMs: 20 });
    const socket = await accepted;
    await waitFor(() => seen.opened, 'open');
    connection.dispose();
    socket.send('{"type":"late"}');
    await waitFor(() => daemon.server.clients.size === 0, 'the server to see the drop');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(seen.ends).toBe(0);
    expect(seen.frames).toEqual([]);
  });
});

describe('the Unix socket transport', () => {
  async function unixServer() {
    const dir = mkdtempSync(join(tmpdir(), 'subvisor-sock-'));
    const path = join(dir, 'serve.sock');
    const sockets: Socket[] = [];
    const received: string[] = [];
    const server: NetServer = createServer((socket) => {
      sockets.push(socket);
      socket.on('data', (chunk) => received.push(String(chunk)));
    });
    await new Promise<void>((resolve) => server.listen(path, resolve));
    cleanups.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    });
    return { path, sockets, received, server };
  }

  it('reads JSON lines split anywhere, skips an overlong line, and writes JSON lines', async () => {
    const daemon = await unixServer();
    const { connection, seen } = connect({ target: { socketPath: daemon.path }, maxFrameBytes: 64 });
    await waitFor(() => seen.opened && daemon.sockets.length === 1, 'open');
    const socket = daemon.sockets[0]!;
    socket.write('{"type":"hel');
    socket.write('lo"}\n{"type":"long","text":"' + 'y'.repeat(100) + '"}\n');
    socket.write('{"type":"next"}\r\nnope\n');
    await waitFor(() => seen.frames.length === 2 && seen.rejections.length === 2, 'frames');
    expect(seen.frames).toEqual([{ type: 'hello' }, { type: 'next' }]);
    expect(seen.rejections.map((rejection) => rejection.code)).toEqual(['too-large', 'malformed']);
    expect(connection.send({ type: 'user_input', text: 'go' })).toBe(true);
    await waitFor(() => daemon.received.join('') === '{"type":"user_input","text":"go"}\n', 'the line');
    connection.close(1000);
    expect((await seen.end).code).toBe('closed');
  });

  it('reports connection-refused for a missing socket and connection-lost when the daemon goes', async () => {
    const { seen } = connect({ target: { socketPath: '/nonexistent/serve.sock' } });
    expect(await seen.end).toMatchObject({ code: 'connection-refused' });
    const daemon = await unixServer();
    const { seen: lost } = connect({ target: { socketPath: daemon.path } });
    await waitFor(() => daemon.sockets.length === 1, 'the connection');
    daemon.sockets[0]!.end('{"type":"last"}');
    expect((await lost.end).code).toBe('connection-lost');
    expect(lost.frames).toEqual([{ type: 'last' }]);
  });
});

describe('safeTarget', () => {
  it('never shows user info, a query or a fragment', () => {
    expect(safeTarget({ url: 'wss://user:pw@example.test:8443/attach?token=abc#x' })).toBe('wss://example.test:8443/attach');
    expect(safeTarget({ socketPath: '/run/fuseraft.sock' })).toBe('unix:/run/fuseraft.sock');
  });
});
