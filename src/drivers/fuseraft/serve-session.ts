// One run's tasks on `fuseraft serve`: the daemon's frames to facts and events, controls to user_input and interrupt, the run's end. Pure.
import type { JsonObject } from '../../wire/index.js';
import type { ChildExit } from '../../protocol/results.js';
import type { Control, DriverSink } from '../../protocol/driver.js';
import type { AnswerQuestionCallback, ApproveCallback } from '../../protocol/requests.js';
import { bridgeDisplayDraft } from './event-drafts.js';
import { passthrough, withExtras } from '../shared/event-drafts.js';
import { checkFrame, FUSERAFT_PROTOCOL_VERSION } from './frames.js';
import { stringField } from '../shared/json-kinds.js';
import type { Frame } from './frames.js';
import { PromptDesk } from './prompt-desk.js';
import { boundedAnswer } from '../shared/session.js';
import type { ControlVerdict, SessionSink } from '../shared/session.js';
import type { FrameRejection, TypedFrame } from '../shared/json-line.js';
import { helloOf } from './serve-hello.js';
import type { Hello } from './serve-hello.js';

/** Daemon and display messages of seed 002 with no Run API counterpart: they become `info` events. */
const DOCUMENTED_TYPES = new Set(['agent_starting', 'task_resumed', 'auto_dispatched', 'a2a_call', 'text', 'info', 'warning', 'status', 'retrying']);

/** Why steer, follow-up and finalize are refused. */
const NO_TASK_INPUT = 'fuseraft serve takes each user_input as a new task: a running task reads no further input';

/** The connection side of a serve session (the driver puts it on the daemon channel; tests record it). */
export interface ServeIo {
  /** Sends one message; false when no connection is open (nothing is sent). */
  send(message: JsonObject): boolean;
  /** The daemon's hello was accepted on this connection: a re-attach is complete. */
  attached(): void;
  /** Detaches: the connection closes on purpose; the driver reports the peer gone once it is closed. */
  leave(): void;
}

/** Why a serve session failed in a way the run cannot survive. */
export type ServeFailure = Extract<Parameters<DriverSink['fatal']>[0], 'version-mismatch' | 'read-only' | 'unknown-session' | 'connection-lost'>;

/** The facts a serve session reports: the shared ones, its rejected messages, its end, and fatal failures. */
export interface ServeFacts extends SessionSink {
  /** A message that was not (fully) accepted; a `fatal` one ends the run `failed` with `code`. */
  rejected(rejection: FrameRejection, fatal?: boolean, code?: ServeFailure): void;
  /** A failure the run cannot survive (not tied to one message). */
  fatal(code: ServeFailure, error: string): void;
  /** How the run ended, by the session's own account (a daemon run has no process exit); the session then leaves. */
  exit(end: ChildExit): void;
}

export interface ServeSessionOptions {
  /** The protocol's registered name (`options.protocol`), which `approve` sees as `request.protocol`. */
  protocol: string;
  /** The first task, sent once the daemon's hello is in. Its ref is 1. */
  task?: string | undefined;
  /** A task of this client to collect instead (connectRun's `resume`). */
  resume?: string | undefined;
  /** The client id the daemon keeps this client's tasks under: without one a lost connection is not re-attached. */
  clientId?: string | undefined;
  approve?: ApproveCallback | undefined;
  answerQuestion?: AnswerQuestionCallback | undefined;
  /** Longest answer kept, in characters; a longer one is cut and marked truncated. */
  maxAnswerChars: number;
}

/** One task of this run on the daemon: sent (awaiting `queued`), queued or running, or re-attached. */
interface Task {
  /** The control ref its `queued` answers; undefined for a re-attached task. */
  ref: number | undefined;
  text: string | undefined;
  /** Known from `queued` (or `resume`); undefined while the daemon has not confirmed the task. */
  sessionId: string | undefined;
  turn: number;
  cancelled: boolean;
}

