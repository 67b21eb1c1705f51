// One `fuseraft run --bridge` orchestration session: stdout frames to facts and events, cancel to interrupt. Pure.
import { addUsage } from '../../wire/index.js';
import type { JsonObject, RunState, Usage } from '../../wire/index.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import { bridgeDisplayDraft, usageOf } from './event-drafts.js';
import { passthrough, withExtras } from '../shared/event-drafts.js';
import { readLine } from './frames.js';
import type { FrameRejection } from '../shared/json-line.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import type { Frame } from './frames.js';
import { Interrupter } from './interrupter.js';
import { PromptDesk } from './prompt-desk.js';
import type { ApproveCallback } from '../../protocol/requests.js';
import { announceReady, describeEnd, readyAccepted } from './session-io.js';
import type { FuseraftIo, ProcessEnd, SessionFacts } from './session-io.js';
import { boundedAnswer } from '../shared/session.js';
import type { ChildEnd, ControlVerdict, SessionAnswer } from '../shared/session.js';
import type { Control } from '../../protocol/driver.js';

export interface BridgeSessionOptions {
  /** The protocol's registered name (`options.protocol`), which `approve` sees as `request.protocol`. */
  protocol: string;
  approve?: ApproveCallback | undefined;
  /** The task (already on fuseraft's command line): gives it a ref, answered `accepted` on `ready`. */
  task?: string | undefined;
  /** How long after an `interrupt` line the session may run on before SIGINT. */
  interruptGraceMs: number;
  /** Longest answer kept, in characters; longer ones are cut and marked truncated. */
  maxAnswerChars: number;
}

/** The agent name of fuseraft's injected routing corrections (seed 002, AgentMessage). */
const ORCHESTRATOR = 'Orchestrator';

/** Why the bridge refuses turn controls. */
const NO_USER_INPUT = 'fuseraft run --bridge reads no user input (only approvals and interrupt)';

/**
 * The driver logic of one orchestration session. The task is an argument, so the session runs from
 * the start; each `agent_message` is one completed turn (an `agent_starting` opens it); `result` is
 * the last event and decides the outcome with the exit code. stdin takes only approval responses
 * and `interrupt`: prompt, steer, follow-up and finalize are rejected; close is `applied` (the
 * session ends by itself); cancel sends `interrupt`, after which fuseraft sends `result` with
 * `succeeded: false` and exits.
 */
export class BridgeSession {
  readonly #io: FuseraftIo;
  readonly #facts: SessionFacts;
  readonly #options: BridgeSessionOptions;
  readonly #desk: PromptDesk;
  readonly #interrupter: Interrupter;

  #state: RunState = 'starting';
  #nextRef = 1;
  #lineNumber = 0;
  #readySeen = false;
  #fatal = false;
  #turn = 0;
  #turnOpen = false;
  #answer: SessionAnswer | undefined;
  #usage: Usage | undefined;
  #result: Frame | undefined;
  #cancelled = false;
  #gone = false;
  readonly #taskRef: number | undefined;

  constructor(io: FuseraftIo, facts: SessionFacts, options: BridgeSessionOptions) {
    this.#io = io;
    this.#facts = facts;
    this.#options = options;
    if (options.task !== undefined) this.#taskRef = this.#nextRef++;
    this.#interrupter = new Interrupter(io, options.interruptGraceMs);
    this.#desk = new PromptDesk(
      { protocol: options.protocol, approve: options.approve },
      { respond: (line) => this.#write(line), report: (draft) => facts.event(draft) },
    );
  }

  /** The ref of the task (answered through `facts.ack` once fuseraft is ready). */
  get taskRef(): number | undefined {
    return this.#taskRef;
  }

  /** The mirrored run state: running from `ready` to the exit (the task is already given). */
  get state(): RunState {
    return this.#state;
  }

