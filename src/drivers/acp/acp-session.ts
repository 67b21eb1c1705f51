// One Agent Client Protocol conversation: initialize, the session created, loaded or resumed, prompts and their cancel, run controls to ACP's requests, the end. Pure: no process.
import { actOnControl, advance } from '../../wire/index.js';
import type { JsonObject, JsonValue, RunState } from '../../wire/index.js';
import type { Control } from '../../protocol/driver.js';
import type { OutcomeErrorCode } from '../../protocol/outcome.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { ApproveCallback } from '../../protocol/requests.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import { JsonRpcPeer } from '../shared/jsonrpc/peer.js';
import type { RequestFailure } from '../shared/jsonrpc/peer.js';
import { dropHeld, FINALIZE_PROMPT, finalizeNote, reportResult } from '../shared/session.js';
import type { ChildEnd, ControlVerdict, HeldFollowUp } from '../shared/session.js';
import type { StdioLines } from '../shared/stdio/channel.js';
import { AcpHandshake } from './handshake.js';
import type { Established } from './handshake.js';
import { AcpPermissions } from './permissions.js';
import type { StdioSession } from '../shared/stdio/session-driver.js';
import type { StdioSessionFacts, StdioSessionIo } from '../shared/stdio/session-io.js';
import { AcpTurns } from './turns.js';
import { UpdateMap } from './updates.js';

export interface AcpSessionOptions {
  /** The protocol's registered name, which `approve` sees as `request.protocol`. */
  protocol: string;
  task: string | undefined;
  /** The session's working directory (absolute: ACP requires it). */
  cwd: string;
  /** A session to resume (`session/resume`, else `session/load`, as the agent's capabilities offer). */
  resume: string | undefined;
  approve?: ApproveCallback | undefined;
  maxAnswerChars: number;
  /** subvisor's version, for `initialize`'s `clientInfo`. */
  clientVersion: string;
  /** The bound of `initialize` and of creating the session (the run's ready bound). */
  handshakeMs: number;
  /** How long a cancelled prompt may take to answer `cancelled` before stdin ends anyway. */
  cancelGraceMs: number;
  /** After `session/load` answered, how long without an update ends its replay of the history (then the run is ready). */
  replayQuietMs: number;
}

/** Why a steer is refused while a turn runs. */
export const STEER_REFUSED = 'ACP v1 has no steer: a prompt is running (send a follow-up to queue the text as the next prompt, or cancel)';

/**
 * The driver logic of one ACP agent. The run state follows the (state, control) table (`actOnControl`); what each
 * control does is one of ACP's messages: a prompt (and a steer or follow-up when no turn runs) is `session/prompt`,
 * accepted once written; a steer while a turn runs is refused (ACP v1 has no way into a running turn, and Gemini CLI
 * 0.61.0 cancels a running prompt when another arrives); a follow-up then waits for the turn's end and is the next
 * `session/prompt`; cancel is the notification `session/cancel`, every waiting permission answered `cancelled`, and
 * stdin ends once the prompt answered (or `cancelGraceMs` passed); close ends stdin after the turn; finalize cancels
 * the turn, then sends one last prompt with its note, then ends stdin.
 */
export class AcpSession implements StdioSession {
  readonly #io: StdioSessionIo;
  readonly #facts: StdioSessionFacts;
  readonly #options: AcpSessionOptions;
  readonly #peer: JsonRpcPeer;
  readonly #handshake: AcpHandshake;
  readonly #permissions: AcpPermissions;
  readonly #updates: UpdateMap;
  readonly #turns: AcpTurns;

  #state: RunState = 'starting';
  #nextRef = 1;
  readonly #taskRef: number | undefined;
  #sessionId: string | undefined;
  #fatal = false;
  /** Follow-ups waiting for the turn to end. */
  #held: HeldFollowUp[] = [];
  #finalize: 'none' | 'interrupting' | 'final-turn' = 'none';
  #finalNote = FINALIZE_PROMPT;
  #cancelled = false;
  #inputEnded = false;

