// One mew daemon session: decoded server messages to facts and events, run controls to client messages. Pure: no socket.
import { addUsage, advance, decide } from '../../wire/index.js';
import type { RunState, Usage } from '../../wire/index.js';
import { passthrough, withExtras } from '../fuseraft/event-drafts.js';
import type { EventDraft } from '../fuseraft/event-drafts.js';
import type { ChildEnd, SessionAnswer } from '../fuseraft/session-io.js';
import { checkMessage, MEW_MIN_PROTOCOL_VERSION, snakeTag, spellTag, stringField } from './messages.js';
import type { MewMessage } from './messages.js';
import type { JsonValue } from '../../wire/index.js';
import { RequestDesk } from './request-desk.js';
import type { MewControl, MewFacts, MewFailure, MewIo, MewSessionOptions, MewVerdict } from './session-types.js';
import { receiptOf, Submissions } from './submissions.js';
import type { Submission } from './submissions.js';
import { TURN_MESSAGES, TurnStream } from './turn-stream.js';

/** The text of the last turn `finalize` starts when the caller gives no note. */
export const MEW_FINALIZE_PROMPT =
  'Stop working on the task now. Do not call any more tools: reply with your final answer, summarising what was done and what is left.';

/** Why a mid-turn steer is refused: mew has no way to add text to a running turn. */
export const STEER_REFUSAL =
  'mew has no mid-turn steering (its daemon runs one turn at a time and has no message that joins a running turn): send followUp() to queue the text as the next turn, or cancel()';

/** Messages the seed documents that carry nothing the run acts on: `info` events. */
const NOTICES = new Set([
  'session_list', 'session_cleared', 'session_title_changed', 'model_list', 'model_switched', 'thinking_variant_changed',
  'todos_updated', 'job_update', 'job_output', 'job_output_error', 'slash_result', 'project_list', 'session_usage_changed',
]);

type Phase = 'connecting' | 'open' | 'reconnecting' | 'ended';
type TurnEnd = 'completed' | 'failed' | 'cancelled' | 'rejected';

/**
 * The driver logic of one session on a mew daemon. The run state follows Fen's (state, control) table
 * (`decide`), so every control gets the Ack it would get from a Fen child in the same state, carried
 * as mew's messages: prompt -> `submit_prompt` (its `prompt_receipt` is the Ack); follow-up mid-turn ->
 * held, submitted when the turn ends (its receipt is the delivery); steer mid-turn -> rejected; cancel ->
 * `cancel`, then the session detaches; close -> detach after the turn; finalize -> `cancel` when a turn
 * runs, then one last submitted turn (the note), then detach.
 */
export class MewSession {
  readonly #io: MewIo;
  readonly #facts: MewFacts;
  readonly #options: MewSessionOptions;
  readonly #desk: RequestDesk;
  readonly #submissions: Submissions;
  readonly #taskRef: number | undefined;

  #phase: Phase = 'connecting';
  #state: RunState = 'starting';
  #nextRef = 1;
  #messageNumber = 0;
  #sessionId: string | undefined;
  #pongSeen = false;
  #readySeen = false;

  readonly #stream: TurnStream;
  #readyEvent: EventDraft | undefined;
  /** The last turn ended on `session_activity_changed {idle}`: a `turn_failed` alert may still amend it. */
  #endedByIdle = false;
  #lastEnd: TurnEnd | undefined;
  #lastError: string | undefined;
  #answer: SessionAnswer | undefined;
  #usage: Usage | undefined;

  #held: Array<{ ref: number; text: string }> = [];
  #finalize: 'none' | 'interrupting' | 'final-turn' = 'none';
  #finalNote = MEW_FINALIZE_PROMPT;

