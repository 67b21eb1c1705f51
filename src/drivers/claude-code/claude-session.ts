// One Claude Code conversation over stream-json: the initialize handshake, user lines as turns, steers folded in, interrupts, permission questions, results as turn ends, the end. Pure: no process.
import { actOnControl, advance } from '../../wire/index.js';
import type { JsonObject, RunState } from '../../wire/index.js';
import type { Control } from '../../protocol/driver.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { ApproveCallback } from '../../protocol/requests.js';
import { isObject } from '../shared/json-kinds.js';
import { decodeTypedFrame } from '../shared/json-line.js';
import type { TypedFrame } from '../shared/json-line.js';
import { dropHeld, FINALIZE_PROMPT, finalizeNote, reportResult } from '../shared/session.js';
import type { ChildEnd, ControlVerdict, HeldFollowUp } from '../shared/session.js';
import type { StdioLines } from '../shared/stdio/channel.js';
import { ClaudeControls } from './control-channel.js';
import { MessageMap } from './message-map.js';
import { TurnResults } from './turn-results.js';
import type { StdioSession } from '../shared/stdio/session-driver.js';
import type { StdioSessionFacts, StdioSessionIo } from '../shared/stdio/session-io.js';

export interface ClaudeSessionOptions {
  /** The protocol's registered name, which `approve` sees as `request.protocol`. */
  protocol: string;
  task: string | undefined;
  approve?: ApproveCallback | undefined;
  maxAnswerChars: number;
  /** The bound of an interrupt's answer. */
  requestMs: number;
  /** Whether the run resumes a session (`--resume`): a session Claude Code does not have fails it `unknown-session`. */
  resumes: boolean;
}

/** A user line written to Claude Code and not yet replayed (`--replay-user-messages`): its control, and what it was. */
interface SentInput {
  ref: number | undefined;
  kind: 'task' | 'prompt' | 'steer' | 'follow-up' | 'final';
  text: string;
  /** A steer or follow-up that reached the agent already (it began a turn): its replay delivers nothing more. */
  delivered?: true;
}

/**
 * The driver logic of one `claude --input-format stream-json` process. The run state follows the (state,
 * control) table (`actOnControl`), so every control gets the Ack a Fen child would give. Claude Code is ready
 * once it answered `initialize` (it writes nothing before it is spoken to, and `system/init` comes only with
 * the first turn); the task's user line goes right behind `initialize`. Every prompt is a user line; a turn ends
 * with a `result`. A steer while a turn runs is a
 * user line too: Claude Code folds it into the running turn (2.1.328: between tool calls, as "The user sent a
 * new message while you were working") or, when the turn has no tool call left, runs it as the next turn; it is
 * delivered when Claude Code replays it, and dropped if the process goes first. A follow-up while a turn runs
 * waits for the turn's `result`, then is the next user line. Cancel denies waiting permission questions and
 * sends `interrupt`; stdin ends once the interrupted turn's `result` came. Close ends stdin (after the turn);
 * finalize interrupts the turn, then sends its note as one last turn, then ends stdin.
 */
export class ClaudeSession implements StdioSession {
  readonly #io: StdioSessionIo;
  readonly #facts: StdioSessionFacts;
  readonly #options: ClaudeSessionOptions;
  readonly #controls: ClaudeControls;
  readonly #map: MessageMap;

  #state: RunState = 'starting';
  #nextRef = 1;
  readonly #taskRef: number | undefined;
  #fatal = false;
  /** Whether the task's user line went out right behind `initialize` (undefined: no task). */
  #taskWritten: boolean | undefined;

  /** The turn running: its number and the input that began it (undefined: one Claude Code began by itself). */
  #turn: { number: number; origin: SentInput | undefined } | undefined;
  #count = 0;
  /** User lines written and not replayed yet, oldest first. */
  #sent: SentInput[] = [];
  /** Follow-ups waiting for the turn to end. */
  #held: HeldFollowUp[] = [];

  #finalize: 'none' | 'interrupting' | 'final-turn' = 'none';
  #finalNote = FINALIZE_PROMPT;
  #cancelled = false;
  #inputEnded = false;

  readonly #results: TurnResults;

