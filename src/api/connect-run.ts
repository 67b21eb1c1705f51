// connectRun: validates the options of a run on a daemon (where it listens, how to attach) and starts it with its protocol's driver.
import { CONNECT_PROTOCOLS, connectProtocolNamed } from './registry.js';
import { safeTarget } from '../drivers/shared/socket/connection.js';
import type { Protocol } from '../protocol/driver.js';
import { CONNECT_OPTION_KEYS, refuseNul, refuseUnknownKeys } from './option-checks.js';
import type { ResolvedConnection, ResolvedRunOptions } from '../protocol/resolved-options.js';
import { openJournal } from './journal-option.js';
import { CONNECT_DEFAULTS, duration, resolveOptions, startRun, tagCase, validateFor } from './spawn-run.js';
import type { ConnectOptions, Run, RunOptions } from './types.js';

export { CONNECT_DEFAULTS };

/**
 * Attaches to a session or task on a running daemon (`options.protocol`) over a WebSocket or a Unix
 * socket, and supervises it with the same {@link Run} handle as `spawnRun`. No process is started:
 * `pid` is undefined, the outcome's `exitCode`/`signal` are null and its output tail is empty.
 *
 * Throws synchronously (`TypeError`/`RangeError`) only on invalid options, before anything is
 * connected; a daemon that cannot be reached ends the run `failed` with `errorCode`
 * `connection-refused`. `run.outcome` never rejects.
 */
export function connectRun<T = unknown>(options: ConnectOptions<T>): Run<T> {
  const protocol = connectProtocolOf(options);
  const resolved = resolveConnectOptions(options);
  validateFor(protocol, resolved);
  // A daemon has no environment of ours: the run's context goes in the WebSocket handshake, when there is one.
  return startRun(resolved, protocol, { journal: openJournal(resolved), telemetry: { tracing: options.tracing, callerEnv: [] } }) as Run<T>;
}

function connectProtocolOf(options: ConnectOptions): Protocol {
  if (typeof options !== 'object' || options === null) throw new TypeError('connectRun needs an options object');
  const name: unknown = options.protocol;
  const protocol = typeof name === 'string' ? connectProtocolNamed(name) : undefined;
  if (protocol === undefined) {
    const known = Object.keys(CONNECT_PROTOCOLS).map((key) => `'${key}'`);
    throw new TypeError(`options.protocol must be one of ${known.length === 0 ? '(none registered)' : known.join(', ')}`);
  }
  return protocol;
}

/** Applies the defaults and checks the options every daemon protocol shares. */
export function resolveConnectOptions(options: ConnectOptions): ResolvedRunOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('connectRun needs an options object');
  if ('durable' in options) {
    throw new TypeError('a daemon keeps its sessions itself: re-attach to one with connectRun({ resume }) (mew: sessionId); durable applies to spawnRun of a Fen child');
  }
  refuseUnknownKeys(options, CONNECT_OPTION_KEYS, 'connectRun');
  const { protocol, url, socketPath, token, clientId, resume, sessionId, mewTagCase, pingIntervalMs, pongTimeoutMs, reconnectGraceMs, ...shared } = options;
  if ((url === undefined) === (socketPath === undefined)) {
    throw new TypeError('connectRun needs exactly one of options.url (a ws:// or wss:// URL) and options.socketPath');
  }
  if (url !== undefined) checkUrl(url);
  if (socketPath !== undefined) {
    if (typeof socketPath !== 'string' || socketPath === '') throw new TypeError('options.socketPath must be a non-empty string');
    refuseNul('socketPath', socketPath);
  }
  if (token !== undefined) checkToken(token);
  for (const [name, value] of [['clientId', clientId], ['resume', resume], ['sessionId', sessionId]] as const) {
    if (value === undefined) continue;
    if (typeof value !== 'string' || value === '') throw new TypeError(`options.${name} must be a non-empty string`);
    refuseNul(name, value);
  }
  if (resume !== undefined && shared.task !== undefined) {
    throw new TypeError('pass either options.task (start new work) or options.resume (re-attach to earlier work), not both');
  }
  const connection: ResolvedConnection = {
    url,
    socketPath,
    token,
    clientId,
    resume,
    sessionId,
    mewTagCase: tagCase(mewTagCase),
    pingIntervalMs: duration('pingIntervalMs', pingIntervalMs ?? CONNECT_DEFAULTS.pingIntervalMs),
    pongTimeoutMs: duration('pongTimeoutMs', pongTimeoutMs ?? CONNECT_DEFAULTS.pongTimeoutMs),
    reconnectGraceMs: duration('reconnectGraceMs', reconnectGraceMs ?? CONNECT_DEFAULTS.reconnectGraceMs),
  };
  // What errors and the outcome show as the run's "command": never the token, never URL user info or query.
  const command = safeTarget(url !== undefined ? { url } : { socketPath: socketPath! });
  const common = resolveOptions({ ...(shared as Omit<RunOptions, 'command'>), command });
  return { ...common, protocol, args: [], env: {}, connection };
}

function checkUrl(url: unknown): void {
  if (typeof url !== 'string' || url === '') throw new TypeError('options.url must be a non-empty ws:// or wss:// URL');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError('options.url is not a valid URL');
  }
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') {
    throw new TypeError(`options.url must be a ws:// or wss:// URL, not ${parsed.protocol}//`);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new TypeError('options.url must not carry user info: pass the secret as options.token');
  }
}

/** A token goes into a header: visible ASCII only. The error never repeats it. */
function checkToken(token: unknown): void {
  if (typeof token !== 'string' || token === '') throw new TypeError('options.token must be a non-empty string');
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new TypeError('options.token must be visible ASCII characters only (no spaces, line breaks or other control characters)');
  }
}
