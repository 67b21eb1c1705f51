// The fuseraft serve driver: tasks on a running `fuseraft serve` daemon over its WebSocket or Unix socket (hello, user_input -> queued, approvals, result).
import type { ChildExit } from '../../protocol/results.js';
import type { Control, Driver, DriverContext, Launch, Protocol, SendOutcome } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import { bridgeDisplayDraft } from './event-drafts.js';
import { passthrough, withExtras } from '../shared/event-drafts.js';
import { checkFrame, FUSERAFT_PROTOCOL_VERSION } from './frames.js';
import { stringField } from '../shared/json-kinds.js';
import type { Frame } from './frames.js';
import { PromptDesk } from './prompt-desk.js';
import { answerAfterReturn } from '../shared/session.js';
import { DaemonChannel } from '../shared/socket/daemon-channel.js';
import type { DaemonFrame } from '../shared/socket/frame-decoder.js';
import { helloOf, serveHeaders } from './serve-hello.js';
import type { Hello } from './serve-hello.js';

/** Daemon and display messages of seed 002 with no Run API counterpart: they become `info` events. */
const DOCUMENTED_TYPES = new Set(['agent_starting', 'task_resumed', 'auto_dispatched', 'a2a_call', 'text', 'info', 'warning', 'status', 'retrying']);

/** Why steer, follow-up and finalize are refused. */
const NO_TASK_INPUT = 'fuseraft serve takes each user_input as a new task: a running task reads no further input';

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

/** How the last finished task ended, and the answer so far. */
interface LastResult {
  sessionId: string;
  stopReason: string;
  succeeded: boolean;
  cancelled: boolean;
  errorMessage: string | undefined;
  answer: string | undefined;
}

/**
 * One run on fuseraft serve. A task is one `user_input`, answered by `queued` (the Ack) and, later,
 * by its `result` (one turn; the answer is `lastMessage`). The daemon runs one task of a client at a
 * time, so a prompt while a task is open is rejected. `cancel` sends `interrupt`; `close` detaches
 * (a running task goes on in the daemon and can be collected with `resume`). With a client id, a
 * dropped connection is re-attached within `reconnectGraceMs` (see docs/daemons.md).
 */
class FuseraftServeDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly readsAhead = false;
  readonly channelDir = '';
  readonly #context: DriverContext;
  readonly #channel: DaemonChannel;
  #desk: PromptDesk;
  /** Silences the current desk (its connection is gone). */
  #silenceDesk: () => void = () => undefined;
  #nextRef = 1;
  /** The `task` option, until the daemon's hello lets it be sent. */
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

  constructor(context: DriverContext) {
    this.#context = context;
    const connection = context.options.connection!;
    this.#channel = new DaemonChannel(context, {
      headers: serveHeaders(connection),
      opened: (reattach) => this.#opened(reattach),
      frame: (frame) => this.#onFrame(frame),
      lost: () => this.#onLost(),
    });
    this.#desk = this.#newDesk();
    const task = context.options.task;
    if (task !== undefined) this.#startTask = { ref: this.#nextRef++, text: task };
  }

  launch(): Launch {
    this.#channel.open();
    return this.#startTask === undefined ? {} : { taskRef: this.#startTask.ref };
  }

  attach(): void {
    // No process.
  }

  send(control: Control): SendOutcome {
    const ref = this.#nextRef++;
    const answer = this.#decide(control, ref);
    if (answer !== undefined) answerAfterReturn(this.#context.sink, { ref, ...answer });
    return { kind: 'sent', ref };
  }

  resume(): void {
    this.#channel.resume();
  }

  async finish(): Promise<void> {
    this.#desk.shutDown();
    // Nothing is left to read; the outcome waits until the socket is really closed.
    this.#channel.dispose();
    await this.#channel.closed();
  }

  disconnect(): void {
    this.#channel.disconnect();
  }

  dispose(): void {
    this.#channel.dispose();
  }

  /* Controls ------------------------------------------------------------------------------------- */

  /** The answer to one control (undefined: it comes later, with `queued` or an `error`). */
  #decide(control: Control, ref: number): { status: 'accepted' | 'applied' | 'rejected'; reason?: string; then?: () => void } | undefined {
    if (this.#ended) return { status: 'rejected', reason: 'the run has ended' };
    switch (control.type) {
      case 'prompt':
        if (this.#readOnly) return { status: 'rejected', reason: 'fuseraft serve took this connection read-only (a read token): it refuses every task' };
        if (this.#task !== undefined || this.#startTask !== undefined) {
          return { status: 'rejected', reason: 'fuseraft serve runs one task of a client at a time: wait for the result of the open one' };
        }
        if (!this.#ready) {
          this.#startTask = { ref, text: control.text };
          return undefined;
        }
        return this.#sendTask(ref, control.text) ? undefined : { status: 'rejected', reason: 'the connection to fuseraft serve is not open' };
      case 'cancel': {
        // A daemon blocked on an approval reads nothing else: answer it first.
        this.#desk.shutDown();
        const task = this.#task;
        if (task === undefined) return { status: 'accepted', then: () => this.#end() };
        task.cancelled = true;
        // While re-attaching nothing can be sent: the interrupt goes out once the daemon's hello is in.
        if (!this.#channel.send({ type: 'interrupt' })) this.#interruptPending = true;
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
    if (!this.#channel.send({ type: 'user_input', text })) return false;
    this.#task = { ref, text, sessionId: undefined, turn: 0, cancelled: false };
    return true;
  }

  /* Frames --------------------------------------------------------------------------------------- */

  #opened(reattach: boolean): void {
    this.#helloSeen = false;
    if (reattach) this.#desk = this.#newDesk();
  }

  #onFrame(message: DaemonFrame): void {
    if (this.#ended) return;
    const read = checkFrame(message as Frame, `a ${message.type} message from fuseraft serve`);
    if (read.rejection !== undefined) this.#channel.rejected(read.rejection);
    const frame = read.frame!;
    if (!this.#helloSeen) {
      if (frame.type === 'hello' && read.usable) return this.#onHello(frame);
      this.#channel.rejected({ code: 'out-of-order', reason: `a ${frame.type} message before hello (ignored)`, lineType: frame.type });
      return;
    }
    if (frame.type === 'approval_request') return this.#desk.approvalRequested(frame, read.usable);
    if (frame.type === 'question') return this.#desk.questionAsked(frame, read.usable);
    if (!read.usable) return;
    switch (frame.type) {
      case 'hello':
        this.#channel.rejected({ code: 'out-of-order', reason: 'a second hello on one connection (ignored)', lineType: 'hello' });
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
    if (draft !== undefined) return this.#channel.event(draft);
    if (DOCUMENTED_TYPES.has(frame.type)) return this.#channel.event(passthrough(frame));
    // A type seed 002 does not document (a newer daemon may add some): carried as it came.
    this.#channel.event({ type: 'passthrough', protocol: 'fuseraft-serve', frame });
  }

  #onHello(frame: Frame): void {
    const hello = helloOf(frame);
    if (hello.protocolVersion !== FUSERAFT_PROTOCOL_VERSION) {
      const reason = `fuseraft serve speaks protocol version ${JSON.stringify(hello.protocolVersion ?? null)}; this driver speaks ${FUSERAFT_PROTOCOL_VERSION}`;
      this.#channel.rejected({ code: 'version-mismatch', reason, lineType: 'hello' }, true, 'version-mismatch');
      return;
    }
    this.#helloSeen = true;
    const reattached = this.#ready;
    this.#channel.attached();
    if (reattached) return this.#onReattached(hello, frame);
    this.#readOnly = hello.readOnly;
    const resume = this.#context.options.connection!.resume;
    if (hello.readOnly && (this.#startTask !== undefined || resume !== undefined)) {
      this.#channel.rejected(
        { code: 'invalid-payload', reason: 'fuseraft serve took this connection read-only (the token is a read token): it would refuse the task, so it was not sent', lineType: 'hello' },
        true,
        'read-only',
      );
      return;
    }
    if (resume !== undefined && !hello.owns(resume)) {
      this.#channel.rejected(
        { code: 'invalid-payload', reason: `fuseraft serve has no task ${JSON.stringify(resume)} of this client (neither in flight nor a pending result)`, lineType: 'hello' },
        true,
        'unknown-session',
      );
      return;
    }
    this.#ready = true;
    this.#context.sink.ready();
    if (resume !== undefined) {
      // The turn opens before the ready event goes out, so keepAlive: false does not close an idle-looking run.
      const task: Task = { ref: undefined, text: undefined, sessionId: resume, turn: ++this.#turns, cancelled: false };
      this.#context.sink.session(resume);
      this.#task = task;
      this.#context.sink.turnStarted(task.turn);
      this.#channel.event(withExtras({ type: 'ready' }, frame, []));
      this.#channel.event({ type: 'turn-started', turn: task.turn, sessionId: resume, resumed: true });
      return;
    }
    this.#channel.event(withExtras({ type: 'ready' }, frame, []));
    if (hello.inFlight !== undefined) {
      this.#channel.event({ type: 'info', nativeType: 'in-flight', summary: `task ${hello.inFlight.sessionId} of this client is still ${hello.inFlight.status ?? 'open'} on the daemon (connectRun({ resume }) re-attaches to it)`, inFlight: hello.inFlight.fields });
    }
    if (hello.pendingResults.length > 0) {
      this.#channel.event({ type: 'info', nativeType: 'pending-results', summary: `results of ${hello.pendingResults.length} earlier task(s) of this client follow`, pendingResults: hello.pendingResults });
    }
    const start = this.#startTask;
    this.#startTask = undefined;
    if (start !== undefined && !this.#sendTask(start.ref, start.text)) {
      this.#context.sink.ack(start.ref, 'rejected', 'the connection to fuseraft serve is not open');
    }
  }

  /** A new connection after a loss: the open task must still be the daemon's, or the run cannot go on. */
  #onReattached(hello: Hello, frame: Frame): void {
    this.#channel.event(withExtras({ type: 'info', nativeType: 'reattached', summary: 're-attached to fuseraft serve' }, frame, []));
    const task = this.#task;
    if (task === undefined) return;
    let held = task.sessionId !== undefined && hello.owns(task.sessionId);
    if (task.sessionId === undefined && hello.inFlight !== undefined && hello.inFlight.task === task.text) {
      // The connection dropped between user_input and queued: the daemon has it.
      this.#confirmTask(task, hello.inFlight.sessionId, hello.inFlight.position);
      held = true;
    }
    if (held) {
      if (this.#interruptPending && task.cancelled) this.#interruptPending = !this.#channel.send({ type: 'interrupt' });
      return;
    }
    const reason = task.sessionId === undefined
      ? 'the connection dropped before fuseraft serve confirmed the task, and the daemon shows no such task of this client; it was not sent again (it may have run)'
      : `re-attached, but fuseraft serve no longer has task ${task.sessionId} of this client`;
    if (task.ref !== undefined && task.sessionId === undefined) this.#context.sink.ack(task.ref, 'rejected', reason);
    // The task is not (or no longer) the daemon's: nothing to interrupt.
    this.#task = undefined;
    this.#context.sink.fatal('connection-lost', reason);
  }

  #onQueued(frame: Frame): void {
    const task = this.#task;
    if (task === undefined || task.sessionId !== undefined) {
      this.#channel.event(passthrough(frame, `a task ${stringField(frame, 'sessionId') ?? ''} was queued (not this run's)`));
      return;
    }
    this.#confirmTask(task, frame['sessionId'] as string, typeof frame['position'] === 'number' ? frame['position'] : undefined);
  }

  #confirmTask(task: Task, sessionId: string, position: number | undefined): void {
    task.sessionId = sessionId;
    this.#context.sink.session(sessionId);
    if (task.ref !== undefined) this.#context.sink.ack(task.ref, 'accepted');
    this.#openTurn(task, { sessionId, ...(position === undefined ? {} : { position }) });
  }

  #openTurn(task: Task, fields: { sessionId: string; position?: number }): void {
    task.turn = ++this.#turns;
    this.#context.sink.turnStarted(task.turn);
    this.#channel.event({ type: 'turn-started', turn: task.turn, ...fields });
  }

  #onError(frame: Frame): void {
    const text = stringField(frame, 'text') ?? 'fuseraft serve reported an error';
    const task = this.#task;
    if (task !== undefined && task.sessionId === undefined) {
      // "The daemon answers any user_input with an error event instead of queuing it" (a read token, or another refusal).
      this.#task = undefined;
      this.#refusal = text;
      if (task.ref !== undefined) this.#context.sink.ack(task.ref, 'rejected', `fuseraft serve refused the task: ${text}`);
    }
    this.#channel.event(withExtras({ type: 'error', error: text }, frame, ['text']));
  }

  #onResult(frame: Frame): void {
    const task = this.#task;
    const sessionId = stringField(frame, 'sessionId');
    if (task === undefined || task.sessionId === undefined || sessionId !== task.sessionId) {
      this.#channel.event(passthrough(frame, `result of task ${sessionId ?? '(unknown)'}, not this run's`));
      return;
    }
    this.#task = undefined;
    const succeeded = frame['succeeded'] === true;
    const stopReason = succeeded ? 'end_turn' : task.cancelled ? 'aborted' : 'error';
    const answer = stringField(frame, 'lastMessage');
    this.#last = { sessionId, stopReason, succeeded, cancelled: task.cancelled, errorMessage: stringField(frame, 'errorMessage'), answer };
    if (answer !== undefined) {
      const agent = stringField(frame, 'lastAgent');
      this.#channel.event({ type: 'assistant-text', final: true, text: answer, sessionId, ...(agent === undefined ? {} : { agent }) });
    }
    this.#context.sink.turnCompleted({ turn: task.turn, stopReason });
    this.#channel.event(withExtras({ type: 'turn-complete', turn: task.turn, stopReason }, frame, ['lastMessage']));
    if (task.cancelled) this.#end();
  }

  /* The end ------------------------------------------------------------------------------------- */

  /** The run is over by its own account (close, cancel, a cancelled task's result): the answer, the exit, then leave. */
  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#desk.shutDown();
    const sink = this.#context.sink;
    const last = this.#last;
    if (last !== undefined) {
      const max = this.#context.options.maxFinalTextBytes;
      const text = last.answer;
      const truncated = text !== undefined && text.length > max;
      const finalText = truncated ? text.slice(0, max) : text;
      sink.result({
        stopReason: last.stopReason,
        answer: Promise.resolve({
          ...(finalText === undefined ? {} : { finalText }),
          truncated,
          ...(truncated ? { truncationNote: `the answer was longer than ${max} characters (maxFinalTextBytes) and was cut` } : {}),
        }),
      });
      this.#channel.event({ type: 'result', stopReason: last.stopReason, sessionId: last.sessionId, ...(finalText === undefined ? {} : { finalText }) });
    }
    sink.exit(this.#exitOf());
    this.#channel.leave(Math.min(1000, this.#context.options.killGraceMs));
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

  /** The connection broke while live: its pending approvals die with it (the daemon asks again); re-attach only under a client id. */
  #onLost(): boolean {
    this.#silenceDesk();
    this.#desk.shutDown();
    return this.#ready && !this.#ended && this.#context.options.connection!.clientId !== undefined;
  }

  /** A desk per connection: one that lost its connection neither writes nor reports (see #onLost). */
  #newDesk(): PromptDesk {
    let live = true;
    this.#silenceDesk = () => (live = false);
    return new PromptDesk(
      { protocol: 'fuseraft-serve', approve: this.#context.options.approve, answerQuestion: this.#context.options.answerQuestion },
      {
        respond: (line) => void (live && this.#channel.send(line)),
        report: (draft) => void (live && this.#channel.event(draft)),
      },
    );
  }
}

/** `fuseraft serve`: connectRun({ protocol: 'fuseraft-serve', url | socketPath, token, clientId, task | resume, approve }). */
export const fuseraftServeProtocol: Protocol = {
  asksApproval: true,
  // A turn is one task. Its progress is broadcast to every client (tool calls cannot be told apart) and its
  // result carries no usage; each user_input starts a new task, and a running task reads no input.
  reports: { turns: true, toolCalls: false, tokens: false, costUsd: false },
  capabilities: { finalize: false, continueConversation: false },
  validate(options: ResolvedRunOptions): void {
    const connection = options.connection;
    if (connection === undefined) throw new TypeError("protocol 'fuseraft-serve' is a daemon: start it with connectRun");
    if (connection.clientId !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(connection.clientId)) {
      throw new TypeError('options.clientId must be 1-64 characters of A-Z a-z 0-9 - _ (fuseraft serve\'s Fuseraft-Client-Id)');
    }
    if (connection.token !== undefined && connection.socketPath !== undefined) {
      throw new TypeError("options.token applies to fuseraft serve's WebSocket only: the Unix socket takes no token");
    }
    if (connection.resume !== undefined && connection.clientId === undefined) {
      throw new TypeError('options.resume needs options.clientId: fuseraft serve keeps a task for the client id that sent it');
    }
    if (options.cwd !== undefined) throw new TypeError("options.cwd does not apply to 'fuseraft-serve': the daemon runs tasks in its own directory");
  },
  create: (context) => new FuseraftServeDriver(context),
};
