// serveDashboard: a local web page of a pool's or a queue's runs: one static page, live updates by server-sent events, the runs' own controls; a token on every request.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ControlRefusedError } from '../run/errors.js';
import type { Ack } from '../api/types.js';
import { Access, hostAllowed, isLoopback, newToken, sameOriginJson } from './access.js';
import { Board } from './board.js';
import { EventStream } from './event-stream.js';
import type { BoardSource } from './source.js';
import { DASHBOARD_OPTION_KEYS } from './option-keys.js';
import { refuseUnknownKeys } from '../text/option-keys.js';
import type { Dashboard, DashboardOptions } from './types.js';

/** The page's files, served as they are (no build step). */
const ASSETS: Record<string, string> = {
  '/': 'index.html',
  '/app.js': 'app.js',
  '/app.css': 'app.css',
};
const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

/** Every response: nothing cached, nothing framed, no referrer (the URL may hold the token), only the page's own files run. */
const SECURITY_HEADERS = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};

/** The largest control body read (a steer's text is bounded by the run anyway). */
const MAX_BODY_BYTES = 256 * 1024;
const KEEP_ALIVE_MS = 15_000;
const DEFAULT_MAX_RUNS = 1000;

/** The folder of the page's files: beside this module in src/, or dist/dashboard/page in a build. */
function pageDirectory(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const candidate of [join(here, 'page'), join(here, 'dashboard', 'page'), join(here, '..', 'dashboard', 'page')]) {
    try {
      readFileSync(join(candidate, 'index.html'));
      return candidate;
    } catch {
      // not this one
    }
  }
  throw new Error(`subvisor dashboard: its page is missing beside ${here} (build the package: npx tsup)`);
}

/** Starts a dashboard of `source` (a pool's or a queue producer's runs). */
export async function serveDashboard(source: BoardSource, options: DashboardOptions = {}): Promise<Dashboard> {
  const resolved = checkOptions(options, source.kind);
  const directory = pageDirectory();
  const assets = new Map(Object.entries(ASSETS).map(([path, file]) => [path, { body: readFileSync(join(directory, file)), type: TYPES[file.split('.').pop()!]! }]));
  const board = new Board(source, resolved.maxRuns);
  const server = createServer();
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(resolved.port, resolved.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const access = new Access(resolved.token, port);
  const streams = new Set<EventStream>();
  const site = new Site({ board, access, assets, streams, title: resolved.title, loopbackOnly: !resolved.allowRemote, port, token: resolved.token });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => site.handle(request, response));
  server.on('clientError', (_error, socket) => socket.destroy());
  const keepAlive = setInterval(() => {
    for (const stream of streams) stream.keepAlive();
  }, KEEP_ALIVE_MS);
  keepAlive.unref();
  board.start();

  const shownHost = resolved.host.includes(':') ? `[${resolved.host}]` : resolved.host;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((resolve) => {
      clearInterval(keepAlive);
      board.close();
      for (const stream of streams) stream.close();
      server.close(() => resolve());
      // Open keep-alive connections and streams would hold close() for ever: they end now.
      for (const socket of sockets) socket.destroy();
    }));
  return {
    url: `http://${shownHost}:${port}/?token=${resolved.token}`,
    host: resolved.host,
    port,
    close,
    [Symbol.asyncDispose]: close,
  };
}

interface ResolvedOptions {
  port: number;
  host: string;
  allowRemote: boolean;
  token: string;
  maxRuns: number;
  title: string;
}

function checkOptions(options: DashboardOptions, kind: 'pool' | 'queue'): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('serveDashboard needs an options object');
  refuseUnknownKeys(options, DASHBOARD_OPTION_KEYS, 'serveDashboard');
  const { port = 0, host = '127.0.0.1', allowRemote = false, token = newToken(), maxRuns = DEFAULT_MAX_RUNS, title = `subvisor ${kind}` } = options;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError('options.port must be an integer from 0 to 65535 (0: any free port)');
  if (typeof host !== 'string' || host === '') throw new TypeError('options.host must be a non-empty string');
  if (typeof allowRemote !== 'boolean') throw new TypeError('options.allowRemote must be a boolean');
  if (!isLoopback(host) && !allowRemote) {
    throw new TypeError(
      `options.host ${host} is not a loopback address: the dashboard controls your runs over plain HTTP. Pass allowRemote: true to serve it there anyway (an SSH tunnel to 127.0.0.1 is safer)`,
    );
  }
  if (typeof token !== 'string' || !/^[A-Za-z0-9_-]{16,}$/.test(token)) throw new TypeError('options.token must be at least 16 characters of A-Z a-z 0-9 _ -');
  if (!Number.isInteger(maxRuns) || maxRuns < 1) throw new RangeError('options.maxRuns must be an integer >= 1');
  if (typeof title !== 'string') throw new TypeError('options.title must be a string');
  return { port, host, allowRemote, token, maxRuns, title };
}

interface SiteParts {
  board: Board;
  access: Access;
  assets: Map<string, { body: Buffer; type: string }>;
  streams: Set<EventStream>;
  title: string;
  loopbackOnly: boolean;
  port: number;
  token: string;
}

