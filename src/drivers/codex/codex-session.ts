// One Codex app-server conversation: the handshake, the thread, turns started, steered and interrupted, run controls to JSON-RPC requests, the end. Pure: no process.
import { actOnControl, advance } from '../../wire/index.js';
import type { JsonObject, JsonValue, RunState } from '../../wire/index.js';
import type { Control } from '../../protocol/driver.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { OutcomeErrorCode } from '../../protocol/outcome.js';
import type { AnswerQuestionCallback, ApproveCallback } from '../../protocol/requests.js';
import { JsonRpcPeer } from '../shared/jsonrpc/peer.js';
import type { RequestFailure } from '../shared/jsonrpc/peer.js';
import { dropHeld, FINALIZE_PROMPT, finalizeNote, reportResult } from '../shared/session.js';
import type { ChildEnd, ControlVerdict, HeldFollowUp } from '../shared/session.js';
import type { StdioLines } from '../shared/stdio/channel.js';
import { threadIdOf } from './messages.js';
import { NotificationMap } from './notification-map.js';
import { initializeParams, threadRequest } from './requests-out.js';
import { CodexRequests } from './server-requests.js';
import type { StdioSession } from '../shared/stdio/session-driver.js';
import type { StdioSessionFacts, StdioSessionIo } from '../shared/stdio/session-io.js';
import { CodexTurns } from './turns.js';

export interface CodexSessionOptions {
  /** The protocol's registered name, which `approve` sees as `request.protocol`. */
  protocol: string;
  task: string | undefined;
  cwd: string;
  /** The caller's arguments after `app-server` (their `-c` overrides decide what `thread/start` leaves out). */
  args: readonly string[];
  /** A thread to resume (`thread/resume`) instead of starting one. */
  resume: string | undefined;
  approve?: ApproveCallback | undefined;
  answerQuestion?: AnswerQuestionCallback | undefined;
  /** The run's output schema, sent with every `turn/start` (Codex constrains the turn's final message with it). */
  outputSchema: unknown;
  maxAnswerChars: number;
  /** subvisor's version, for `initialize`'s `clientInfo`. */
  clientVersion: string;
  /** The bound of `initialize` and `thread/start` (the run's ready bound). */
  handshakeMs: number;
  /** The bound of every other request subvisor sends (`turn/start`, `turn/steer`, `turn/interrupt`). */
  requestMs: number;
}

/**
 * The driver logic of one `codex app-server` process. The run state follows the (state, control) table
 * (`actOnControl`), so every control gets the Ack a Fen child would give; what each does is one of Codex's
 * requests: a prompt (and a steer or follow-up when no turn runs) is `turn/start`, answered `accepted` when
 * Codex answers it with the turn; a steer while a turn runs is `turn/steer` (accepted when Codex takes it,
 * delivered when its user message shows in the turn, dropped if the turn ends first); a follow-up while a turn
 * runs waits for the turn's end, then is the next `turn/start`; cancel answers waiting requests `cancel`, sends
 * `turn/interrupt` and ends stdin once the turn is over; close ends stdin (after the turn); finalize interrupts
 * the turn, then starts one last turn with its note, then ends stdin.
 */
export class CodexSession implements StdioSession {
  readonly #io: StdioSessionIo;
  readonly #facts: StdioSessionFacts;
  readonly #options: CodexSessionOptions;
  readonly #peer: JsonRpcPeer;
  readonly #requests: CodexRequests;
  readonly #notifications: NotificationMap;

  #state: RunState = 'starting';
  #nextRef = 1;
  readonly #taskRef: number | undefined;
  #threadId: string | undefined;
  #fatal = false;

  readonly #turns: CodexTurns;
  /** Follow-ups waiting for the turn to end. */
  #held: HeldFollowUp[] = [];

  #finalize: 'none' | 'interrupting' | 'final-turn' = 'none';
  #finalNote = FINALIZE_PROMPT;
  #cancelled = false;
  #inputEnded = false;

