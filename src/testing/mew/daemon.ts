// The fake mew daemon's logic, transport-free: sessions, receipts, liveness and scripted turns over abstract connections.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { encodeFakeMessage, readClientMessage } from './wire-tags.js';
import type { FakeMewMessage } from './wire-tags.js';
import { AssistantMessage, userMessage } from './parts.js';
import { runTurn } from './turn-runner.js';
import type { TurnContext } from './turn-runner.js';
import { turnOf } from './scenario.js';
import type { MewDaemonScenario } from './scenario.js';

/** One client connection as the daemon sees it (a WebSocket in the server, a recorder in unit tests). */
export interface DaemonConnection {
  /** Sends one text message. */
  send(text: string): void;
  /** Cuts the connection abruptly (no close frame). */
  drop(): void;
}

/** A message the daemon received: which connection (from 1), and the message as sent (its tag as spelled). */
export interface ReceivedMessage {
  connection: number;
  message: JsonObject;
}

interface Receipt {
  status: 'accepted' | 'rejected';
  message?: string;
}

interface Session {
  id: string;
  cwd: string | undefined;
  clients: Set<ClientLink>;
  receipts: Map<string, Receipt>;
  submissions: number;
  accepted: number;
  /** The turn running now, if any: cancel() stops it. */
  turn: { cancel(): void } | undefined;
  /** Requests waiting for any client's answer, by request id (JSON text: a string id and a numeric one differ), with the response type each takes. */
  waiting: Map<string, { response: string; resolve: (answer: JsonObject) => void }>;
  history: JsonValue[];
}

/** What a connection handler gives the server: feed it each message, tell it when the connection closed. */
export interface ClientLink {
  readonly number: number;
  message(text: string): void;
  closed(): void;
}

/**
 * Plays a mew daemon for every connection: `new_session`/`attach_session` -> `session_ready` and
 * `session_history`; `ping` -> `pong`; `submit_prompt` -> `prompt_receipt` then the scenario's next turn
 * (to every client of the session); duplicate request ids -> the original receipt; `read_prompt_receipt`;
 * `cancel`; responses to permission requests and questions (then `request_resolved` to all). When the last
 * client leaves, the running turn is cancelled, as mew does. Everything received is recorded.
 */
export class FakeMewDaemon {
  readonly scenario: MewDaemonScenario;
  /** Every message received, in order. */
  readonly received: ReceivedMessage[] = [];
  readonly #sessions = new Map<string, Session>();
  readonly #links = new Map<ClientLink, { send: (message: FakeMewMessage) => void; connection: DaemonConnection }>();
  #connections = 0;
  #nextSession = 0;
  #pongs = 0;
  #requests = 0;

  constructor(scenario: MewDaemonScenario) {
    this.scenario = scenario;
  }

  /** Connections opened so far. */
  get connections(): number {
    return this.#connections;
  }

  /** A client connected: the handler of its messages. */
  connect(connection: DaemonConnection): ClientLink {
    const number = ++this.#connections;
    let session: Session | undefined;
    let open = true;
    const send = (message: FakeMewMessage) => {
      if (open) connection.send(encodeFakeMessage(message, this.scenario.wireCase ?? 'snake_case'));
    };
    const link: ClientLink = {
      number,
      message: (text) => {
        if (!open) return;
        const message = readClientMessage(text);
        this.received.push({ connection: number, message: message === undefined ? { unreadable: text } : JSON.parse(text) as JsonObject });
        if (message === undefined) return send({ type: 'error', message: 'unreadable message' });
        session = this.#handle(message, session, link, send, connection);
      },
      closed: () => {
        if (!open) return;
        open = false;
        if (session === undefined) return;
        session.clients.delete(link);
        // mew: the last client leaving cancels the running turn.
        if (session.clients.size === 0) session.turn?.cancel();
      },
    };
    this.#links.set(link, { send, connection });
    return link;
  }

