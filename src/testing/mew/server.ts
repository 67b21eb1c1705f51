// fakeMewDaemon(): the fake mew daemon as a WebSocket server on 127.0.0.1, recording what it received.
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import { clientTag } from './wire-tags.js';
import { FakeMewDaemon } from './daemon.js';
import type { ReceivedMessage } from './daemon.js';
import { isMewBuiltinScenarioName, MEW_BUILTIN_SCENARIOS } from './builtins.js';
import type { MewBuiltinScenarioName } from './builtins.js';
import type { MewDaemonScenario } from './scenario.js';
import { refuseUnknownKeys } from '../../text/option-keys.js';

export interface FakeMewDaemonOptions {
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** Host to listen on (default 127.0.0.1). */
  host?: string;
}

/** A running fake mew daemon. `url` is what `connectRun({ protocol: 'mew', url })` takes. */
export interface FakeMewDaemonServer {
  url: string;
  port: number;
  scenario: MewDaemonScenario;
  /** Every message received, in order, as sent (its tag spelled as the client spelled it). */
  readonly received: readonly ReceivedMessage[];
  /** The messages of one type (either tag spelling), in order. */
  receivedOf(type: string): ReceivedMessage[];
  /** Connections accepted so far. */
  readonly connections: number;
  /** The headers of every WebSocket handshake, in order (lower-case names). */
  readonly handshakes: ReadonlyArray<Readonly<Record<string, string | string[] | undefined>>>;
  /** Connections still open (0 once every client left). */
  openConnections(): number;
  /** Stops listening and drops every connection. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts a fake mew daemon (a {@link MewDaemonScenario} or a built-in name, default `chat`) listening on
 * 127.0.0.1 at a free port. It speaks mew's WebSocket protocol as the seed documents it (snake_case tags,
 * or PascalCase with `wireCase`), misbehaves as the scenario says, and records every message it received.
 * Close it when done.
 */
export async function fakeMewDaemon(scenario: MewDaemonScenario | MewBuiltinScenarioName = 'chat', options: FakeMewDaemonOptions = {}): Promise<FakeMewDaemonServer> {
  refuseUnknownKeys(options, Object.keys({ port: true, host: true } satisfies Record<keyof FakeMewDaemonOptions, true>), 'fakeMewDaemon');
  const script = typeof scenario === 'string' ? builtin(scenario) : scenario;
  const daemon = new FakeMewDaemon(script);
  const server = new WebSocketServer({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  const sockets = new Set<WebSocket>();
  const handshakes: Array<Record<string, string | string[] | undefined>> = [];
  server.on('connection', (socket, request) => {
    handshakes.push({ ...request.headers });
    sockets.add(socket);
    const link = daemon.connect({
      send: (text) => socket.readyState === socket.OPEN && socket.send(text),
      drop: () => socket.terminate(),
    });
    socket.on('message', (data, isBinary) => link.message(isBinary ? '' : data.toString('utf8')));
    socket.on('close', () => {
      sockets.delete(socket);
      link.closed();
    });
    socket.on('error', () => socket.terminate());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((resolve) => {
      for (const socket of sockets) socket.terminate();
      server.close(() => resolve());
    }));
  return {
    url: `ws://127.0.0.1:${port}`,
    port,
    scenario: script,
    get received() {
      return daemon.received;
    },
    receivedOf: (type) => daemon.received.filter((entry) => clientTag(entry.message['type']) === type),
    get connections() {
      return daemon.connections;
    },
    handshakes,
    openConnections: () => sockets.size,
    close,
    [Symbol.asyncDispose]: close,
  };
}

function builtin(name: string): MewDaemonScenario {
  if (!isMewBuiltinScenarioName(name)) throw new TypeError(`unknown fake mew scenario "${name}" (built-in: ${Object.keys(MEW_BUILTIN_SCENARIOS).join(', ')})`);
  return MEW_BUILTIN_SCENARIOS[name];
}