  constructor(io: StdioSessionIo, facts: StdioSessionFacts, options: AcpSessionOptions) {
    this.#io = io;
    this.#facts = facts;
    this.#options = options;
    this.#handshake = new AcpHandshake((method, params, timeoutMs, handlers) => this.#request(method, params, timeoutMs, handlers), io.setTimer, facts, options, {
      established: (session) => this.#sessionCreated(session),
      failed: (code, error) => this.#fail(code, error),
    });
    this.#updates = new UpdateMap(facts, { sessionId: () => this.#sessionId, loading: () => this.#handshake.replaying() });
    this.#permissions = new AcpPermissions(
      { protocol: options.protocol, approve: options.approve },
      {
        report: (draft) => facts.event(draft),
        announce: (toolCall) => this.#updates.announce(toolCall),
        denied: (toolCallId, why) => this.#updates.denied(toolCallId, why),
      },
    );
    this.#peer = new JsonRpcPeer(
      { send: (message) => io.send(message), setTimer: io.setTimer },
      {
        requests: this.#permissions.handlers(),
        notification: (method, params) => this.#notification(method, params),
        unknownMethod: (method, id) =>
          facts.event({ type: 'info', nativeType: method, summary: `the agent asked for ${method}, which subvisor does not offer: answered -32601`, requestId: String(id) }),
        rejected: (rejection) => facts.rejected(rejection),
      },
    );
    this.#turns = new AcpTurns(
      (method, params, handlers) => this.#request(method, params, undefined, handlers),
      facts,
      { sessionId: () => this.#sessionId!, ended: () => this.#afterTurn(), notify: (method, params) => this.#peer.notify(method, params) },
      this.#updates,
      options.maxAnswerChars,
    );
    if (options.task !== undefined) this.#taskRef = this.#nextRef++;
  }

  /** The ref of the task prompt (accepted once the session exists and its prompt is written). */
  get taskRef(): number | undefined {
    return this.#taskRef;
  }

  get state(): RunState {
    return this.#state;
  }

  /** Where the stdio channel hands the agent's stdout lines. */
  get lines(): StdioLines {
    return this.#peer.lines;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The handshake                                                                                  */
  /* ---------------------------------------------------------------------------------------------- */

  /** The process is up: `initialize`, then the session. */
  start(): void {
    this.#handshake.start();
  }

  /** The session exists: ready (with what the agent said of itself), then the task as the first prompt. */
  #sessionCreated({ sessionId, result, agentInfo, capabilities }: Established): void {
    this.#sessionId = sessionId;
    this.#facts.session(sessionId);
    // Cancelled while the handshake ran: stdin has ended already.
    if (this.#state !== 'starting') return;
    this.#state = advance(this.#state, 'started');
    this.#facts.ready();
    const extra: JsonObject = { sessionId, agentCapabilities: capabilities };
    if (agentInfo !== undefined) extra['agentInfo'] = agentInfo;
    for (const name of ['modes', 'models']) if (result[name] !== undefined) extra[name] = result[name]!;
    this.#facts.event({ type: 'ready', extra });
    const models = isObject(result['models']) ? result['models'] : {};
    const model = stringField(models, 'currentModelId');
    if (model !== undefined) {
      const started: RunEventDraftOf<'agent-started'> = { type: 'agent-started', model };
      const name = agentInfo === undefined ? undefined : stringField(agentInfo, 'name');
      if (name !== undefined) started.provider = name;
      this.#facts.event(started);
    }
    if (this.#taskRef !== undefined && this.#state === 'ready') {
      this.#state = 'running';
      this.#turns.start({ ref: this.#taskRef, kind: 'task', text: this.#options.task! });
    }
  }

  #fail(code: OutcomeErrorCode, error: string): void {
    this.#fatal = true;
    this.#permissions.shutDown();
    this.#facts.fatal(code, error);
  }

  #notification(method: string, params: JsonValue | undefined): void {
    if (method === 'session/update') return this.#updates.take(params);
    if (method === '$/cancel_request' && isObject(params) && this.#permissions.withdraw(params['requestId'])) return;
    const draft: RunEventDraftOf<'info'> = { type: 'info', nativeType: method };
    if (isObject(params)) draft.extra = params;
    this.#facts.event(draft);
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Controls                                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  /** Decides and carries out one control of the run core. */
  send(control: Control): ControlVerdict {
    const ref = this.#nextRef++;
    const text = 'text' in control ? control.text : '';
    const accepted: ControlVerdict = { ref, status: 'accepted' };
    return actOnControl(this.#state, control.type, {
      refused: ({ status, reason }) => (reason === undefined ? { ref, status } : { ref, status, reason }),
      veto: (action) => (action === 'queue-steer' ? { ref, status: 'rejected', reason: STEER_REFUSED } : undefined),
      moveTo: (next) => (this.#state = next),
      actions: {
        'start-turn': () => this.#turns.start({ ref, kind: control.type === 'prompt' ? 'prompt' : (control.type as 'steer' | 'follow-up'), text }) ?? { ref },
        'queue-steer': () => ({ ref, status: 'rejected', reason: STEER_REFUSED }),
        'queue-follow-up': () => {
          this.#held.push({ ref, text });
          return accepted;
        },
        'start-final-turn': () => {
          this.#finalize = 'final-turn';
          this.#finalNote = finalizeNote(control);
          this.#turns.start({ ref: undefined, kind: 'final', text: this.#finalNote });
          return accepted;
        },
        'interrupt-turn': () => {
          this.#finalize = 'interrupting';
          this.#finalNote = finalizeNote(control);
          dropHeld(this.#held, this.#facts, 'the run is finalizing');
          this.#turns.cancel();
          // ACP: after session/cancel every waiting permission is answered cancelled (later ones too: the last turn is tool-free).
          this.#permissions.shutDown();
          return accepted;
        },
        'close-after-turn': () => {
          dropHeld(this.#held, this.#facts, 'the run is closing');
          return accepted;
        },
        finish: () => {
          this.#endInput();
          return accepted;
        },
        cancel: () => {
          this.#cancel();
          return accepted;
        },
      },
    });
  }

  /** Cancel: `session/cancel`, every waiting permission answered `cancelled`, held inputs dropped; stdin ends once the prompt answered. */
  #cancel(): void {
    this.#cancelled = true;
    const running = this.#turns.cancel();
    this.#permissions.shutDown();
    dropHeld(this.#held, this.#facts, 'the run was cancelled');
    if (!running) return this.#endInput();
    this.#io.setTimer(() => this.#endInput(), this.#options.cancelGraceMs);
  }

  /**
   * What the end of a turn (or a prompt not written) sets off: the end of stdin, the finalize's last turn, the next
   * follow-up. A next prompt is sent a microtask later: ACP's turn opens when its prompt is written, and its
   * `turn-started` must follow the `turn-complete` of the turn that just ended.
   */
  #afterTurn(): void {
    if (this.#cancelled) return this.#endInput();
    switch (this.#state) {
      case 'running':
        this.#state = advance(this.#state, 'turn-done');
        break;
      case 'closing':
        this.#state = advance(this.#state, 'turn-done');
        return this.#endInput();
      case 'finalizing':
        if (this.#finalize === 'interrupting') {
          this.#finalize = 'final-turn';
          // Started after the core heard the cancelled turn end: queued behind it.
          queueMicrotask(() => void (this.#cancelled || this.#inputEnded || this.#turns.start({ ref: undefined, kind: 'final', text: this.#finalNote })));
          return;
        }
        this.#state = advance(this.#state, 'final-turn-done');
        return this.#endInput();
      default:
        return;
    }
    const next = this.#held.shift();
    if (next === undefined) return;
    this.#state = 'running';
    queueMicrotask(() => {
      // Cancelled or closed by a listener of the turn's end meanwhile: the follow-up never left.
      if (this.#cancelled || this.#inputEnded) return this.#facts.delivery(next.ref, 'dropped');
      this.#turns.start({ ref: next.ref, kind: 'follow-up', text: next.text, held: true });
    });
  }

  #endInput(): void {
    if (this.#inputEnded) return;
    this.#inputEnded = true;
    this.#io.endInput();
  }

  /** Sends one request (bounded when `timeoutMs` is given); false when it could not be written. */
  #request(method: string, params: JsonObject, timeoutMs: number | undefined, handlers: { result(value: JsonValue): void; failed(failure: RequestFailure): void }): boolean {
    const sent = this.#peer.request(method, params, handlers, timeoutMs === undefined ? {} : { timeoutMs });
    if (!sent.ok) this.#facts.event({ type: 'error', error: `could not send ${method} to the agent: ${sent.reason}`, source: 'subvisor' });
    return sent.ok;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The end                                                                                        */
  /* ---------------------------------------------------------------------------------------------- */

  /**
   * The process is gone: how the run ended as the agent showed it, or undefined when it did not say (it exited before
   * subvisor ended its stdin: a crash; a protocol failure): the run core decides then. After subvisor ended stdin
   * and the agent exited 0: `cancelled` when cancelled, `failed` with the agent's message when the last turn failed
   * or was refused, `cancelled` when it was cancelled, else `done` with the last answer.
   */
  finish(exit: { exitCode: number | null; signal: string | null }): ChildEnd | undefined {
    this.#peer.close('the agent exited');
    this.#permissions.shutDown();
    dropHeld(this.#held, this.#facts, 'the agent exited');
    if (this.#fatal) return undefined;
    if (this.#cancelled) return { status: 'cancelled' };
    if (!this.#inputEnded) return undefined;
    const last = this.#turns.last;
    if (last.end === 'error' || last.end === 'refusal') return { status: 'failed', error: last.error ?? 'the last prompt failed' };
    if (last.end === 'cancelled') return { status: 'cancelled', error: 'the agent cancelled the last prompt' };
    if (exit.exitCode !== 0 && exit.signal === null) return { status: 'failed', error: `the agent exited with code ${exit.exitCode} after its stdin ended` };
    reportResult(this.#facts, last.end ?? 'end_turn', this.#turns.answer, this.#turns.usage);
    return { status: 'done' };
  }

  /** Nothing more is read or sent (the run is over). */
  dispose(): void {
    this.#peer.close('the run ended');
  }
}