  #handle(message: FakeMewMessage, session: Session | undefined, link: ClientLink, send: (message: FakeMewMessage) => void, connection: DaemonConnection): Session | undefined {
    switch (message.type) {
      case 'ping':
        if (this.scenario.pongs === undefined || this.#pongs++ < this.scenario.pongs) {
          send({ type: 'pong', version: this.scenario.version ?? '0.0.0-fake', protocol_version: this.scenario.protocolVersion ?? 3 });
        }
        return session;
      case 'new_session':
      case 'attach_session':
        return this.#attach(message, link, send);
    }
    if (session === undefined) {
      send({ type: 'error', message: `${message.type} before new_session or attach_session` });
      return session;
    }
    switch (message.type) {
      case 'submit_prompt':
        this.#submit(message, session, send, connection);
        break;
      case 'read_prompt_receipt': {
        const requestId = String(message['request_id']);
        const receipt = session.receipts.get(requestId);
        send({ type: 'prompt_receipt', session_id: session.id, request_id: requestId, status: receipt?.status ?? 'unknown', ...(receipt?.message === undefined ? {} : { message: receipt.message }) });
        break;
      }
      case 'cancel':
        if (this.scenario.ignoreCancel !== true) session.turn?.cancel();
        break;
      case 'permission_response':
      case 'ask_user_response':
      case 'plan_approval_response':
      case 'goal_response':
        this.#respond(message, session, send);
        break;
      default:
        send({ type: 'error', message: `unknown message type ${message.type}` });
    }
    return session;
  }

  /** A client's response to a request, decoded as mew decodes it: a message that does not decode is an `error`, and settles nothing. */
  #respond(message: FakeMewMessage, session: Session, send: (message: FakeMewMessage) => void): void {
    // mew types request_id as its build does (u64, or a string): the other kind fails the message.
    const requestId = message['request_id'];
    const integers = this.scenario.requestIds === 'integer';
    const problem = (integers ? !Number.isSafeInteger(requestId) : typeof requestId !== 'string')
      ? `invalid type: ${JSON.stringify(requestId)}, expected ${integers ? 'u64' : 'a string'}`
      : RESPONSE_PROBLEMS[message.type]!(message);
    if (problem !== undefined) return send({ type: 'error', message: `invalid message: ${problem}` });
    const key = JSON.stringify(requestId);
    const waiting = session.waiting.get(key);
    if (waiting === undefined || waiting.response !== message.type) return;
    session.waiting.delete(key);
    this.#broadcast(session, { type: 'request_resolved', request_id: requestId! });
    waiting.resolve(message);
  }

  #attach(message: FakeMewMessage, link: ClientLink, send: (message: FakeMewMessage) => void): Session | undefined {
    let session: Session | undefined;
    if (message.type === 'attach_session') {
      session = this.#sessions.get(String(message['session_id']));
      if (session === undefined) {
        // mew-daemon's handle_connection: AttachError::NotFound -> Error { message: "session not found" }.
        send({ type: 'error', message: 'session not found' });
        return undefined;
      }
    } else {
      const id = `sess_fake_${++this.#nextSession}`;
      const cwd = typeof message['cwd'] === 'string' ? message['cwd'] : undefined;
      session = { id, cwd, clients: new Set(), receipts: new Map(), submissions: 0, accepted: 0, turn: undefined, waiting: new Map(), history: [...(this.scenario.history ?? [])] };
      this.#sessions.set(id, session);
    }
    session.clients.add(link);
    send({ type: 'session_ready', session_id: session.id, model: 'fake-model', provider: 'fake' });
    send({ type: 'session_history', messages: session.history });
    return session;
  }

  #submit(message: FakeMewMessage, session: Session, send: (message: FakeMewMessage) => void, connection: DaemonConnection): void {
    const requestId = String(message['request_id']);
    const previous = session.receipts.get(requestId);
    const receipt = (answer: Receipt) => send({ type: 'prompt_receipt', session_id: session.id, request_id: requestId, status: answer.status, ...(answer.message === undefined ? {} : { message: answer.message }) });
    if (previous !== undefined) return receipt(previous); // a duplicate id starts nothing
    const n = ++session.submissions;
    const lost = this.scenario.loseReceipt?.submission === n ? this.scenario.loseReceipt : undefined;
    if (lost !== undefined) {
      if (lost.status !== 'unknown') session.receipts.set(requestId, lost.status === 'accepted' ? { status: 'accepted' } : { status: 'rejected', message: lost.message ?? 'rejected while you were away' });
      if (lost.status === 'accepted') session.accepted++;
      connection.drop();
      return;
    }
    if (session.turn !== undefined) return receipt(remember(session, requestId, { status: 'rejected', message: 'a turn is already running' }));
    const turn = turnOf(this.scenario, session.accepted + 1);
    if (turn.rejected !== undefined) return receipt(remember(session, requestId, { status: 'rejected', message: turn.rejected }));
    session.accepted++;
    receipt(remember(session, requestId, { status: 'accepted' }));
    session.history.push(userMessage(session.id, String(message['text'])));
    const context: TurnContext = {
      broadcast: (out) => this.#broadcast(session, out),
      assistant: new AssistantMessage((out) => this.#broadcast(session, out), session.id, session.history),
      sessionId: session.id,
      raw: (text) => {
        for (const client of session.clients) this.#links.get(client)?.connection.send(text);
      },
      drop: () => {
        for (const client of [...session.clients]) this.#links.get(client)?.connection.drop();
      },
      requestId: (label) => (this.scenario.requestIds === 'integer' ? ++this.#requests : label),
      wait: (requestId, response, resolve) => session.waiting.set(JSON.stringify(requestId), { response, resolve }),
      unwait: (requestId) => session.waiting.delete(JSON.stringify(requestId)),
    };
    const running = runTurn(turn, context, session.accepted);
    session.turn = running;
    void running.done.then(() => {
      if (session.turn === running) session.turn = undefined;
    });
  }

  #broadcast(session: Session, message: FakeMewMessage): void {
    for (const client of session.clients) this.#links.get(client)?.send(message);
  }
}