/** The routes: the page, the board's snapshot and stream, a run's detail and stream, its controls. */
class Site {
  readonly #parts: SiteParts;

  constructor(parts: SiteParts) {
    this.#parts = parts;
  }

  handle(request: IncomingMessage, response: ServerResponse): void {
    this.#route(request, response).catch((error: unknown) => {
      // Nothing a request does may take the parent down.
      if (!response.headersSent) reply(response, 500, { error: `internal error: ${(error as Error).message}` });
      else response.destroy();
    });
  }

  async #route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { access, assets, loopbackOnly, port } = this.#parts;
    if (loopbackOnly && !hostAllowed(request.headers.host, port)) return reply(response, 403, { error: 'unexpected Host header' });
    const url = new URL(request.url ?? '/', 'http://dashboard');
    if (!access.allows(request, url)) {
      return reply(response, 401, { error: 'this dashboard needs its token: open the URL it printed at start (…/?token=...)' });
    }
    const method = request.method ?? 'GET';
    const asset = assets.get(url.pathname);
    if (asset !== undefined && method === 'GET') {
      const headers: Record<string, string> = { ...SECURITY_HEADERS, 'Content-Type': asset.type };
      // The page keeps the token in a cookie its script cannot read, and drops it from the address bar.
      if (url.pathname === '/') headers['Set-Cookie'] = access.setCookie(this.#parts.token);
      response.writeHead(200, headers);
      response.end(asset.body);
      return;
    }
    if (url.pathname === '/api/board' && method === 'GET') return reply(response, 200, this.#snapshot());
    if (url.pathname === '/api/stream' && method === 'GET') return this.#boardStream(response);
    const match = /^\/api\/runs\/([^/]+)(?:\/(stream|steer|cancel|terminate))?$/.exec(url.pathname);
    if (match === null) return reply(response, 404, { error: 'not found' });
    let id: string;
    try {
      id = decodeURIComponent(match[1]!);
    } catch {
      return reply(response, 400, { error: 'the run id in the path is not valid percent-encoding' });
    }
    const action = match[2];
    if (action === undefined && method === 'GET') {
      const detail = this.#parts.board.detail(id);
      return detail === undefined ? reply(response, 404, { error: 'no such run' }) : reply(response, 200, detail);
    }
    if (action === 'stream' && method === 'GET') return this.#runStream(id, response);
    if (action !== undefined && action !== 'stream' && method === 'POST') return this.#control(id, action, request, response);
    return reply(response, 405, { error: 'method not allowed' });
  }

  #snapshot() {
    const { board, title } = this.#parts;
    return { title, kind: board.kind, counts: board.counts(), gates: board.gates(), rows: board.rows() };
  }

  #boardStream(response: ServerResponse): void {
    const { board, streams } = this.#parts;
    let stop = () => {};
    const stream = new EventStream(response, () => {
      streams.delete(stream);
      stop();
    });
    streams.add(stream);
    stream.send('snapshot', this.#snapshot());
    stop = board.onRows((rows, removed) => stream.send('rows', { rows, removed, counts: board.counts(), gates: board.gates() }));
  }

  #runStream(id: string, response: ServerResponse): void {
    const { board, streams } = this.#parts;
    const detail = board.detail(id);
    if (detail === undefined) return reply(response, 404, { error: 'no such run' });
    let stop = () => {};
    const stream = new EventStream(response, () => {
      streams.delete(stream);
      stop();
    });
    streams.add(stream);
    stream.send('detail', detail);
    stop = board.onRun(id, (update) => stream.send('update', update));
  }

  async #control(id: string, action: string, request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (!sameOriginJson(request)) return reply(response, 403, { error: 'controls are JSON requests from the dashboard page itself' });
    const controls = this.#parts.board.controls(id);
    if (controls === undefined) return reply(response, 404, { error: 'no such run' });
    const body = await readBody(request);
    if (body === undefined) return reply(response, 400, { error: `the request body must be a JSON object of at most ${MAX_BODY_BYTES} bytes` });
    try {
      if (action === 'steer') {
        if (typeof body['text'] !== 'string') return reply(response, 400, { error: 'steer needs {"text": "..."}' });
        return reply(response, 200, { ack: ackOf(await controls.steer(body['text'])) });
      }
      if (action === 'cancel') return reply(response, 200, { ack: ackOf(await controls.cancel()) });
      const outcome = await controls.terminate();
      return reply(response, 200, { outcome: { status: outcome.status, errorCode: outcome.errorCode ?? null } });
    } catch (error) {
      if (error instanceof ControlRefusedError) return reply(response, 409, { error: error.message, code: error.code });
      return reply(response, 500, { error: (error as Error).message });
    }
  }
}

/** An Ack as JSON (its delivery promise stays on the server). */
function ackOf(ack: Ack): Omit<Ack, 'delivery'> {
  const { delivery: _delivery, ...rest } = ack;
  return rest;
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'application/json; charset=utf-8' });
  response.end(JSON.stringify(body));
}

/** The request's JSON object, or undefined when it is not one or is too large. */
async function readBody(request: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
