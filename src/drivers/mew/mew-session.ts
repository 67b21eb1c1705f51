// One mew daemon session: decoded server messages to facts and events, run controls to client messages. Pure: no socket.
import { actOnControl, advance, decide } from '../../wire/index.js';
import type { JsonValue, RunState, Usage } from '../../wire/index.js';
import { passthrough, withExtras } from '../shared/event-drafts.js';
import type { EventDraft } from '../shared/event-drafts.js';
import { FINALIZE_PROMPT, finalizeNote, reportResult } from '../shared/session.js';
import type { ChildEnd, SessionAnswer } from '../shared/session.js';
import { NOTICES } from './event-map.js';
import { Handshake } from './handshake.js';
import { checkMessage } from './messages.js';
import { stringField } from '../shared/json-kinds.js';
import type { MewMessage } from './messages.js';
import { MewDesk } from './request-desk.js';
import { SessionRecord } from './session-record.js';
import { alertOf, isIdle } from './session-signals.js';
import type { MewFacts, MewFailure, MewIo, MewSessionOptions } from './session-types.js';
import type { Control } from '../../protocol/driver.js';
import type { ControlVerdict } from '../shared/session.js';
import { receiptOf, refusalOf, Submissions } from './submissions.js';
import type { Submission } from './submissions.js';
import { TURN_MESSAGES, TurnStream } from './turn-stream.js';

/** Why a mid-turn steer is refused: mew has no way to add text to a running turn. */
export const STEER_REFUSAL =
  'mew has no mid-turn steering (its daemon runs one turn at a time and has no message that joins a running turn): send followUp() to queue the text as the next turn, or cancel()';