  constructor(io: StdioSessionIo, facts: StdioSessionFacts, options: CodexSessionOptions) {
    this.#io = io;
    this.#facts = facts;
    this.#options = options;
    this.#turns = new CodexTurns(
      (method, params, handlers) => this.#request(method, params, options.requestMs, handlers),
      facts,
      {
        threadId: () => this.#threadId!,
        // A turn Codex began by itself moves a ready run to running, as a Fen child's does.
        opened: () => void (this.#state === 'ready' && (this.#state = 'running')),
        interruptOnOpen: () => this.#cancelled || this.#finalize === 'interrupting',
        ended: () => this.#afterTurn(),
        interruptFailed: () => void (this.#cancelled && this.#endInput()),
      },
      { outputSchema: options.outputSchema, maxAnswerChars: options.maxAnswerChars },
    );
    this.#notifications = new NotificationMap(facts, {
      threadId: () => this.#threadId,
      turn: () => this.#turns.current,
      turnStarted: (turnId) => this.#turns.started(turnId),
      turnCompleted: (turnId, status, turn) => this.#turns.completed(turnId, status, turn),
      resolved: (requestId) => this.#requests.resolved(requestId),
    });
    this.#requests = new CodexRequests(
      { protocol: options.protocol, approve: options.approve, answerQuestion: options.answerQuestion },
      { report: (draft) => facts.event(draft), fileChanges: (itemId) => this.#turns.current?.fileChanges(itemId) },
    );
    this.#peer = new JsonRpcPeer(
      { send: (message) => io.send(message), writeVersion: false, setTimer: io.setTimer },
      {
        requests: this.#requests.handlers(),
        notification: (method, params) => this.#notifications.take(method, params),
        unknownMethod: (method, id) =>
          facts.event({ type: 'info', nativeType: method, summary: `codex asked for ${method}, which subvisor does not serve: answered -32601`, requestId: String(id) }),
        rejected: (rejection) => facts.rejected(rejection),
      },
    );
    if (options.task !== undefined) this.#taskRef = this.#nextRef++;
  }

  /** The ref of the task prompt (answered once Codex started its turn). */
  get taskRef(): number | undefined {
    return this.#taskRef;
  }

  /** The mirrored run state. */
  get state(): RunState {
    return this.#state;
  }

  /** Where the stdio channel hands Codex's stdout lines. */
  get lines(): StdioLines {
    return this.#peer.lines;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The handshake                                                                                  */
  /* ---------------------------------------------------------------------------------------------- */

  /** The process is up: `initialize`, then `initialized` and `thread/start` (or `thread/resume`). */
  start(): void {
    this.#request('initialize', initializeParams(this.#options.clientVersion), this.#options.handshakeMs, {
      result: () => {
        this.#peer.notify('initialized');
        const { method, params } = threadRequest(this.#options);
        this.#request(method, params, this.#options.handshakeMs, { result: (value) => this.#threadStarted(value), failed: (failure) => this.#noThread(method, failure) });
      },
      failed: (failure) => this.#noThread('initialize', failure),
    });
  }

  /** `thread/start`'s (or `thread/resume`'s) answer: the thread id is the session; the model Codex chose is the outcome's. */
  #threadStarted(result: JsonValue): void {
    const threadId = threadIdOf(result);
    if (threadId === undefined) return this.#fail('protocol-error', 'codex answered the thread request without a thread id');
    this.#threadId = threadId;
    this.#facts.session(threadId);
    // Cancelled while the handshake ran: stdin has ended already.
    if (this.#state !== 'starting') return;
    this.#state = advance(this.#state, 'started');
    this.#facts.ready();
    const settings = pick(result as JsonObject, ['model', 'modelProvider', 'cwd', 'approvalPolicy', 'sandbox', 'reasoningEffort']);
    this.#facts.event({ type: 'ready', extra: { threadId, ...settings } });
    const model = settings['model'];
    if (typeof model === 'string') {
      const started: RunEventDraftOf<'agent-started'> = { type: 'agent-started', model };
      if (typeof settings['modelProvider'] === 'string') started.provider = settings['modelProvider'];
      this.#facts.event(started);
    }
    if (this.#taskRef !== undefined && this.#state === 'ready') {
      this.#state = 'running';
      this.#turns.start({ ref: this.#taskRef, kind: 'task', text: this.#options.task! });
    }
  }

  #noThread(step: string, failure: RequestFailure): void {
    // The process went (its exit decides), or the ready bound ends the run: nothing to add.
    if (failure.kind === 'closed') return;
    if (failure.kind === 'timeout') return this.#facts.event({ type: 'error', error: `codex did not answer ${step}: ${failure.reason}`, source: 'subvisor' });
    const code = step === 'thread/resume' ? 'unknown-session' : 'protocol-error';
    this.#fail(code, `codex refused ${step}: ${failure.kind === 'error' ? failure.error.message : failure.reason}`);
  }

  #fail(code: OutcomeErrorCode, error: string): void {
    this.#fatal = true;
    this.#requests.shutDown();
    this.#facts.fatal(code, error);
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
      moveTo: (next) => (this.#state = next),
      actions: {
        // Answered when Codex answers turn/start (accepted with the turn, or rejected with its error).
        'start-turn': () => this.#turns.start({ ref, kind: control.type === 'prompt' ? 'prompt' : (control.type as 'steer' | 'follow-up'), text }) ?? { ref },
        'queue-steer': () => this.#turns.steer({ ref, text }) ?? { ref },
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
          this.#turns.interrupt();
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

  /** Cancel: every waiting request answered `cancel`, held inputs dropped, the turn interrupted; stdin ends once it is over. */
  #cancel(): void {
    this.#cancelled = true;
    this.#requests.shutDown();
    dropHeld(this.#held, this.#facts, 'the run was cancelled');
    if (!this.#turns.interrupt()) this.#endInput();
  }

  /** What the end of a turn (or a turn/start refused) sets off: the end of stdin, the finalize's last turn, the next follow-up. */
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
          this.#turns.start({ ref: undefined, kind: 'final', text: this.#finalNote });
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
    this.#turns.start({ ref: next.ref, kind: 'follow-up', text: next.text, held: true });
  }

  #endInput(): void {
    if (this.#inputEnded) return;
    this.#inputEnded = true;
    this.#io.endInput();
  }

  /** Sends one request, bounded; false when it could not be written. */
  #request(method: string, params: JsonObject, timeoutMs: number, handlers: { result(value: JsonValue): void; failed(failure: RequestFailure): void }): boolean {
    const sent = this.#peer.request(method, params, handlers, { timeoutMs });
    if (!sent.ok) this.#facts.event({ type: 'error', error: `could not send ${method} to codex: ${sent.reason}`, source: 'subvisor' });
    return sent.ok;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The end                                                                                        */
  /* ---------------------------------------------------------------------------------------------- */

  /**
   * The process is gone: how the run ended as Codex showed it, or undefined when it did not say (it exited before
   * subvisor ended its stdin: a crash; a protocol failure): the run core decides then. After subvisor ended stdin
   * and Codex exited 0: `cancelled` when cancelled, `failed` with the model's message when the last turn failed,
   * `cancelled` when it was interrupted, else `done` with the last completed turn's answer.
   */
  finish(exit: { exitCode: number | null; signal: string | null }): ChildEnd | undefined {
    this.#peer.close('codex exited');
    this.#requests.shutDown();
    dropHeld(this.#held, this.#facts, 'codex exited');
    if (this.#fatal) return undefined;
    if (this.#cancelled) return { status: 'cancelled' };
    if (!this.#inputEnded) return undefined;
    if (exit.exitCode !== 0) return { status: 'failed', error: `codex app-server ${exit.signal === null ? `exited with code ${exit.exitCode}` : `was killed by ${exit.signal}`} after its stdin ended` };
    const last = this.#turns.last;
    if (last.status === 'failed') return { status: 'failed', error: last.error ?? 'the last turn failed' };
    if (last.status === 'interrupted') return { status: 'cancelled', error: 'codex interrupted the last turn' };
    reportResult(this.#facts, 'end_turn', this.#turns.answer, this.#turns.usage);
    return { status: 'done' };
  }

  /** Nothing more is read or sent (the run is over). */
  dispose(): void {
    this.#peer.close('the run ended');
  }
}

/** The members of `object` named (those it has). */
function pick(object: JsonObject, names: readonly string[]): JsonObject {
  const picked: JsonObject = {};
  for (const name of names) if (object[name] !== undefined) picked[name] = object[name];
  return picked;
}