  constructor(io: StdioSessionIo, facts: StdioSessionFacts, options: ClaudeSessionOptions) {
    this.#io = io;
    this.#facts = facts;
    this.#options = options;
    this.#controls = new ClaudeControls(io, facts, { protocol: options.protocol, approve: options.approve });
    this.#map = new MessageMap(facts);
    this.#results = new TurnResults(options.maxAnswerChars);
    if (options.task !== undefined) this.#taskRef = this.#nextRef++;
  }

  /** The ref of the task prompt (written behind `initialize`, accepted once that is answered). */
  get taskRef(): number | undefined {
    return this.#taskRef;
  }

  /** The mirrored run state. */
  get state(): RunState {
    return this.#state;
  }

  /** Where the stdio channel hands Claude Code's stdout lines. */
  readonly lines: StdioLines = {
    line: (text, lineNumber) => this.#line(text, lineNumber),
    overlong: (rejection, _lineNumber, head) => this.#controls.overlong(rejection, head),
  };

  /* ---------------------------------------------------------------------------------------------- */
  /* The handshake                                                                                  */
  /* ---------------------------------------------------------------------------------------------- */

  /**
   * The process is up: `initialize`, and the task's user line right behind it, as the Agent SDKs write them
   * (Claude Code reads its stdin in order: the turn starts once it is initialized, a round trip sooner than after
   * the answer). `initialize`'s answer is ready (bounded by the run's ready timer).
   */
  start(): void {
    this.#controls.request({ subtype: 'initialize', hooks: null }, undefined, {
      settled: () => this.#initialized(),
      failed: (failure) => {
        if (failure.kind === 'closed') return;
        this.#fatal = true;
        this.#controls.shutDown();
        this.#facts.fatal('protocol-error', `claude refused initialize: ${failure.reason}`);
      },
    });
    if (this.#taskRef !== undefined) this.#taskWritten = this.#write({ ref: this.#taskRef, kind: 'task', text: this.#options.task! });
  }

  #initialized(): void {
    // Cancelled or closed while the handshake ran: the task (if any) is being interrupted, or stdin has ended.
    if (this.#state !== 'starting') return;
    this.#state = advance(this.#state, 'started');
    this.#facts.ready();
    this.#facts.event({ type: 'ready' });
    if (this.#taskRef === undefined) return;
    if (this.#taskWritten !== true) return this.#facts.ack(this.#taskRef, 'rejected', "claude's stdin is closed");
    this.#state = 'running';
    this.#facts.ack(this.#taskRef, 'accepted');
    this.#open(this.#sent.find((input) => input.kind === 'task'));
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Controls                                                                                       */
  /* ---------------------------------------------------------------------------------------------- */

  /** Decides and carries out one control of the run core. */
  send(control: Control): ControlVerdict {
    const ref = this.#nextRef++;
    const text = 'text' in control ? control.text : '';
    const accepted: ControlVerdict = { ref, status: 'accepted' };
    const closed: ControlVerdict = { ref, status: 'rejected', reason: "claude's stdin is closed" };
    return actOnControl(this.#state, control.type, {
      refused: ({ status, reason }) => (reason === undefined ? { ref, status } : { ref, status, reason }),
      moveTo: (next) => (this.#state = next),
      actions: {
        'start-turn': () => {
          // A steer or follow-up to an idle run begins the turn: it reached the agent now.
          const input: SentInput = control.type === 'prompt' ? { ref, kind: 'prompt', text } : { ref, kind: control.type as 'steer' | 'follow-up', text, delivered: true };
          if (!this.#write(input)) return this.#unsent(closed);
          this.#open(input);
          return input.kind === 'prompt' ? accepted : { ...accepted, injected: true };
        },
        'queue-steer': () => (this.#write({ ref, kind: 'steer', text }) ? accepted : closed),
        'queue-follow-up': () => {
          this.#held.push({ ref, text });
          return accepted;
        },
        'start-final-turn': () => {
          this.#finalize = 'final-turn';
          this.#finalNote = finalizeNote(control);
          const input: SentInput = { ref: undefined, kind: 'final', text: this.#finalNote };
          if (!this.#write(input)) return this.#unsent(closed);
          this.#open(input);
          return accepted;
        },
        'interrupt-turn': () => {
          this.#finalize = 'interrupting';
          this.#finalNote = finalizeNote(control);
          dropHeld(this.#held, this.#facts, 'the run is finalizing');
          this.#interrupt();
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
          this.#cancelled = true;
          this.#controls.shutDown();
          dropHeld(this.#held, this.#facts, 'the run was cancelled');
          // The task written behind initialize runs unless interrupted: its aborted result ends stdin.
          if (this.#turn === undefined && !this.#taskPending()) this.#endInput();
          else this.#interrupt();
          return accepted;
        },
      },
    });
  }

  /** The task went out behind `initialize` and no turn has ended yet (the run was not ready when it was cancelled). */
  #taskPending(): boolean {
    return this.#taskWritten === true && this.#results.last.status === undefined;
  }

  /** A turn that could not be started: the state goes back (nothing runs). */
  #unsent(verdict: ControlVerdict): ControlVerdict {
    this.#state = 'ready';
    return verdict;
  }

  /** Writes one user line; false when stdin is closed. */
  #write(input: SentInput): boolean {
    const sent = this.#io.send({ type: 'user', message: { role: 'user', content: input.text }, parent_tool_use_id: null, session_id: '' });
    if (!sent.ok) return false;
    this.#sent.push(input);
    return true;
  }

  /** `interrupt`: Claude Code ends the turn with a `result` (`terminal_reason` `aborted_*`). */
  #interrupt(): void {
    this.#controls.request({ subtype: 'interrupt' }, this.#options.requestMs, {
      settled: () => undefined,
      failed: (failure) => {
        if (failure.kind === 'closed') return;
        this.#facts.event({ type: 'error', error: `claude did not interrupt the turn: ${failure.reason}`, source: 'subvisor' });
        if (this.#cancelled) this.#endInput();
      },
    });
  }

  #endInput(): void {
    if (this.#inputEnded) return;
    this.#inputEnded = true;
    this.#io.endInput();
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Lines                                                                                          */
  /* ---------------------------------------------------------------------------------------------- */

  #line(text: string, lineNumber: number): void {
    const decoded = decodeTypedFrame(text, `stdout line ${lineNumber}`);
    if (decoded.rejection !== undefined) return this.#facts.rejected(decoded.rejection);
    const frame = decoded.value;
    switch (frame.type) {
      case 'control_request':
      case 'control_response':
      case 'control_cancel_request':
        return this.#controls.take(frame);
      case 'result':
        return this.#result(frame);
      case 'user':
        if (frame['isReplay'] === true) return this.#replay(frame);
        return this.#map.take(frame);
      default:
        return this.#map.take(frame);
    }
  }

  /** A user line Claude Code took up (`isReplay`): the turn it opens, or the steer it delivers. */
  #replay(frame: TypedFrame): void {
    const message = isObject(frame['message']) ? frame['message'] : {};
    const text = textOf(message['content']);
    const index = this.#sent.findIndex((input) => input.text === text);
    const input = index < 0 ? undefined : this.#sent.splice(index, 1)[0]!;
    // A line Claude Code took up after the turn before it ended: it began a turn of its own.
    if (this.#turn === undefined) this.#open(input);
    if (input?.kind === 'steer' && input.ref !== undefined && input.delivered !== true) {
      input.delivered = true;
      this.#facts.delivery(input.ref, 'injected');
      return this.#facts.event({ type: 'steering-injected', text: input.text, ref: input.ref });
    }
    this.#facts.event(text === undefined ? { type: 'user' } : { type: 'user', text });
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Turns                                                                                          */
  /* ---------------------------------------------------------------------------------------------- */

  #open(origin: SentInput | undefined): void {
    if (this.#turn !== undefined) return;
    const number = ++this.#count;
    this.#turn = { number, origin };
    // A turn Claude Code began by itself (a steer it ran after the turn before) moves a ready run to running.
    if (this.#state === 'ready') this.#state = 'running';
    if (origin?.ref !== undefined && origin.delivered === true) {
      this.#facts.event({ type: origin.kind === 'steer' ? 'steering-injected' : 'follow-up-injected', text: origin.text, ref: origin.ref });
    }
    this.#facts.turnStarted(number);
    this.#facts.event({ type: 'turn-started', turn: number });
  }

  /** `result`: the turn's end, its usage (the cost is the growth of the process's cumulative `total_cost_usd`), its answer or error. */
  #result(frame: TypedFrame): void {
    if (this.#unknownSession(frame)) return;
    if (this.#turn === undefined) this.#open(undefined);
    const turn = this.#turn!;
    this.#turn = undefined;
    const end = this.#results.read(frame);
    const answer = end.answer;
    this.#facts.turnCompleted(turn.number, end.stopReason, end.usage, answer?.truncated === false ? answer.text : undefined);
    // The run's state moves before the event is published: a listener may send the next prompt from it.
    this.#afterTurn();
    const draft: RunEventDraftOf<'turn-complete'> = { type: 'turn-complete', turn: turn.number, stopReason: end.stopReason, extra: end.extra };
    if (end.usage !== undefined) draft.usage = end.usage;
    if (end.error !== undefined) draft.error = end.error;
    this.#facts.event(draft);
  }

  /**
   * 2.1.328 given `--resume` with an id it has no session for: a first `result` with `num_turns: 0` whose `errors`
   * say "No conversation found with session ID: ...", then exit 1 by itself. The run fails `unknown-session`.
   */
  #unknownSession(frame: TypedFrame): boolean {
    if (!this.#options.resumes || this.#count > 1 || this.#results.last.status !== undefined || frame['num_turns'] !== 0) return false;
    const errors = frame['errors'];
    const text = Array.isArray(errors) ? errors.find((entry): entry is string => typeof entry === 'string' && entry.startsWith('No conversation found')) : undefined;
    if (text === undefined) return false;
    this.#fatal = true;
    this.#controls.shutDown();
    this.#facts.fatal('unknown-session', `claude could not resume the session: ${text}`);
    return true;
  }

  /** What the end of a turn sets off: the end of stdin, the finalize's last turn, the next follow-up. */
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
          const input: SentInput = { ref: undefined, kind: 'final', text: this.#finalNote };
          if (this.#write(input)) return this.#open(input);
        }
        this.#state = advance(this.#state, 'final-turn-done');
        return this.#endInput();
      default:
        return;
    }
    const next = this.#held.shift();
    if (next === undefined) return;
    const input: SentInput = { ref: next.ref, kind: 'follow-up', text: next.text, delivered: true };
    if (!this.#write(input)) {
      this.#facts.delivery(next.ref, 'dropped');
      return;
    }
    this.#state = 'running';
    this.#facts.delivery(next.ref, 'injected');
    this.#open(input);
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* The end                                                                                        */
  /* ---------------------------------------------------------------------------------------------- */

  /**
   * The process is gone: how the run ended as Claude Code showed it, or undefined when it did not say (it exited
   * before subvisor ended its stdin: a crash; a protocol failure): the run core decides then. After subvisor
   * ended stdin: `cancelled` when cancelled; `failed` with the model's message when the last turn failed (the
   * CLI then exits 1 on purpose); `cancelled` when it was interrupted; `failed` on another non-zero exit; else
   * `done` with the last completed turn's answer.
   */
  finish(exit: { exitCode: number | null; signal: string | null }): ChildEnd | undefined {
    this.#controls.close('claude exited');
    dropHeld(this.#held, this.#facts, 'claude exited');
    const unread = this.#sent.filter((input) => input.kind === 'steer' && input.ref !== undefined && input.delivered !== true);
    this.#sent = [];
    for (const steer of unread) this.#facts.delivery(steer.ref!, 'dropped');
    if (unread.length > 0) this.#facts.event({ type: 'info', nativeType: 'dropped', summary: 'steers claude never took up', refs: unread.map((steer) => steer.ref!) });
    if (this.#fatal) return undefined;
    if (this.#cancelled) return { status: 'cancelled' };
    if (!this.#inputEnded) return undefined;
    const last = this.#results.last;
    if (last.status === 'failed') return { status: 'failed', error: last.error ?? 'the last turn failed' };
    if (last.status === 'aborted') return { status: 'cancelled', error: 'claude interrupted the last turn' };
    if (exit.exitCode !== 0) return { status: 'failed', error: `claude ${exit.signal === null ? `exited with code ${exit.exitCode}` : `was killed by ${exit.signal}`} after its stdin ended` };
    reportResult(this.#facts, 'end_turn', this.#results.answer, this.#results.usage);
    return { status: 'done' };
  }

  /** Nothing more is read or sent (the run is over). */
  dispose(): void {
    this.#controls.close('the run ended');
  }
}

/** The text of a user message's content: the string, or its text blocks joined. */
function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const texts = content.filter((block): block is JsonObject => isObject(block) && block['type'] === 'text' && typeof block['text'] === 'string').map((block) => block['text'] as string);
  return texts.length === 0 ? undefined : texts.join('\n');
}
