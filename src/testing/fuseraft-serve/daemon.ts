// The fake fuseraft serve daemon: a WebSocket (127.0.0.1, port 0) or Unix socket server that speaks the serve protocol, plays scenarios and misbehaviours, and records what clients sent.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server as NetServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { LineSplitter } from '../../text/line-splitter.js';
import { FUSERAFT_SERVE_BUILTIN_SCENARIOS } from './scenario.js';
import type { ServeBuiltinName, ServeScenario, ServeTaskPlan } from './scenario.js';
import { refuseUnknownKeys } from '../../text/option-keys.js';

export interface FakeFuseraftServeOptions {
  /** Require `Authorization: Bearer <token>` (WebSocket); anything else is refused with HTTP 401. */
  token?: string;
  /** Listen on a Unix socket in a private temp directory (JSON lines) instead of a WebSocket. */
  unixSocket?: boolean;
}

/** A message a client sent, and on which connection (numbered from 1). */
export interface ReceivedMessage {
  connection: number;
  /** The parsed JSON, or the raw text of a line that is not JSON. */
  message: JsonValue;
}

export interface FakeFuseraftServe {
  /** `ws://127.0.0.1:<port>/attach` (WebSocket form). */
  readonly url: string | undefined;
  /** The socket's path (Unix socket form). */
  readonly socketPath: string | undefined;
  /** Connections open right now. */
  readonly connections: number;
  /** Connections accepted so far (refused handshakes not counted). */
  readonly connectionsMade: number;
  /** The headers of every WebSocket handshake, in order (lower-case names), refused ones included. */
  readonly handshakes: ReadonlyArray<Readonly<Record<string, string | string[] | undefined>>>;
  /** Every message clients sent, in order. */
  readonly received: readonly ReceivedMessage[];
  /** Every `approval_response` clients sent, in order. */
  readonly approvalResponses: readonly JsonObject[];
  /** The text of every message the daemon sent, in order. */
  readonly sent: readonly string[];
  /** Closes every connection and the server, and removes the socket directory. */
  close(): Promise<void>;
}

/** One connection, whatever the transport. */
interface Conn {
  number: number;
  send(text: string): void;
  drop(): void;
}

interface ServeTask {
  sessionId: string;
  text: string;
  plan: ServeTaskPlan;
  /** Approvals still to ask (the head is the one being asked). */
  approvals: JsonObject[];
  asking: boolean;
  interrupted: boolean;
  done: boolean;
}

interface Client {
  key: string;
  clientId: string | null;
  conn: Conn | undefined;
  task: ServeTask | undefined;
  pending: JsonObject[];
  tasksRun: number;
}

const PROTOCOL_VERSION = 1;

/** Starts a fake `fuseraft serve` in this process: `const daemon = await fakeFuseraftServe('echo', { token })`. */
export async function fakeFuseraftServe(scenario: ServeScenario | ServeBuiltinName = 'echo', options: FakeFuseraftServeOptions = {}): Promise<FakeFuseraftServe> {
  refuseUnknownKeys(options, Object.keys({ token: true, unixSocket: true } satisfies Record<keyof FakeFuseraftServeOptions, true>), 'fakeFuseraftServe');
  const daemon = new FakeDaemon(typeof scenario === 'string' ? FUSERAFT_SERVE_BUILTIN_SCENARIOS[scenario] : scenario, options);
  await daemon.listen();
  return daemon;
}

class FakeDaemon implements FakeFuseraftServe {
  url: string | undefined;
  socketPath: string | undefined;
  connections = 0;
  connectionsMade = 0;
  readonly handshakes: Array<Record<string, string | string[] | undefined>> = [];
  readonly received: ReceivedMessage[] = [];
  readonly approvalResponses: JsonObject[] = [];
  readonly sent: string[] = [];
  readonly #scenario: ServeScenario;
  readonly #options: FakeFuseraftServeOptions;
  readonly #clients = new Map<string, Client>();
  readonly #conns = new Set<Conn>();
  #wss: WebSocketServer | undefined;
  #net: NetServer | undefined;
  #dir: string | undefined;
  #sessions = 0;
  #dropped = false;

  constructor(scenario: ServeScenario, options: FakeFuseraftServeOptions) {
    this.#scenario = scenario;
    this.#options = options;
  }