/** How the last finished task ended, and its answer. */
interface LastResult {
  sessionId: string;
  stopReason: string;
  succeeded: boolean;
  cancelled: boolean;
  errorMessage: string | undefined;
  answer: string | undefined;
}

/**
 * The protocol logic of one run on fuseraft serve. A task is one `user_input`, answered by `queued` (the
 * Ack) and, later, by its `result` (one turn; the answer is `lastMessage`). The daemon runs one task of a
 * client at a time, so a prompt while a task is open is rejected. `cancel` sends `interrupt`; `close`
 * detaches (a running task goes on in the daemon and can be collected with `resume`). After a lost
 * connection, the task must still be the daemon's on the new one (see docs/daemons.md).
 */
export class ServeSession {
  readonly #io: ServeIo;
  readonly #facts: ServeFacts;
  readonly #options: ServeSessionOptions;
  #desk: PromptDesk;
  /** Silences the current desk (its connection is gone). */
  #silenceDesk: () => void = () => undefined;
  #nextRef = 1;
  /** The first task, until the daemon's hello lets it be sent. */
  #startTask: { ref: number; text: string } | undefined;
  #helloSeen = false;
  #ready = false;
  #readOnly = false;
  #task: Task | undefined;
  #turns = 0;
  #last: LastResult | undefined;
  /** The daemon answered the last task with an error instead of queuing it. */
  #refusal: string | undefined;
  /** A cancel came while no connection was open. */
  #interruptPending = false;
  #ended = false;

  constructor(io: ServeIo, facts: ServeFacts, options: ServeSessionOptions) {
    this.#io = io;
    this.#facts = facts;
    this.#options = options;
    this.#desk = this.#newDesk();
    if (options.task !== undefined) this.#startTask = { ref: this.#nextRef++, text: options.task };
  }

  /** The ref of the first task, when there is one. */
  get taskRef(): number | undefined {
    return this.#startTask?.ref;
  }

  /* Controls ------------------------------------------------------------------------------------- */

