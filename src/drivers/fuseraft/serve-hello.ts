// fuseraft serve's handshake: the headers a client sends, and the `hello` the daemon answers with (pure).
import type { ResolvedConnection } from '../../protocol/resolved-options.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { isObject } from '../shared/json-kinds.js';
import type { Frame } from './frames.js';

/** A task of this client still queued or running on the daemon (`hello.inFlight`). */
export interface InFlightTask {
  sessionId: string;
  task: string | undefined;
  status: string | undefined;
  position: number | undefined;
  /** The object as the daemon sent it (untrusted). */
  fields: JsonObject;
}

/** The daemon's `hello`, read. */
export interface Hello {
  protocolVersion: JsonValue | undefined;
  readOnly: boolean;
  inFlight: InFlightTask | undefined;
  /** Session ids of this client's tasks that finished while it was away (their `result`s follow). */
  pendingResults: string[];
  /** Whether the daemon holds task `sessionId` of this client (in flight, or a pending result). */
  owns(sessionId: string): boolean;
}

/** Reads a `hello` frame whose field types were checked (wrong ones removed). */
export function helloOf(frame: Frame): Hello {
  const raw = frame['inFlight'];
  let inFlight: InFlightTask | undefined;
  if (isObject(raw) && typeof raw['sessionId'] === 'string') {
    inFlight = {
      sessionId: raw['sessionId'],
      task: typeof raw['task'] === 'string' ? raw['task'] : undefined,
      status: typeof raw['status'] === 'string' ? raw['status'] : undefined,
      position: typeof raw['position'] === 'number' ? raw['position'] : undefined,
      fields: raw,
    };
  }
  const pending = frame['pendingResults'];
  const pendingResults = Array.isArray(pending) ? pending.filter((id): id is string => typeof id === 'string') : [];
  return {
    protocolVersion: frame['protocolVersion'],
    readOnly: frame['readOnly'] === true,
    inFlight,
    pendingResults,
    owns: (sessionId) => inFlight?.sessionId === sessionId || pendingResults.includes(sessionId),
  };
}

/**
 * The WebSocket handshake headers: `Authorization: Bearer <token>` only when a token is given,
 * `Fuseraft-Client-Id` only when a client id is given (checked by the protocol's validate). No Origin:
 * the daemon refuses a handshake that has one (the transport never sends it).
 */
export function serveHeaders(connection: ResolvedConnection): Record<string, string> {
  const headers: Record<string, string> = {};
  if (connection.url === undefined) return headers;
  if (connection.token !== undefined) headers['Authorization'] = `Bearer ${connection.token}`;
  if (connection.clientId !== undefined) headers['Fuseraft-Client-Id'] = connection.clientId;
  return headers;
}