/** mew-protocol's `PermissionDecision`, `#[serde(rename_all = "snake_case")]`. */
const PERMISSION_DECISIONS = ['allow_once', 'allow_session', 'deny'];

/**
 * Why mew-protocol's `ClientMessage` would not decode a response (undefined: it would): `PermissionResponse
 * {request_id, decision}`, `AskUserResponse {request_id, answers}`, `PlanApprovalResponse {request_id,
 * approved, feedback?}`, `GoalResponse {request_id, accepted}`.
 */
const RESPONSE_PROBLEMS: Readonly<Record<string, (message: FakeMewMessage) => string | undefined>> = {
  permission_response: (message) =>
    PERMISSION_DECISIONS.includes(message['decision'] as string) ? undefined : `unknown variant ${JSON.stringify(message['decision'])}, expected one of ${PERMISSION_DECISIONS.join(', ')}`,
  ask_user_response: (message) => (Array.isArray(message['answers']) && message['answers'].every((answer) => typeof answer === 'string') ? undefined : 'answers: expected a sequence of strings'),
  plan_approval_response: (message) =>
    typeof message['approved'] !== 'boolean' ? 'missing field `approved`' : message['feedback'] !== undefined && message['feedback'] !== null && typeof message['feedback'] !== 'string' ? 'feedback: expected a string' : undefined,
  goal_response: (message) => (typeof message['accepted'] === 'boolean' ? undefined : 'missing field `accepted`'),
};

function remember(session: Session, requestId: string, receipt: Receipt): Receipt {
  session.receipts.set(requestId, receipt);
  return receipt;
}