type Phase = 'connecting' | 'open' | 'reconnecting' | 'ended';

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
  readonly #desk: MewDesk;
  readonly #submissions: Submissions;
  readonly #taskRef: number | undefined;

  #phase: Phase = 'connecting';
  #state: RunState = 'starting';
  #nextRef = 1;
  #messageNumber = 0;
  readonly #handshake: Handshake;

  readonly #stream: TurnStream;
  readonly #record = new SessionRecord();

  #held: Array<{ ref: number; text: string }> = [];
  #finalize: 'none' | 'interrupting' | 'final-turn' = 'none';
  #finalNote = FINALIZE_PROMPT;

  constructor(io: MewIo, facts: MewFacts, options: MewSessionOptions) {
    this.#io = io;
    this.#facts = facts;
    this.#options = options;
    this.#stream = new TurnStream(facts, options.maxAnswerChars);
    this.#submissions = new Submissions(options.requestIdPrefix);
    this.#desk = new MewDesk(
      { protocol: options.protocol, approve: options.approve, answerQuestion: options.answerQuestion },
      {
        respond: (message) => void io.send(message),
        report: (draft) => facts.event(draft),
        blocked: (key, what) => facts.blocked(key, what),
        unblocked: (key) => facts.unblocked(key),
      },
    );
    this.#handshake = new Handshake(
      {
        send: (message) => io.send(message),
        attached: () => io.attached(),
        ready: (event) => this.#onReady(event),
        reattached: (message) => this.#onReattached(message),
        fail: (code, error) => this.#fail(code, error),
        rejected: (rejection) => facts.rejected(rejection),
      },
      { cwd: options.cwd, sessionId: options.sessionId },
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
    return this.#handshake.sessionId;
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
    this.#handshake.greet(reopened);
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
    if (!this.#handshake.ready) return this.#lose(code, `the connection to mew was lost before the session was ready: ${reason}`);
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
    if (message.type === 'pong') return this.#handshake.pong(message);
    if (message.type === 'session_ready') return this.#handshake.sessionReady(message);
    if (message.type === 'error' && this.#handshake.error(message)) return;
    // mew broadcasts the notices of every session (activity, usage, alerts) to every client: another's are only shown.
    const other = this.#otherSession(message);
    if (other !== undefined) return this.#facts.event(passthrough(message, `${message.type} of another session (${other}): not this run's`));
    // session_history follows session_ready, and may come before the pong that completes the handshake.
    const historyNow = message.type === 'session_history' && this.#handshake.sessionId !== undefined;
    if (!this.#handshake.ready && !historyNow) {
      this.#facts.rejected({ code: 'out-of-order', reason: `a ${message.type} message before session_ready`, lineType: message.type });
      return;
    }
    if (TURN_MESSAGES.has(message.type)) return this.#onTurnMessage(message);
    if (this.#desk.take(message)) return;
    switch (message.type) {
      case 'session_history':
        return this.#facts.event({ type: 'info', nativeType: 'session_history', summary: `session history: ${historyLength(message)} message(s), not replayed`, messageCount: historyLength(message) });
      case 'prompt_receipt':
        return this.#onReceipt(message);
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

  /** The `session_id` a message carries when it names another session than this run's (known once attached). */
  #otherSession(message: MewMessage): string | undefined {
    const id = stringField(message, 'session_id');
    const own = this.#handshake.sessionId;
    return id !== undefined && own !== undefined && id !== own ? id : undefined;
  }

  /** First attach complete: ready, and the task submitted. */
  #onReady(event: EventDraft): void {
    if (this.#phase === 'ended') return;
    this.#state = advance(this.#state, 'started');
    const sessionId = this.#handshake.sessionId;
    if (sessionId !== undefined) this.#facts.session(sessionId);
    this.#facts.ready();
    this.#facts.event(event);
    if (this.#taskRef !== undefined) {
      this.#state = decide(this.#state, 'prompt').next;
      this.#submit(this.#options.task!, 'prompt', this.#taskRef);
    }
  }

  /** Re-attached after a reconnect: check every uncertain submission, never re-send it. */
  #onReattached(message: MewMessage): void {
    this.#facts.event(withExtras({ type: 'info', nativeType: 'session_ready', summary: 're-attached to the session' }, message, []));
    for (const submission of this.#submissions.pending) {
      if (submission.uncertain) this.#io.send({ type: 'read_prompt_receipt', session_id: this.#handshake.sessionId!, request_id: submission.requestId });
    }
  }

  /**
   * A streamed message. With no turn open, one that starts output (a turn another client started, or
   * a receipt still on its way) opens a turn; a trailing one (a late `message_end`, `tool_end`...)
   * is only reported, so it cannot open a turn that nothing would end.
   */
  #onTurnMessage(message: MewMessage): void {
    if (!this.#stream.open) {
      if (!startsOutput(message)) return this.#facts.event(passthrough(message, 'after the turn ended'));
      this.#openTurn();
    }
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
    const reason = refusalOf(receipt, submission.requestId);
    this.#answerSubmission(submission, 'rejected', reason);
    carry();
    this.#record.submissionRejected(reason);
    if (!this.#stream.open && this.#submissions.pending.length === 0) this.#afterTurn();
  }

  /** A receipt answers its control: the Ack of a prompt, the delivery of a held follow-up. */
  #answerSubmission(submission: Submission, status: 'accepted' | 'rejected', reason?: string): void {
    if (submission.ref === undefined) return;
    if (submission.role === 'held') this.#facts.delivery(submission.ref, status === 'accepted' ? 'injected' : 'dropped');
    else this.#facts.ack(submission.ref, status, reason);
  }

  #onAlert(message: MewMessage): void {
    const alert = alertOf(message);
    this.#facts.event(passthrough(message, alert === undefined ? undefined : `session alert: ${alert}`));
    if (alert === 'turn_complete' && this.#stream.open) this.#endTurn('completed');
    if (alert !== 'turn_failed') return;
    const error = stringField(message, 'message') ?? 'mew reported turn_failed';
    if (this.#stream.open) return this.#endTurn('failed', error);
    this.#record.lateFailure(error);
  }

  #onActivity(message: MewMessage): void {
    const idle = isIdle(message);
    this.#facts.event(passthrough(message, idle ? 'session idle' : undefined));
    if (idle && this.#stream.open) this.#endTurn('completed', undefined, true);
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
    // A turn another client started moves a ready run to running, as a Fen child's own turn does.
    if (this.#state === 'ready') this.#state = 'running';
    this.#stream.begin();
  }

  #endTurn(end: 'completed' | 'failed', error?: string, byIdle = false): void {
    const how = this.#finalize === 'interrupting' ? 'cancelled' : end;
    this.#record.turnEnded(how, this.#stream.end(how, error), error, byIdle);
    this.#desk.turnEnded();
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
        return this.#end(this.#record.endOf(this.#finalize !== 'none'));
      case 'finalizing':
        if (this.#finalize === 'interrupting') {
          this.#finalize = 'final-turn';
          this.#submit(this.#finalNote, 'final', undefined);
          return;
        }
        this.#state = advance(this.#state, 'final-turn-done');
        return this.#end(this.#record.endOf(this.#finalize !== 'none'));
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
  send(control: Control): ControlVerdict {
    const ref = this.#nextRef++;
    const text = 'text' in control ? control.text : '';
    const accepted: ControlVerdict = { ref, status: 'accepted' };
    return actOnControl(this.#state, control.type, {
      refused: ({ status, reason }) => ({ ref, status, ...(reason === undefined ? {} : { reason }) }),
      veto: (action) => {
        if (action === 'queue-steer') return { ref, status: 'rejected', reason: STEER_REFUSAL };
        if (this.#phase !== 'open' && action !== 'cancel' && action !== 'finish') {
          return { ref, status: 'rejected', reason: 'the connection to mew is being re-opened; try again once it is back' };
        }
        return undefined;
      },
      moveTo: (next) => (this.#state = next),
      actions: {
        'start-turn': () => {
          this.#submit(text, 'prompt', ref);
          return { ref }; // mew's prompt_receipt answers it
        },
        'queue-steer': () => ({ ref, status: 'rejected', reason: STEER_REFUSAL }), // vetoed above
        'queue-follow-up': () => {
          this.#held.push({ ref, text });
          return accepted;
        },
        'start-final-turn': () => {
          this.#finalize = 'final-turn';
          this.#finalNote = finalizeNote(control);
          this.#submit(this.#finalNote, 'final', undefined);
          return accepted;
        },
        'interrupt-turn': () => {
          this.#finalize = 'interrupting';
          this.#finalNote = finalizeNote(control);
          this.#dropHeld();
          this.#io.send({ type: 'cancel' });
          return accepted;
        },
        'close-after-turn': () => {
          this.#dropHeld();
          return accepted;
        },
        finish: () => ({ ...accepted, then: () => this.#end(this.#record.endOf(this.#finalize !== 'none')) }),
        cancel: () => ({ ...accepted, then: () => this.#cancel() }),
      },
    });
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
    this.#io.send({ type: 'submit_prompt', session_id: this.#handshake.sessionId!, request_id: submission.requestId, text, attachments: [] });
  }

  #dropHeld(): void {
    for (const held of this.#held.splice(0)) this.#facts.delivery(held.ref, 'dropped');
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The end                                                                                        */
  /* ---------------------------------------------------------------------------------------------- */

  /** Detaches with a made-up exit (a daemon session has none): the answer first when the run is done. */
  #end(end: ChildEnd): void {
    if (this.#phase === 'ended') return;
    this.#stop();
    if (end.status === 'done') reportResult(this.#facts, 'end_turn', this.#record.answer, this.#record.usage);
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
    return this.#record.answer;
  }

  /** Summed usage of every turn. */
  usage(): Usage | undefined {
    return this.#record.usage;
  }

  /** The run is over (the driver is disposing): nothing more is sent or reported. */
  dispose(): void {
    this.#phase = 'ended';
  }
}


function historyLength(message: MewMessage): number {
  return Array.isArray(message['messages']) ? message['messages'].length : 0;
}

/** Whether a streamed message begins output (and so may open a turn): a part starting or growing, a tool or subagent starting. */
function startsOutput(message: MewMessage): boolean {
  if (message.type === 'tool_start' || message.type === 'subagent_start') return true;
  const event = message['event'];
  return message.type === 'provider' && typeof event === 'object' && event !== null && !Array.isArray(event) && (event['type'] === 'part_start' || event['type'] === 'part_delta');
}
