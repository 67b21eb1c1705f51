// The in-memory driver: a run with no process whose child side a test plays in-process (like MCP's linked pair).
import type { Control, Driver, DriverContext, DriverSink, Launch, Protocol, ProtocolCapabilities, SendOutcome } from '../protocol/driver.js';
import type { ProtocolReports } from '../protocol/budget.js';
import { resolveOptions, startRun, telemetryOf, validateFor } from '../api/spawn-run.js';
import { OPTION_KEYS as RUN_OPTION_KEYS } from '../api/option-checks.js';
import { refuseUnknownKeys } from '../text/option-keys.js';
import { meterFacts } from '../drivers/shared/session.js';
import type { Usage } from '../wire/index.js';
import type { OutcomeErrorCode, OutcomeStatus, ExitRunEvent, RateLimitFields, RejectedEvent, Run, RunEvent, RunEventDraft, RunOptions } from '../api/types.js';

/** A control as the in-memory child received it: its ref (the Ack's `seq`) and the control. */
export interface ReceivedControl {
  ref: number;
  control: Control;
}

/**
 * The child side of an in-memory run. Each method reports what a well-behaved child would (the fact
 * and its event: `ack()` is both the control-ack event and the answer of the control), so a test
 * drives the run core's state, ack and outcome logic in microseconds, with no process and no files.
 * Event `seq`s count from 1 like a Fen child's.
 */
export interface InMemoryChild {
  /** Every control the run sent, in order (the task prompt first when there is a task). */
  readonly controls: readonly ReceivedControl[];
  /** Called for each control as it arrives (after it is in `controls`), on a microtask: answer it from here. */
  onControl: ((received: ReceivedControl) => void) | undefined;
  /** True once the run dropped the connection (its kill ladder ran out). */
  readonly disconnected: boolean;
  /** `ready`. */
  ready(): void;
  /** `control-ack` for the control `ref`. */
  ack(ref: number, status: 'accepted' | 'applied' | 'rejected', reason?: string): void;
  /** `turn-started` (turn numbers count from 1; default: the next one). */
  turnStarted(turn?: number): void;
  /** `assistant-text-delta`; the turn's deltas make its answer (reported with `turnComplete` to a run with an outputSchema). */
  text(delta: string): void;
  /** `tool-call` (and the fact a budget counts). */
  toolCall(name: string): void;
  /** `llm-end` with the model call's usage (and the fact a budget counts while the turn is open). */
  modelCallEnded(usage: Usage): void;
  /** `turn-complete` of the open turn. */
  turnComplete(stopReason?: string, usage?: Usage): void;
  /** `steering-injected` / `follow-up-injected` naming the control `ref`. */
  injected(ref: number, kind?: 'steer' | 'follow-up'): void;
  /** `info` listing dropped steer/follow-up refs. */
  dropped(refs: number[]): void;
  /** `rate-limit` with these fields (and the fact a pool's gate hears: `DriverSink.rateLimit`). */
  rateLimit(report: RateLimitFields): void;
  /** `result` with the answer. */
  result(finalText: string | undefined, options?: { stopReason?: string; usage?: Usage; truncated?: boolean }): void;
  /** `exit`: the child says how it ended (the run ends when it is `gone()`, or after the kill grace). */
  exit(status: OutcomeStatus, error?: string): void;
  /**
   * Any event, published as it is (its envelope filled in), with the fact it means reported to the run
   * as a well-behaved child means it: `ready`, `control-ack` (the answer of its `ref`), `turn-started`, `rate-limit`,
   * `turn-complete` (with the turn's text as its answer), a delivery (`steering-injected`,
   * `follow-up-injected`, `info` refs), `result` (its answer: `answer` when given, else the event's inline
   * text), `exit`, and the figures a budget counts (`tool-call`, `llm-end`). Every method above is one `play`.
   */
  play(event: PlayableEvent, answer?: PlayedAnswer): void;
  /** Any event, published as it is (its envelope filled in), after the budget's facts it carries (`tool-call`, `llm-end`). */
  event(event: RunEventDraft): void;
  /** A rejected line. */
  rejected(event: Omit<RejectedEvent, 'type'>): void;
  /** A protocol failure the run cannot survive. */
  fatal(code: OutcomeErrorCode, error: string): void;
  /** The peer's own session id (the outcome's `sessionId`). */
  session(id: string): void;
  /** The connection is gone: the run wraps up. */
  gone(): void;
  /** A request the child waits on and the driver could not answer (the run fails past `requestTimeoutMs` unless unblocked). */
  blocked(id: string, what: string): void;
  /** That request was settled elsewhere. */
  unblocked(id: string): void;
}