  #misbehaves(what: NonNullable<ServeScenario['misbehave']>[number]): boolean {
    return this.#scenario.misbehave?.includes(what) ?? false;
  }

  async listen(): Promise<void> {
    if (this.#options.unixSocket === true) {
      this.#dir = mkdtempSync(join(tmpdir(), 'subvisor-fake-serve-'));
      this.socketPath = join(this.#dir, 'serve.sock');
      const server = createServer((socket) => this.#acceptUnix(socket));
      this.#net = server;
      await new Promise<void>((resolve) => server.listen(this.socketPath, resolve));
      return;
    }
    const wss = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      path: '/attach',
      autoPong: !this.#misbehaves('no-pong'),
      verifyClient: (info, done) => {
        const headers = { ...info.req.headers };
        this.handshakes.push(headers);
        if (this.#misbehaves('refuse')) return done(false, 401, 'Unauthorized');
        if (headers.origin !== undefined) return done(false, 403, 'Forbidden');
        const token = this.#options.token;
        if (token !== undefined && headers.authorization !== `Bearer ${token}`) return done(false, 401, 'Unauthorized');
        done(true);
      },
    });
    this.#wss = wss;
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    this.url = `ws://127.0.0.1:${(wss.address() as { port: number }).port}/attach`;
    wss.on('connection', (socket, request) => {
      const raw = request.headers['fuseraft-client-id'];
      const clientId = typeof raw === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(raw) ? raw : null;
      this.#acceptWebSocket(socket, clientId, request.headers.authorization ?? '');
    });
  }

  #acceptWebSocket(socket: WebSocket, clientId: string | null, auth: string): void {
    const conn: Conn = {
      number: ++this.connectionsMade,
      send: (text) => {
        this.sent.push(text);
        socket.send(text);
      },
      drop: () => socket.terminate(),
    };
    this.connections++;
    this.#conns.add(conn);
    // Client ids are scoped to the token the connection authenticated with.
    const clientKey = clientId === null ? `anon:${conn.number}` : `${auth}|${clientId}`;
    socket.on('message', (data) => this.#onText(conn, clientKey, String(data)));
    socket.on('close', () => this.#onClose(conn, clientKey));
    socket.on('error', () => undefined);
    this.#attach(conn, clientKey, clientId);
  }

  #acceptUnix(socket: Socket): void {
    const conn: Conn = {
      number: ++this.connectionsMade,
      send: (text) => {
        this.sent.push(text);
        socket.write(`${text}\n`);
      },
      drop: () => socket.destroy(),
    };
    this.connections++;
    this.#conns.add(conn);
    const clientKey = `anon:${conn.number}`;
    const lines = new LineSplitter(16 * 1024 * 1024);
    socket.on('data', (chunk: Buffer) => {
      for (const line of lines.push(chunk)) if (line.kind === 'line') this.#onText(conn, clientKey, line.text);
    });
    socket.on('close', () => this.#onClose(conn, clientKey));
    socket.on('error', () => undefined);
    if (this.#misbehaves('refuse')) {
      socket.destroy();
      return;
    }
    this.#attach(conn, clientKey, null);
  }

  /** A new connection of a client: a newer one replaces the older; then hello, pending results, a re-asked approval. */
  #attach(conn: Conn, key: string, clientId: string | null): void {
    let client = this.#clients.get(key);
    if (client === undefined) {
      client = { key, clientId, conn: undefined, task: undefined, pending: [], tasksRun: 0 };
      this.#clients.set(key, client);
    }
    const older = client.conn;
    client.conn = conn;
    older?.drop();
    if (this.#misbehaves('silent')) return;
    const task = client.task;
    const hello: JsonObject = {
      type: 'hello',
      protocolVersion: this.#misbehaves('wrong-version') ? 2 : PROTOCOL_VERSION,
      clientId,
      readOnly: this.#misbehaves('read-only'),
      inFlight: task === undefined ? null : { sessionId: task.sessionId, task: task.text, status: 'running', position: 0 },
      pendingResults: client.pending.map((result) => result['sessionId'] as string),
    };
    conn.send(JSON.stringify(hello));
    for (const result of client.pending.splice(0)) conn.send(JSON.stringify(result));
    if (task !== undefined && task.asking) this.#ask(client, task);
  }

  #onClose(conn: Conn, key: string): void {
    this.connections--;
    this.#conns.delete(conn);
    const client = this.#clients.get(key);
    if (client !== undefined && client.conn === conn) client.conn = undefined;
  }

  #onText(conn: Conn, key: string, text: string): void {
    let message: JsonValue;
    try {
      message = JSON.parse(text) as JsonValue;
    } catch {
      message = text;
    }
    this.received.push({ connection: conn.number, message });
    const client = this.#clients.get(key);
    if (client === undefined || client.conn !== conn) return;
    // "A plain text line works too" on the socket: it is a task.
    const line = typeof message === 'string' ? { type: 'user_input', text: message } : message;
    if (typeof line !== 'object' || line === null || Array.isArray(line)) return;
    switch (line['type']) {
      case 'user_input':
        return this.#onUserInput(client, typeof line['text'] === 'string' ? line['text'] : '');
      case 'approval_response':
        this.approvalResponses.push(line);
        return this.#onApproval(client, line['approved'] === true);
      case 'interrupt':
        return this.#interrupt(client);
    }
  }

  #send(client: Client, message: JsonObject): void {
    client.conn?.send(JSON.stringify(message));
  }

  #onUserInput(client: Client, text: string): void {
    if (this.#misbehaves('read-only')) {
      this.#send(client, { type: 'error', text: 'this connection is read-only: tasks are refused' });
      return;
    }
    if (client.task !== undefined) {
      this.#send(client, { type: 'error', text: 'a task of this client is already running' });
      return;
    }
    const plans = this.#scenario.tasks ?? [{}];
    const plan = plans[Math.min(client.tasksRun, plans.length - 1)] ?? {};
    client.tasksRun++;
    const approvals = [...(plan.approvals ?? [])];
    if (this.#misbehaves('unknown-approval-kind')) approvals.push({ kind: 'launch_rocket', target: 'moon' });
    const task: ServeTask = { sessionId: `sess-${++this.#sessions}`, text, plan, approvals, asking: false, interrupted: false, done: false };
    client.task = task;
    if (this.#misbehaves('drop-before-queued') && !this.#dropped) this.#drop(client);
    this.#send(client, { type: 'queued', sessionId: task.sessionId, position: 0 });
    if (this.#misbehaves('malformed')) client.conn?.send('this is { not JSON');
    if (this.#misbehaves('unknown-type')) this.#send(client, { type: 'quantum_flux', level: 3 });
    if (this.#misbehaves('other-task')) {
      this.#send(client, { type: 'queued', sessionId: 'sess-other', position: 1 });
      this.#send(client, { type: 'result', sessionId: 'sess-other', task: 'another client\'s task', succeeded: true, errorMessage: null, lastAgent: 'Coder', lastMessage: 'not this run\'s answer' });
    }
    for (const progress of plan.progress ?? []) this.#send(client, progress);
    if (this.#misbehaves('drop-mid-turn') && !this.#dropped) this.#drop(client);
    this.#advance(client, task);
  }

  /** Drops the client's connection once (the misbehaviours that lose it). */
  #drop(client: Client): void {
    this.#dropped = true;
    client.conn?.drop();
    client.conn = undefined;
  }

  /** Asks the next approval, or waits (hang), or finishes. */
  #advance(client: Client, task: ServeTask): void {
    if (task.done) return;
    if (task.interrupted) return this.#finish(client, task, { succeeded: false, errorMessage: 'interrupted' });
    if (task.approvals.length > 0) {
      task.asking = true;
      if (client.conn !== undefined) this.#ask(client, task);
      return;
    }
    if (task.plan.hang === true) return;
    const succeeded = task.plan.succeeded ?? true;
    this.#finish(client, task, succeeded ? { succeeded } : { succeeded, errorMessage: task.plan.errorMessage ?? 'the task failed' });
  }

  #ask(client: Client, task: ServeTask): void {
    this.#send(client, { type: 'approval_request', ...task.approvals[0]! });
  }

  #onApproval(client: Client, approved: boolean): void {
    const task = client.task;
    if (task === undefined || !task.asking) return;
    const asked = task.approvals.shift()!;
    task.asking = false;
    if (!approved) return this.#finish(client, task, { succeeded: false, errorMessage: `denied: ${String(asked['kind'])}` });
    this.#advance(client, task);
  }

  #interrupt(client: Client): void {
    const task = client.task;
    if (task === undefined || this.#misbehaves('ignore-interrupt')) return;
    task.interrupted = true;
    this.#advance(client, task);
  }

  #finish(client: Client, task: ServeTask, how: { succeeded: boolean; errorMessage?: string }): void {
    task.done = true;
    client.task = undefined;
    const result: JsonObject = {
      type: 'result',
      sessionId: task.sessionId,
      task: task.text,
      succeeded: how.succeeded,
      errorMessage: how.errorMessage ?? null,
      lastAgent: task.plan.lastAgent ?? 'Coder',
      lastMessage: how.succeeded ? (task.plan.answer ?? `echo: ${task.text}`) : null,
    };
    if (client.conn === undefined) {
      // Kept for the client's next connection (only a client with an id ever comes back for it).
      if (client.clientId !== null) client.pending.push(result);
      return;
    }
    this.#send(client, result);
  }

  async close(): Promise<void> {
    for (const conn of this.#conns) conn.drop();
    const wss = this.#wss;
    if (wss !== undefined) {
      for (const socket of wss.clients) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
    const net = this.#net;
    if (net !== undefined) await new Promise<void>((resolve) => net.close(() => resolve()));
    if (this.#dir !== undefined) rmSync(this.#dir, { recursive: true, force: true });
    this.#wss = undefined;
    this.#net = undefined;
    this.#dir = undefined;
  }
}