  constructor(io: MewIo, facts: MewFacts, options: MewSessionOptions) {
    this.#io = io;
    this.#facts = facts;
    this.#options = options;
    this.#stream = new TurnStream(facts, options.maxAnswerChars);
    this.#submissions = new Submissions(options.requestIdPrefix);
    this.#desk = new RequestDesk(
      { approve: options.approve, answerQuestion: options.answerQuestion },
      {
        respond: (message) => void io.send(message),
        report: (draft) => facts.event(draft),
        decision: (value) => spellTag(value, options.wireCase),
      },
    );
    if (options.task !== undefined) this.#taskRef = this.#nextRef++;
  }

  /** The ref of the task prompt (answered by its receipt once the session is ready). */
  get taskRef(): number | undefined {
    return this.#taskRef;
  }

  get state(): RunState {
    return this.#state;
  }

  /** The session id mew gave (undefined before `session_ready`). */
  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The connection                                                                                 */
  /* ---------------------------------------------------------------------------------------------- */

  /**
   * A connection is open (the first, or one re-opened after a loss): a `ping` (its `pong` tells the
   * wire revision), then create or attach the session. Later pings are the transport's liveness probe.
   */
  opened(): void {
    if (this.#phase === 'ended') return;
    const reopened = this.#phase === 'reconnecting';
    this.#phase = 'open';
    this.#io.send({ type: 'ping' });
    const attachTo = reopened ? this.#sessionId : this.#options.sessionId;
    if (attachTo !== undefined) this.#io.send({ type: 'attach_session', session_id: attachTo });
    else this.#io.send(this.#options.cwd === undefined ? { type: 'new_session' } : { type: 'new_session', cwd: this.#options.cwd });
  }

  /**
   * The connection broke (`connection-lost`, or `no-pong`: mew stopped answering). Nothing at stake (no
   * turn, the session ready): true, re-attach, pending submissions are now uncertain. A turn open, or a
   * session never ready: the run fails with `code` (the driver's channel then reports the peer gone),
   * since a turn's events cannot be read back and mew cancels the turn of a session whose last client leaves.
   */
  connectionLost(code: 'connection-lost' | 'no-pong', reason: string): boolean {
    if (this.#phase === 'ended') return false;
    if (this.#phase === 'reconnecting') return true;
    if (!this.#readySeen) return this.#lose(code, `the connection to mew was lost before the session was ready: ${reason}`);
    if (this.#stream.open) {
      return this.#lose(code, `the connection to mew was lost during turn ${this.#stream.turn}: ${reason} (the turn's events cannot be read back, and mew cancels a turn once its last client leaves)`);
    }
    this.#phase = 'reconnecting';
    const uncertain = this.#submissions.markUncertain();
    if (uncertain.length > 0) {
      this.#facts.event({ type: 'info', nativeType: 'connection', summary: `${uncertain.length} submission(s) without a receipt: checked with read_prompt_receipt once re-attached, never re-sent` });
    }
    return true;
  }

  /** Fails the run on a lost connection (no detach: the connection is gone already). */
  #lose(code: 'connection-lost' | 'no-pong', error: string): false {
    this.#stop();
    this.#facts.fatal(code, error);
    return false;
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Messages from mew                                                                              */
  /* ---------------------------------------------------------------------------------------------- */

  /** One decoded message from the daemon (a JSON object with a string `type`). */
  onFrame(frame: { type: string; [field: string]: JsonValue }): void {
    if (this.#phase === 'ended') return;
    const read = checkMessage(frame, ++this.#messageNumber);
    if (read.rejection !== undefined) this.#facts.rejected(read.rejection);
    if (read.message === undefined || !read.usable) return;
    const message = read.message;
    if (message.type === 'pong') return this.#onPong(message);
    if (message.type === 'session_ready') return this.#onSessionReady(message);
    if (!this.#readySeen) {
      this.#facts.rejected({ code: 'out-of-order', reason: `a ${message.type} message before session_ready`, lineType: message.type });
      return;
    }
    if (TURN_MESSAGES.has(message.type)) return this.#onTurnMessage(message);
    switch (message.type) {
      case 'session_history':
        return this.#facts.event({ type: 'info', nativeType: 'session_history', summary: `session history: ${historyLength(message)} message(s), not replayed`, messageCount: historyLength(message) });
      case 'prompt_receipt':
        return this.#onReceipt(message);
      case 'permission_request':
        return this.#desk.permissionRequested(message);
      case 'ask_user_request':
        return this.#desk.questionsAsked(message);
      case 'request_resolved':
        return this.#desk.resolved(message);
      case 'session_alert':
        return this.#onAlert(message);
      case 'session_activity_changed':
        return this.#onActivity(message);
      case 'error_event':
        return this.#onErrorEvent(message);
      case 'error':
        return this.#facts.event(withExtras({ type: 'error', error: stringField(message, 'message') ?? 'mew reported an error' }, message, ['message']));
    }
    if (NOTICES.has(message.type)) return this.#facts.event(passthrough(message));
    // A type this driver does not know (a newer mew): delivered raw, never dropped.
    this.#facts.event({ type: 'passthrough', protocol: 'mew', frame: message });
  }

  #onPong(message: MewMessage): void {
    const revision = message['protocol_version'];
    if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < MEW_MIN_PROTOCOL_VERSION) {
      const version = stringField(message, 'version');
      const said = typeof revision === 'number' ? `speaks wire revision ${revision}` : 'did not say its wire revision (pong.protocol_version)';
      return this.#fail('version-mismatch', `the mew daemon${version === undefined ? '' : ` ${JSON.stringify(version)}`} ${said}; subvisor needs revision ${MEW_MIN_PROTOCOL_VERSION} or later (acknowledged submit_prompt with receipts): upgrade mew`);
    }
    this.#pongSeen = true;
    this.#maybeReady();
  }

  #onSessionReady(message: MewMessage): void {
    const id = message['session_id'] as string;
    if (this.#readySeen) {
      if (id !== this.#sessionId) return this.#fail('protocol-error', `mew switched this connection to another session (${id})`);
      // Re-attached after a reconnect: check every uncertain submission, never re-send it.
      this.#io.attached();
      this.#facts.event(withExtras({ type: 'info', nativeType: 'session_ready', summary: 're-attached to the session' }, message, []));
      for (const submission of this.#submissions.pending) {
        if (submission.uncertain) this.#io.send({ type: 'read_prompt_receipt', session_id: id, request_id: submission.requestId });
      }
      return;
    }
    if (this.#options.sessionId !== undefined && id !== this.#options.sessionId) {
      return this.#fail('protocol-error', `asked to attach session ${this.#options.sessionId}, mew answered with session ${id}`);
    }
    if (this.#sessionId !== undefined) return this.#facts.rejected({ code: 'out-of-order', reason: 'a second session_ready before the pong', lineType: 'session_ready' });
    this.#sessionId = id;
    this.#io.attached();
    this.#readyEvent = withExtras({ type: 'ready' }, message, []);
    this.#maybeReady();
  }

  /** Ready once both the session and the daemon's wire revision are known. */
  #maybeReady(): void {
    if (this.#readySeen || !this.#pongSeen || this.#readyEvent === undefined || this.#phase === 'ended') return;
    this.#readySeen = true;
    this.#state = advance(this.#state, 'started');
    this.#facts.ready();
    this.#facts.event(this.#readyEvent);
    if (this.#taskRef !== undefined) {
      this.#state = decide(this.#state, 'prompt').next;
      this.#submit(this.#options.task!, 'prompt', this.#taskRef);
    }
  }

  #onTurnMessage(message: MewMessage): void {
    if (!this.#stream.open) this.#openTurn();
    this.#stream.take(message);
  }

  #onReceipt(message: MewMessage): void {
    const submission = this.#submissions.take(message['request_id'] as string);
    if (submission === undefined) return this.#facts.event(passthrough(message, 'a receipt for a request this run is not waiting on'));
    const receipt = receiptOf(message);
    // The receipt's event carries the Ack (the core settles an Ack with the next event).
    const carry = () => this.#facts.event(passthrough(message, `prompt ${receipt.raw}`));
    if (receipt.status === 'accepted') {
      this.#answerSubmission(submission, 'accepted');
      carry();
      if (submission.uncertain) {
        return this.#fail('connection-lost', `mew accepted request ${submission.requestId} while the connection was down: its turn ran unseen (it is never re-sent)`);
      }
      if (!this.#stream.open) this.#openTurn();
      return;
    }
    const reason =
      receipt.status === 'rejected' ? `mew rejected the prompt${receipt.message === undefined ? '' : `: ${receipt.message}`}`
      : receipt.status === 'unknown' ? `mew has no receipt for request ${submission.requestId}: it was not re-sent; inspect the conversation before retrying`
      : `mew answered the prompt with status ${JSON.stringify(receipt.raw)}`;
    this.#answerSubmission(submission, 'rejected', reason);
    carry();
    this.#lastEnd = 'rejected';
    this.#lastError = reason;
    if (!this.#stream.open && this.#submissions.pending.length === 0) this.#afterTurn();
  }

  /** A receipt answers its control: the Ack of a prompt, the delivery of a held follow-up. */
  #answerSubmission(submission: Submission, status: 'accepted' | 'rejected', reason?: string): void {
    if (submission.ref === undefined) return;
    if (submission.role === 'held') this.#facts.delivery(submission.ref, status === 'accepted' ? 'injected' : 'dropped');
    else this.#facts.ack(submission.ref, status, reason);
  }

  #onAlert(message: MewMessage): void {
    const alert = snakeTag(message['alert'] ?? message['kind'] ?? message['event']);
    this.#facts.event(passthrough(message, alert === undefined ? undefined : `session alert: ${alert}`));
    if (alert === 'turn_complete' && this.#stream.open) this.#endTurn('completed');
    if (alert !== 'turn_failed') return;
    const error = stringField(message, 'message') ?? 'mew reported turn_failed';
    if (this.#stream.open) return this.#endTurn('failed', error);
    if (this.#endedByIdle && this.#lastEnd === 'completed') {
      // The turn ended on idle first: the alert amends how it ended (its answer no longer counts).
      this.#lastEnd = 'failed';
      this.#lastError = error;
      this.#answer = undefined;
    }
  }

  #onActivity(message: MewMessage): void {
    const idle = message['idle'] === true || snakeTag(message['activity'] ?? message['state'] ?? message['status']) === 'idle';
    this.#facts.event(passthrough(message, idle ? 'session idle' : undefined));
    if (idle && this.#stream.open) {
      this.#endTurn('completed');
      this.#endedByIdle = true;
    }
  }

  #onErrorEvent(message: MewMessage): void {
    const error = stringField(message, 'message') ?? 'mew reported a terminal error during the turn';
    this.#facts.event(withExtras({ type: 'error', error }, message, ['message']));
    if (this.#stream.open) this.#endTurn('failed', error);
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Turns                                                                                          */
  /* ---------------------------------------------------------------------------------------------- */

  #openTurn(): void {
    this.#endedByIdle = false;
    // A turn another client started moves a ready run to running, as a Fen child's own turn does.
    if (this.#state === 'ready') this.#state = 'running';
    this.#stream.begin();
  }

  #endTurn(end: 'completed' | 'failed', error?: string): void {
    const how = this.#finalize === 'interrupting' ? 'cancelled' : end;
    const ended = this.#stream.end(how, error);
    this.#lastEnd = how;
    this.#lastError = error;
    if (ended.usage !== undefined) addUsage((this.#usage ??= {}), ended.usage);
    if (ended.answer !== undefined) this.#answer = ended.answer;
    this.#afterTurn();
  }

  /** What the end of a turn (or a rejected submission) sets off: the next held follow-up, the finalize's last turn, the end. */
  #afterTurn(): void {
    switch (this.#state) {
      case 'running':
        this.#state = advance(this.#state, 'turn-done');
        return this.#sendHeld();
      case 'closing':
        this.#state = advance(this.#state, 'turn-done');
        return this.#end(this.#endOf());
      case 'finalizing':
        if (this.#finalize === 'interrupting') {
          this.#finalize = 'final-turn';
          this.#submit(this.#finalNote, 'final', undefined);
          return;
        }
        this.#state = advance(this.#state, 'final-turn-done');
        return this.#end(this.#endOf());
    }
  }

  #sendHeld(): void {
    const next = this.#held.shift();
    if (next === undefined || this.#state !== 'ready') return;
    this.#state = 'running';
    this.#submit(next.text, 'held', next.ref);
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Controls                                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  /** Decides and carries out one control of the run core. */
  send(control: MewControl): MewVerdict {
    const ref = this.#nextRef++;
    const decision = decide(this.#state, control.type);
    if (decision.status !== 'accepted') return { ref, status: decision.status, ...(decision.reason === undefined ? {} : { reason: decision.reason }) };
    if (decision.action === 'queue-steer') return { ref, status: 'rejected', reason: STEER_REFUSAL };
    if (this.#phase !== 'open' && decision.action !== 'cancel' && decision.action !== 'finish') {
      return { ref, status: 'rejected', reason: 'the connection to mew is being re-opened; try again once it is back' };
    }
    this.#state = decision.next;
    switch (decision.action) {
      case 'start-turn':
        this.#submit((control as { text: string }).text, 'prompt', ref);
        return { ref };
      case 'queue-follow-up':
        this.#held.push({ ref, text: (control as { text: string }).text });
        return { ref, status: 'accepted' };
      case 'start-final-turn':
        this.#finalize = 'final-turn';
        this.#finalNote = noteOf(control);
        this.#submit(this.#finalNote, 'final', undefined);
        return { ref, status: 'accepted' };
      case 'interrupt-turn':
        this.#finalize = 'interrupting';
        this.#finalNote = noteOf(control);
        this.#dropHeld();
        this.#io.send({ type: 'cancel' });
        return { ref, status: 'accepted' };
      case 'close-after-turn':
        this.#dropHeld();
        return { ref, status: 'accepted' };
      case 'finish':
        return { ref, status: 'accepted', then: () => this.#end(this.#endOf()) };
      default:
        return { ref, status: 'accepted', then: () => this.#cancel() };
    }
  }

  /** Cancel: deny what waits for an answer, cancel mew's turn when one may run, then detach. */
  #cancel(): void {
    if (this.#phase === 'ended') return;
    this.#desk.shutDown();
    if (this.#phase === 'open' && (this.#stream.open || this.#submissions.pending.length > 0)) this.#io.send({ type: 'cancel' });
    this.#end({ status: 'cancelled' });
  }

  #submit(text: string, role: Submission['role'], ref: number | undefined): void {
    const submission = this.#submissions.add(role, ref);
    this.#io.send({ type: 'submit_prompt', session_id: this.#sessionId!, request_id: submission.requestId, text, attachments: [] });
  }

  #dropHeld(): void {
    for (const held of this.#held.splice(0)) this.#facts.delivery(held.ref, 'dropped');
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The end                                                                                        */
  /* ---------------------------------------------------------------------------------------------- */

  /** How the run ends when the session detaches now: after the last turn's end (or a rejected last submission). */
  #endOf(): ChildEnd {
    if (this.#lastEnd === 'failed' || this.#lastEnd === 'rejected') return { status: 'failed', error: this.#lastError ?? 'the last turn failed' };
    if (this.#lastEnd === 'cancelled' && this.#finalize === 'none') return { status: 'cancelled', error: 'the last turn was cancelled' };
    return { status: 'done' };
  }

  /** Detaches with a made-up exit (a daemon session has none): the answer first when the run is done. */
  #end(end: ChildEnd): void {
    if (this.#phase === 'ended') return;
    this.#stop();
    if (end.status === 'done' && this.#answer !== undefined) {
      this.#facts.result({ stopReason: 'end_turn', answer: this.#answer, usage: this.#usage });
      const result: Record<string, unknown> = { type: 'result', stopReason: 'end_turn', finalText: this.#answer.text };
      if (this.#usage !== undefined) result['usage'] = this.#usage;
      if (this.#answer.truncated) result['truncated'] = true;
      this.#facts.event(result as { type: 'result' });
    }
    this.#facts.exit(end);
    this.#io.leave();
  }

  #fail(code: MewFailure, error: string): void {
    if (this.#phase === 'ended') return;
    this.#stop();
    this.#facts.fatal(code, error);
    this.#io.leave();
  }

  #stop(): void {
    this.#desk.shutDown();
    this.#phase = 'ended';
    this.#dropHeld();
    this.#submissions.clear();
  }

  /** The answer: the text of the last completed turn (undefined before one completed). */
  answer(): SessionAnswer | undefined {
    return this.#answer;
  }

  /** Summed usage of every turn. */
  usage(): Usage | undefined {
    return this.#usage;
  }

  /** The run is over (the driver is disposing): nothing more is sent or reported. */
  dispose(): void {
    this.#phase = 'ended';
  }
}

function noteOf(control: MewControl): string {
  return control.type === 'finalize' && control.note !== undefined && control.note !== '' ? control.note : MEW_FINALIZE_PROMPT;
}

function historyLength(message: MewMessage): number {
  return Array.isArray(message['messages']) ? message['messages'].length : 0;
}