/** What {@link InMemoryChild.play} takes: a child's event without its envelope, or its `exit`. */
export type PlayableEvent = RunEventDraft | Omit<ExitRunEvent, 'v' | 'seq' | 'run' | 'synthetic'>;

/** The answer a played `result` carries (the whole text, when the event's inline one is cut). */
export interface PlayedAnswer {
  finalText?: string;
  truncated: boolean;
}

/** A run over the in-memory driver, and the child side to play. */
export interface InMemoryRun<T = unknown> {
  run: Run<T>;
  child: InMemoryChild;
}

/**
 * What the played protocol reports and can do (default: every figure, finalize and continuing the
 * conversation), so a test plays a protocol with less; a budget on a figure it does not report is refused.
 */
export interface InMemoryProtocol {
  reports?: Partial<ProtocolReports>;
  capabilities?: Partial<ProtocolCapabilities>;
}

class InMemoryDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly received: ReceivedControl[] = [];
  onControl: ((received: ReceivedControl) => void) | undefined;
  disconnected = false;
  readonly #context: DriverContext;
  #nextRef = 1;

  constructor(context: DriverContext) {
    this.#context = context;
  }

  get sink(): DriverSink {
    return this.#context.sink;
  }

  launch(): Launch {
    const task = this.#context.options.task;
    if (task === undefined) return {};
    return { taskRef: this.#receive({ type: 'prompt', text: task }) };
  }

  send(control: Control): SendOutcome {
    if (this.disconnected) return { kind: 'broken', reason: 'the in-memory connection is closed' };
    return { kind: 'sent', ref: this.#receive(control) };
  }

  resume(): void {
    // Events are pushed by the test; nothing is buffered on this side.
  }

  finish(): void {
    // Nothing left to read.
  }

  disconnect(): void {
    this.disconnected = true;
  }

  dispose(): void {
    this.disconnected = true;
  }

  #receive(control: Control): number {
    const received = { ref: this.#nextRef++, control };
    this.received.push(received);
    queueMicrotask(() => this.onControl?.(received));
    return received.ref;
  }
}

/** createInMemoryRun's options: spawnRun's without what starts a process. */
export type InMemoryRunOptions<T = unknown> = Omit<RunOptions<T>, 'command' | 'args' | 'protocol'>;

/** Every key of {@link InMemoryRunOptions}. */
export const IN_MEMORY_RUN_OPTION_KEYS = RUN_OPTION_KEYS.filter((key) => key !== 'command' && key !== 'args' && key !== 'protocol');

/**
 * Starts a run whose child is played by the test, in-process: `createInMemoryRun({ task: 'hi' })`.
 * Options are those of `spawnRun` without `command`/`args`/`protocol` (no process is started); `played`
 * says what the protocol reports and can do. Throws on invalid options, as spawnRun does.
 */
export function createInMemoryRun<T = unknown>(options: InMemoryRunOptions<T> = {}, played: InMemoryProtocol = {}): InMemoryRun<T> {
  let driver: InMemoryDriver | undefined;
  const protocol: Protocol = {
    reports: { turns: true, toolCalls: true, tokens: true, costUsd: true, ...played.reports },
    capabilities: { finalize: true, continueConversation: true, ...played.capabilities },
    validate: () => undefined,
    create: (context) => (driver = new InMemoryDriver(context)),
  };
  refuseUnknownKeys(options, IN_MEMORY_RUN_OPTION_KEYS, 'createInMemoryRun');
  const resolved = { ...resolveOptions({ ...options, command: 'in-memory' }), protocol: 'in-memory' };
  validateFor(protocol, resolved);
  // Through the API's start, so an in-memory run is traced like any other (see docs/observability.md).
  const run = startRun(resolved, protocol, { journal: undefined, telemetry: telemetryOf(options) }) as Run<T>;
  return { run, child: linkedChild(driver!, run.id, resolved.outputSchema !== undefined) };
}

function linkedChild(driver: InMemoryDriver, runId: string, reportsAnswers: boolean): InMemoryChild {
  let seq = 0;
  let turn = 0;
  /** The open turn's text: its answer. */
  let turnText = '';
  const sink = () => driver.sink;
  // The spread of a union loses the link between `type` and its fields; each member stays a RunEvent once enveloped.
  const publish = (event: PlayableEvent) => sink().event({ ...event, v: 1, seq: ++seq, run: runId } as RunEvent);
  const child: InMemoryChild = {
    get controls() {
      return driver.received;
    },
    get onControl() {
      return driver.onControl;
    },
    set onControl(handler) {
      driver.onControl = handler;
    },
    get disconnected() {
      return driver.disconnected;
    },
    play(event, answer) {
      if (event.type === 'turn-started') {
        turn = event.turn;
        turnText = '';
      } else if (event.type === 'assistant-text-delta') {
        turnText += event.delta ?? '';
      }
      reportFactOf(sink(), event, { answer, turnAnswer: reportsAnswers ? turnText : undefined });
      publish(event);
    },
    ready() {
      child.play({ type: 'ready' });
    },
    ack(ref, status, reason) {
      child.play({ type: 'control-ack', status, ref, ...(reason === undefined ? {} : { reason }) });
    },
    turnStarted(number = turn + 1) {
      child.play({ type: 'turn-started', turn: number });
    },
    text(delta) {
      child.play({ type: 'assistant-text-delta', delta });
    },
    toolCall(name) {
      child.play({ type: 'tool-call', name });
    },
    modelCallEnded(usage) {
      child.play({ type: 'llm-end', usage });
    },
    turnComplete(stopReason = 'stop', usage) {
      child.play({ type: 'turn-complete', turn, stopReason, ...(usage === undefined ? {} : { usage }) });
    },
    injected(ref, kind = 'steer') {
      child.play({ type: kind === 'steer' ? 'steering-injected' : 'follow-up-injected', ref });
    },
    dropped(refs) {
      child.play({ type: 'info', refs });
    },
    rateLimit(report) {
      child.play({ type: 'rate-limit', ...report });
    },
    result(finalText, { stopReason = 'stop', usage, truncated = false } = {}) {
      const event = { type: 'result' as const, stopReason, ...(finalText === undefined ? {} : { finalText }), ...(usage === undefined ? {} : { usage }) };
      child.play(event, { ...(finalText === undefined ? {} : { finalText }), truncated });
    },
    exit(status, error) {
      child.play({ type: 'exit', status, ...(error === undefined ? {} : { error }) });
    },
    event(event) {
      meterFacts(sink(), event);
      publish(event);
    },
    rejected(event) {
      sink().rejected({ type: 'rejected', ...event });
    },
    blocked(id, what) {
      sink().blocked(id, what);
    },
    unblocked(id) {
      sink().unblocked(id);
    },
    session(id) {
      sink().session(id);
    },
    fatal(code, error) {
      sink().fatal(code, error);
    },
    gone() {
      sink().gone();
    },
  };
  return child;
}

/**
 * The fact a child's event means for the run core, as a well-behaved child means it: `ready`, an ack,
 * a turn, a delivery, the result (its answer: `answer`, else the event's inline text), the exit.
 */
function reportFactOf(sink: DriverSink, event: PlayableEvent, given: { answer: PlayedAnswer | undefined; turnAnswer: string | undefined }): void {
  const { answer, turnAnswer } = given;
  switch (event.type) {
    case 'ready':
      return sink.ready();
    case 'control-ack':
      if (event.ref !== undefined) sink.ack(event.ref, event.status, event.reason);
      return;
    case 'turn-started':
      return sink.turnStarted(event.turn);
    case 'turn-complete':
      return sink.turnCompleted({
        turn: event.turn,
        stopReason: event.stopReason,
        ...(event.usage === undefined ? {} : { usage: event.usage }),
        ...(turnAnswer === undefined ? {} : { answer: turnAnswer }),
      });
    case 'steering-injected':
    case 'follow-up-injected':
      if (event.ref !== undefined) sink.delivery(event.ref, 'injected');
      return;
    case 'info':
      for (const ref of event.refs ?? []) sink.delivery(ref, 'dropped');
      return;
    case 'result': {
      const whole = answer ?? { ...(event.finalText === undefined ? {} : { finalText: event.finalText }), truncated: event.truncated === true };
      const note = whole.truncated ? { truncationNote: 'the in-memory child said its answer is truncated' } : {};
      sink.result({ stopReason: event.stopReason, ...(event.usage === undefined ? {} : { usage: event.usage }), answer: Promise.resolve({ ...whole, ...note }) });
      return;
    }
    case 'rate-limit': {
      const { type: _type, extra: _extra, ...report } = event;
      return sink.rateLimit(report);
    }
    case 'exit':
      return sink.exit(event.error === undefined ? { status: event.status } : { status: event.status, error: event.error });
    default:
      // A tool call or a model call's end: the figures a budget counts.
      return meterFacts(sink, event as RunEventDraft);
  }
}
