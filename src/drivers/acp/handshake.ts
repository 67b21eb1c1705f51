// An ACP agent's handshake: initialize (version 1, no fs or terminal offered; another version refused), the auth methods reported, then the session created, resumed or loaded, and a load's replay waited out.
import type { OutcomeErrorCode } from '../../protocol/outcome.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import type { RequestFailure } from '../shared/jsonrpc/peer.js';
import type { SetTimer } from '../shared/pending-requests.js';
import { ACP_VERSION, rpcErrorText } from './messages.js';
import type { StdioSessionFacts } from '../shared/stdio/session-io.js';

/** Sends one request bounded by `timeoutMs`; false when it could not be written. */
export type BoundedRequest = (method: string, params: JsonObject, timeoutMs: number, handlers: { result(value: JsonValue): void; failed(failure: RequestFailure): void }) => boolean;

export interface HandshakeOptions {
  cwd: string;
  resume: string | undefined;
  clientVersion: string;
  /** The bound of each request (the run's ready bound). */
  handshakeMs: number;
  /** After `session/load` answered, how long without an update ends its replay. */
  replayQuietMs: number;
}

/** The session the handshake ended with. */
export interface Established {
  sessionId: string;
  /** The answer to `session/new` (or `session/load`, `session/resume`): `modes`, `models`... */
  result: JsonObject;
  agentInfo: JsonObject | undefined;
  capabilities: JsonObject;
}

export interface HandshakeEnd {
  established(session: Established): void;
  /** A refusal the run cannot survive. */
  failed(code: OutcomeErrorCode, error: string): void;
}

/**
 * `initialize {protocolVersion: 1, clientCapabilities: {fs: {readTextFile: false, writeTextFile: false}, terminal:
 * false}, clientInfo}`: an answer with another `protocolVersion` is refused (`version-mismatch`); its `authMethods` are
 * reported, never answered (subvisor holds no credentials: the agent's environment must authenticate it). Then
 * `session/new {cwd, mcpServers: []}`, or for a resumed run `session/resume` when the agent offers it (no history
 * replayed), else `session/load`; neither offered, the run fails `usage-error`; refused, `unknown-session`.
 */
export class AcpHandshake {
  readonly #request: BoundedRequest;
  readonly #setTimer: SetTimer;
  readonly #facts: StdioSessionFacts;
  readonly #options: HandshakeOptions;
  readonly #end: HandshakeEnd;
  #loading = false;
  /** While `session/load`'s replay goes on: restarts the wait for its end. */
  #replayed: (() => void) | undefined;

  constructor(request: BoundedRequest, setTimer: SetTimer, facts: StdioSessionFacts, options: HandshakeOptions, end: HandshakeEnd) {
    this.#request = request;
    this.#setTimer = setTimer;
    this.#facts = facts;
    this.#options = options;
    this.#end = end;
  }

  start(): void {
    const params = {
      protocolVersion: ACP_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: 'subvisor', title: 'subvisor', version: this.#options.clientVersion },
    };
    this.#request('initialize', params, this.#options.handshakeMs, { result: (value) => this.#initialized(value), failed: (failure) => this.#refused('initialize', failure) });
  }

  /** Asked of each update: whether it is history (`session/load`'s replay), which also pushes the replay's end back. */
  replaying(): boolean {
    this.#replayed?.();
    return this.#loading;
  }

  #initialized(value: JsonValue): void {
    const result = isObject(value) ? value : {};
    const version = result['protocolVersion'];
    if (version !== ACP_VERSION) return this.#end.failed('version-mismatch', `the agent speaks ACP version ${JSON.stringify(version ?? null)}; subvisor speaks version ${ACP_VERSION}`);
    const agentInfo = isObject(result['agentInfo']) ? result['agentInfo'] : undefined;
    const methods = Array.isArray(result['authMethods']) ? result['authMethods'].filter(isObject) : [];
    if (methods.length > 0) {
      const ids = methods.map((method) => stringField(method, 'id') ?? '?');
      this.#facts.event({ type: 'info', nativeType: 'authMethods', summary: `the agent offers authentication (${ids.join(', ')}): subvisor does not call authenticate`, extra: { authMethods: ids } });
    }
    const capabilities = isObject(result['agentCapabilities']) ? result['agentCapabilities'] : {};
    const { method, params } = this.#sessionRequest(capabilities);
    if (method === undefined) return this.#end.failed('usage-error', 'the agent can neither load nor resume a session (its agentCapabilities offer neither session/load nor session/resume)');
    this.#loading = method === 'session/load';
    this.#request(method, params, this.#options.handshakeMs, {
      result: (answer) => {
        const established = () => this.#established(method, answer, agentInfo, capabilities);
        if (this.#loading) this.#afterReplay(established);
        else established();
      },
      failed: (failure) => this.#refused(method, failure),
    });
  }

  #sessionRequest(capabilities: JsonObject): { method: string | undefined; params: JsonObject } {
    const base = { cwd: this.#options.cwd, mcpServers: [] };
    const resume = this.#options.resume;
    if (resume === undefined) return { method: 'session/new', params: base };
    const session = isObject(capabilities['sessionCapabilities']) ? capabilities['sessionCapabilities'] : {};
    if (isObject(session['resume'])) return { method: 'session/resume', params: { sessionId: resume, ...base } };
    if (capabilities['loadSession'] === true) return { method: 'session/load', params: { sessionId: resume, ...base } };
    return { method: undefined, params: base };
  }

  /**
   * `session/load` answered: the session is ready once its replay is over, when no update came for `replayQuietMs`.
   * Gemini CLI 0.61.0 streams the history without awaiting it, so most of it comes after its answer; taken for the
   * first prompt's output it would be the answer's beginning.
   */
  #afterReplay(then: () => void): void {
    let timer: { clear(): void } | undefined;
    const wait = () => {
      timer?.clear();
      timer = this.#setTimer(() => {
        this.#replayed = undefined;
        this.#loading = false;
        then();
      }, this.#options.replayQuietMs);
    };
    this.#replayed = wait;
    wait();
  }

  #established(method: string, value: JsonValue, agentInfo: JsonObject | undefined, capabilities: JsonObject): void {
    const result = isObject(value) ? value : {};
    const sessionId = method === 'session/new' ? stringField(result, 'sessionId') : this.#options.resume;
    if (sessionId === undefined || sessionId === '') return this.#end.failed('protocol-error', 'the agent answered session/new without a sessionId');
    this.#end.established({ sessionId, result, agentInfo, capabilities });
  }

  #refused(step: string, failure: RequestFailure): void {
    this.#loading = false;
    // The process went (its exit decides), or the ready bound ends the run: nothing to add.
    if (failure.kind === 'closed') return;
    if (failure.kind === 'timeout') return this.#facts.event({ type: 'error', error: `the agent did not answer ${step}: ${failure.reason}`, source: 'subvisor' });
    const code: OutcomeErrorCode = step === 'session/load' || step === 'session/resume' ? 'unknown-session' : 'protocol-error';
    this.#end.failed(code, `the agent refused ${step}: ${failure.kind === 'error' ? rpcErrorText(failure.error) : failure.reason}`);
  }
}