  /** One stdout line, without its newline. */
  onLine(line: string): void {
    const read = readLine(line, ++this.#lineNumber);
    if (read.rejection !== undefined) this.#facts.rejected(read.rejection, false);
    if (read.frame !== undefined) this.#onFrame(read.frame, read.usable);
  }

  /** A stdout line longer than the bound was skipped (its rejection, its type sniffed from its first bytes). */
  onOverlongLine(rejection: FrameRejection): void {
    ++this.#lineNumber;
    this.#facts.rejected(rejection, false);
    if (rejection.lineType === 'approval_request') this.#desk.approvalRequested({ type: 'approval_request' }, false);
  }

  #onFrame(frame: Frame, usable: boolean): void {
    if (this.#fatal) return;
    if (frame.type === 'approval_request') return this.#desk.approvalRequested(frame, usable);
    if (frame.type === 'ready') return this.#onReady(frame);
    if (!usable) return;
    if (!this.#readySeen && frame.type !== 'result') {
      // "A run that fails before it starts sends only result": anything else first is out of order.
      this.#facts.rejected({ code: 'out-of-order', reason: `a ${frame.type} frame before ready`, lineType: frame.type }, false);
      return;
    }
    if (this.#result !== undefined) {
      this.#facts.rejected({ code: 'out-of-order', reason: `a ${frame.type} frame after result`, lineType: frame.type }, false);
      return;
    }
    switch (frame.type) {
      case 'agent_starting':
        if (!this.#turnOpen) this.#openTurn(frame);
        else this.#facts.event(passthrough(frame, `${stringField(frame, 'agent') ?? 'an agent'} is starting`));
        return;
      case 'agent_message':
        return this.#onAgentMessage(frame);
      case 'result':
        return this.#onResult(frame);
      case 'error':
        this.#facts.event(withExtras({ type: 'error', error: stringField(frame, 'text') ?? 'fuseraft reported an error' }, frame, ['text']));
        return;
    }
    this.#facts.event(bridgeDisplayDraft(frame) ?? passthrough(frame));
  }

  #onReady(frame: Frame): void {
    const ready = readyAccepted(frame, this.#readySeen, this.#facts);
    if (ready === 'version-mismatch') {
      this.#fatal = true;
      this.#desk.shutDown();
    }
    if (ready !== 'ready') return;
    this.#readySeen = true;
    this.#state = 'ready';
    announceReady(frame, this.#facts);
    // The task was given on the command line: the session is at work from here on.
    this.#state = 'running';
    if (this.#taskRef !== undefined) this.#facts.ack(this.#taskRef, 'accepted');
  }

  #openTurn(frame: Frame | undefined): void {
    this.#turn++;
    this.#turnOpen = true;
    const draft = { type: 'turn-started' as const, turn: this.#turn };
    this.#facts.turnStarted(this.#turn);
    this.#facts.event(frame === undefined ? draft : withExtras(draft, frame, []));
  }

  /** One completed agent turn: its text, then its turn-complete with usage. */
  #onAgentMessage(frame: Frame): void {
    const message = frame['message'] as JsonObject;
    const agent = message['agentName'] as string;
    const content = message['content'] as string;
    const orchestrator = agent === ORCHESTRATOR;
    if (!this.#turnOpen) this.#openTurn(undefined);
    const base = { agent, ...(orchestrator ? { orchestrator: true as const } : {}) };
    const text = message['role'] === 'user'
      ? { type: 'user' as const, text: content, ...base }
      : { type: 'assistant-text' as const, final: true, text: content, ...base };
    this.#facts.event(withExtras(text, frame, ['message']));
    // Corrections and compaction summaries are not an agent's answer.
    if (!orchestrator && message['isCompactionSummary'] !== true && message['role'] !== 'user') {
      this.#answer = boundedAnswer(content, this.#options.maxAnswerChars);
    }
    const usage = usageOf(message);
    if (usage !== undefined) this.#usage = addUsage(this.#usage ?? {}, usage);
    this.#turnOpen = false;
    const complete: RunEventDraftOf<'turn-complete'> = { type: 'turn-complete', turn: this.#turn, stopReason: 'end_turn', ...base };
    if (usage !== undefined) complete.usage = usage;
    if (isObject(message) && Array.isArray(message['toolCalls'])) complete.toolCalls = message['toolCalls'];
    this.#facts.turnCompleted(this.#turn, 'end_turn', usage);
    this.#facts.event(complete);
  }

  #onResult(frame: Frame): void {
    this.#result = frame;
    this.#interrupter.settled();
    if (this.#turnOpen) {
      // The session ended inside a turn (an interrupt, a failure): that turn ends without a message.
      this.#turnOpen = false;
      const stopReason = frame['succeeded'] === true ? 'end_turn' : this.#cancelled ? 'aborted' : 'error';
      this.#facts.turnCompleted(this.#turn, stopReason, undefined);
      this.#facts.event({ type: 'turn-complete', turn: this.#turn, stopReason });
    }
    const succeeded = frame['succeeded'] === true;
    const stopReason = succeeded ? 'end_turn' : this.#cancelled ? 'aborted' : 'error';
    const draft: RunEventDraftOf<'result'> = { type: 'result', stopReason };
    if (this.#answer !== undefined) draft.finalText = this.#answer.text;
    if (this.#answer?.truncated === true) draft.truncated = true;
    const usage = usageOf(frame) ?? this.#usage;
    if (usage !== undefined) draft.usage = usage;
    this.#facts.result({ stopReason, answer: this.#answer, usage });
    this.#facts.event(withExtras(draft, frame, ['inputTokens', 'outputTokens']));
    this.#facts.ending();
  }

  /** Decides and carries out one control of the run core. */
  send(control: Control): ControlVerdict {
    const ref = this.#nextRef++;
    if (this.#gone || this.#state === 'cancelled' || this.#result !== undefined) {
      return { ref, status: 'rejected', reason: this.#cancelled ? 'run is cancelled' : 'the session has ended' };
    }
    switch (control.type) {
      case 'cancel':
        this.#cancelled = true;
        this.#state = 'cancelled';
        // A session blocked on an approval reads nothing else: answer it first.
        this.#desk.shutDown();
        this.#interrupter.interrupt(true);
        return { ref, status: 'accepted' };
      case 'close':
        return { ref, status: 'applied', reason: 'fuseraft run --bridge ends by itself when the session is over' };
      default:
        return { ref, status: 'rejected', reason: NO_USER_INPUT };
    }
  }

  #write(line: JsonObject): void {
    if (this.#gone) return;
    if (!this.#io.write(line)) {
      this.#facts.event({ type: 'error', error: `could not write ${String(line['type'])} to fuseraft's stdin`, source: 'subvisor' });
    }
  }

  /**
   * The process is gone: how the session ended by its own account (`result` and the exit code), or
   * undefined when fuseraft sent no `result` (a crash, a protocol failure: the run core decides).
   * `succeeded` with exit 0 is `done`; `succeeded: false` after the parent's cancel is `cancelled`;
   * anything else is `failed` with fuseraft's `errorMessage`.
   */
  finish(end: ProcessEnd): ChildEnd | undefined {
    this.#gone = true;
    this.#interrupter.settled();
    this.#desk.shutDown();
    return this.#endOf(end);
  }

  /** How the run ended if fuseraft now exits with the code its `result` announced; undefined before `result`. */
  provisionalEnd(): ChildEnd | undefined {
    if (this.#result === undefined) return undefined;
    const exitCode = typeof this.#result['exitCode'] === 'number' ? this.#result['exitCode'] : 0;
    return this.#endOf({ exitCode, signal: null });
  }

  #endOf(end: ProcessEnd): ChildEnd | undefined {
    const result = this.#result;
    if (this.#fatal) return undefined;
    if (result === undefined) return this.#cancelled ? { status: 'cancelled' } : undefined;
    const message = stringField(result, 'errorMessage');
    if (result['succeeded'] !== true) {
      if (this.#cancelled) return { status: 'cancelled' };
      return { status: 'failed', error: message ?? `fuseraft run failed (it ${describeEnd(end)})` };
    }
    if (end.exitCode !== 0) return { status: 'failed', error: `fuseraft reported success but ${describeEnd(end)}` };
    return { status: 'done' };
  }

  /** The answer: the content of the last agent_message that is not an Orchestrator correction. */
  answer(): SessionAnswer | undefined {
    return this.#answer;
  }

  /** Summed usage: the result's totals, or else the sum of every agent message's. */
  usage(): Usage | undefined {
    return (this.#result === undefined ? undefined : usageOf(this.#result)) ?? this.#usage;
  }

  /** Stops the timers (the run is over). */
  dispose(): void {
    this.#gone = true;
    this.#interrupter.settled();
  }
}