  /** A control: its ref, and its answer unless the daemon's (`queued` or an `error`) will give it. */
  send(control: Control): ControlVerdict {
    const ref = this.#nextRef++;
    return { ref, ...this.#decide(control, ref) };
  }

  #decide(control: Control, ref: number): Omit<ControlVerdict, 'ref'> {
    if (this.#ended) return { status: 'rejected', reason: 'the run has ended' };
    switch (control.type) {
      case 'prompt':
        if (this.#readOnly) return { status: 'rejected', reason: 'fuseraft serve took this connection read-only (a read token): it refuses every task' };
        if (this.#task !== undefined || this.#startTask !== undefined) {
          return { status: 'rejected', reason: 'fuseraft serve runs one task of a client at a time: wait for the result of the open one' };
        }
        if (!this.#ready) {
          this.#startTask = { ref, text: control.text };
          return {};
        }
        return this.#sendTask(ref, control.text) ? {} : { status: 'rejected', reason: 'the connection to fuseraft serve is not open' };
      case 'cancel': {
        // A daemon blocked on an approval reads nothing else: answer it first.
        this.#desk.shutDown();
        const task = this.#task;
        if (task === undefined) return { status: 'accepted', then: () => this.#end() };
        task.cancelled = true;
        // While re-attaching nothing can be sent: the interrupt goes out once the daemon's hello is in.
        if (!this.#io.send({ type: 'interrupt' })) this.#interruptPending = true;
        return { status: 'accepted' };
      }
      case 'close':
        return { status: 'accepted', then: () => this.#end() };
      case 'finalize':
        return { status: 'rejected', reason: `${NO_TASK_INPUT}; cancel() interrupts the task, close() detaches from it` };
      default:
        return { status: 'rejected', reason: NO_TASK_INPUT };
    }
  }

  #sendTask(ref: number, text: string): boolean {
    this.#refusal = undefined;
    if (!this.#io.send({ type: 'user_input', text })) return false;
    this.#task = { ref, text, sessionId: undefined, turn: 0, cancelled: false };
    return true;
  }

  /* The connection ------------------------------------------------------------------------------- */

  /** A connection is open (`reattach`: after a loss): the daemon's hello comes first. */
  opened(reattach: boolean): void {
    this.#helloSeen = false;
    if (reattach) this.#desk = this.#newDesk();
  }

  /** The connection broke while live: its pending approvals die with it (the daemon asks again); re-attach only under a client id. */
  connectionLost(): boolean {
    this.#silenceDesk();
    this.#desk.shutDown();
    return this.#ready && !this.#ended && this.#options.clientId !== undefined;
  }

  /** The run is over (the core's finish): nothing is decided any more. */
  shutDown(): void {
    this.#desk.shutDown();
  }

  /* Frames --------------------------------------------------------------------------------------- */

  onFrame(message: TypedFrame): void {
    if (this.#ended) return;
    const read = checkFrame(message, `a ${message.type} message from fuseraft serve`);
    if (read.rejection !== undefined) this.#facts.rejected(read.rejection);
    const frame = read.frame!;
    if (!this.#helloSeen) {
      if (frame.type === 'hello' && read.usable) return this.#onHello(frame);
      this.#facts.rejected({ code: 'out-of-order', reason: `a ${frame.type} message before hello (ignored)`, lineType: frame.type });
      return;
    }
    if (frame.type === 'approval_request') return this.#desk.approvalRequested(frame, read.usable);
    if (frame.type === 'question') return this.#desk.questionAsked(frame, read.usable);
    if (!read.usable) return;
    switch (frame.type) {
      case 'hello':
        this.#facts.rejected({ code: 'out-of-order', reason: 'a second hello on one connection (ignored)', lineType: 'hello' });
        return;
      case 'queued':
        return this.#onQueued(frame);
      case 'result':
        return this.#onResult(frame);
      case 'error':
        return this.#onError(frame);
    }
    // Progress is broadcast to every client of the daemon: surfaced, not counted as this run's facts.
    const draft = bridgeDisplayDraft(frame);
    if (draft !== undefined) return this.#facts.event(draft);
    if (DOCUMENTED_TYPES.has(frame.type)) return this.#facts.event(passthrough(frame));
    // A type seed 002 does not document (a newer daemon may add some): carried as it came.
    this.#facts.event({ type: 'passthrough', protocol: 'fuseraft-serve', frame });
  }

  #onHello(frame: Frame): void {
    const hello = helloOf(frame);
    if (hello.protocolVersion !== FUSERAFT_PROTOCOL_VERSION) {
      const reason = `fuseraft serve speaks protocol version ${JSON.stringify(hello.protocolVersion ?? null)}; this driver speaks ${FUSERAFT_PROTOCOL_VERSION}`;
      this.#facts.rejected({ code: 'version-mismatch', reason, lineType: 'hello' }, true, 'version-mismatch');
      return;
    }
    this.#helloSeen = true;
    const reattached = this.#ready;
    this.#io.attached();
    if (reattached) return this.#onReattached(hello, frame);
    this.#readOnly = hello.readOnly;
    const resume = this.#options.resume;
    if (hello.readOnly && (this.#startTask !== undefined || resume !== undefined)) {
      this.#facts.rejected(
        { code: 'invalid-payload', reason: 'fuseraft serve took this connection read-only (the token is a read token): it would refuse the task, so it was not sent', lineType: 'hello' },
        true,
        'read-only',
      );
      return;
    }
    if (resume !== undefined && !hello.owns(resume)) {
      this.#facts.rejected(
        { code: 'invalid-payload', reason: `fuseraft serve has no task ${JSON.stringify(resume)} of this client (neither in flight nor a pending result)`, lineType: 'hello' },
        true,
        'unknown-session',
      );
      return;
    }
    this.#ready = true;
    this.#facts.ready();
    if (resume !== undefined) {
      // The turn opens before the ready event goes out, so keepAlive: false does not close an idle-looking run.
      const task: Task = { ref: undefined, text: undefined, sessionId: resume, turn: ++this.#turns, cancelled: false };
      this.#facts.session(resume);
      this.#task = task;
      this.#facts.turnStarted(task.turn);
      this.#facts.event(withExtras({ type: 'ready' }, frame, []));
      this.#facts.event({ type: 'turn-started', turn: task.turn, sessionId: resume, resumed: true });
      return;
    }
    this.#facts.event(withExtras({ type: 'ready' }, frame, []));
    if (hello.inFlight !== undefined) {
      this.#facts.event({ type: 'info', nativeType: 'in-flight', summary: `task ${hello.inFlight.sessionId} of this client is still ${hello.inFlight.status ?? 'open'} on the daemon (connectRun({ resume }) re-attaches to it)`, inFlight: hello.inFlight.fields });
    }
    if (hello.pendingResults.length > 0) {
      this.#facts.event({ type: 'info', nativeType: 'pending-results', summary: `results of ${hello.pendingResults.length} earlier task(s) of this client follow`, pendingResults: hello.pendingResults });
    }
    const start = this.#startTask;
    this.#startTask = undefined;
    if (start !== undefined && !this.#sendTask(start.ref, start.text)) {
      this.#facts.ack(start.ref, 'rejected', 'the connection to fuseraft serve is not open');
    }
  }

  /** A new connection after a loss: the open task must still be the daemon's, or the run cannot go on. */
  #onReattached(hello: Hello, frame: Frame): void {
    this.#facts.event(withExtras({ type: 'info', nativeType: 'reattached', summary: 're-attached to fuseraft serve' }, frame, []));
    const task = this.#task;
    if (task === undefined) return;
    let held = task.sessionId !== undefined && hello.owns(task.sessionId);
    if (task.sessionId === undefined && hello.inFlight !== undefined && hello.inFlight.task === task.text) {
      // The connection dropped between user_input and queued: the daemon has it.
      this.#confirmTask(task, hello.inFlight.sessionId, hello.inFlight.position);
      held = true;
    }
    if (held) {
      if (this.#interruptPending && task.cancelled) this.#interruptPending = !this.#io.send({ type: 'interrupt' });
      return;
    }
    const reason = task.sessionId === undefined
      ? 'the connection dropped before fuseraft serve confirmed the task, and the daemon shows no such task of this client; it was not sent again (it may have run)'
      : `re-attached, but fuseraft serve no longer has task ${task.sessionId} of this client`;
    if (task.ref !== undefined && task.sessionId === undefined) this.#facts.ack(task.ref, 'rejected', reason);
    // The task is not (or no longer) the daemon's: nothing to interrupt.
    this.#task = undefined;
    this.#facts.fatal('connection-lost', reason);
  }

  #onQueued(frame: Frame): void {
    const task = this.#task;
    if (task === undefined || task.sessionId !== undefined) {
      this.#facts.event(passthrough(frame, `a task ${stringField(frame, 'sessionId') ?? ''} was queued (not this run's)`));
      return;
    }
    this.#confirmTask(task, frame['sessionId'] as string, typeof frame['position'] === 'number' ? frame['position'] : undefined);
  }

  #confirmTask(task: Task, sessionId: string, position: number | undefined): void {
    task.sessionId = sessionId;
    this.#facts.session(sessionId);
    if (task.ref !== undefined) this.#facts.ack(task.ref, 'accepted');
    task.turn = ++this.#turns;
    this.#facts.turnStarted(task.turn);
    this.#facts.event({ type: 'turn-started', turn: task.turn, sessionId, ...(position === undefined ? {} : { position }) });
  }

  #onError(frame: Frame): void {
    const text = stringField(frame, 'text') ?? 'fuseraft serve reported an error';
    const task = this.#task;
    if (task !== undefined && task.sessionId === undefined) {
      // "The daemon answers any user_input with an error event instead of queuing it" (a read token, or another refusal).
      this.#task = undefined;
      this.#refusal = text;
      if (task.ref !== undefined) this.#facts.ack(task.ref, 'rejected', `fuseraft serve refused the task: ${text}`);
    }
    this.#facts.event(withExtras({ type: 'error', error: text }, frame, ['text']));
  }

  #onResult(frame: Frame): void {
    const task = this.#task;
    const sessionId = stringField(frame, 'sessionId');
    if (task === undefined || task.sessionId === undefined || sessionId !== task.sessionId) {
      this.#facts.event(passthrough(frame, `result of task ${sessionId ?? '(unknown)'}, not this run's`));
      return;
    }
    this.#task = undefined;
    const succeeded = frame['succeeded'] === true;
    const stopReason = succeeded ? 'end_turn' : task.cancelled ? 'aborted' : 'error';
    const answer = stringField(frame, 'lastMessage');
    this.#last = { sessionId, stopReason, succeeded, cancelled: task.cancelled, errorMessage: stringField(frame, 'errorMessage'), answer };
    if (answer !== undefined) {
      const agent = stringField(frame, 'lastAgent');
      this.#facts.event({ type: 'assistant-text', final: true, text: answer, sessionId, ...(agent === undefined ? {} : { agent }) });
    }
    this.#facts.turnCompleted(task.turn, stopReason, undefined);
    this.#facts.event(withExtras({ type: 'turn-complete', turn: task.turn, stopReason }, frame, ['lastMessage']));
    if (task.cancelled) this.#end();
  }

  /* The end -------------------------------------------------------------------------------------- */

  /** The run is over by its own account (close, cancel, a cancelled task's result): the answer, the exit, then leave. */
  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#desk.shutDown();
    const last = this.#last;
    if (last !== undefined) {
      const answer = last.answer === undefined ? undefined : boundedAnswer(last.answer, this.#options.maxAnswerChars);
      this.#facts.result({ stopReason: last.stopReason, answer, usage: undefined });
      this.#facts.event({ type: 'result', stopReason: last.stopReason, sessionId: last.sessionId, ...(answer === undefined ? {} : { finalText: answer.text }) });
    }
    this.#facts.exit(this.#exitOf());
    this.#io.leave();
  }

  #exitOf(): ChildExit {
    const task = this.#task;
    if (task !== undefined) {
      if (task.cancelled) return { status: 'cancelled', code: 'aborted', error: 'the task was interrupted' };
      const which = task.sessionId === undefined ? 'the task' : `task ${task.sessionId}`;
      const resume = task.sessionId === undefined ? '' : ` (connectRun({ resume: '${task.sessionId}', clientId }) collects it)`;
      return { status: 'cancelled', code: 'aborted', error: `detached from fuseraft serve while ${which} was still open; it goes on in the daemon${resume}` };
    }
    if (this.#refusal !== undefined) return { status: 'failed', error: `fuseraft serve refused the task: ${this.#refusal}` };
    const last = this.#last;
    if (last === undefined || last.succeeded) return { status: 'done' };
    if (last.cancelled) return { status: 'cancelled', code: 'aborted', error: 'the task was interrupted' };
    return { status: 'failed', error: last.errorMessage ?? `fuseraft serve task ${last.sessionId} failed` };
  }

  /** A desk per connection: one that lost its connection neither writes nor reports (see connectionLost). */
  #newDesk(): PromptDesk {
    let live = true;
    this.#silenceDesk = () => (live = false);
    return new PromptDesk(
      { protocol: this.#options.protocol, approve: this.#options.approve, answerQuestion: this.#options.answerQuestion },
      {
        respond: (line) => void (live && this.#io.send(line)),
        report: (draft) => void (live && this.#facts.event(draft)),
      },
    );
  }
}
