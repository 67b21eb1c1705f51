// The in-memory driver: a run with no process whose child side a test plays in-process (like MCP's linked pair).
import type { Control, Driver, DriverContext, DriverSink, Launch, Protocol, SendOutcome } from '../protocol/driver.js';
import { resolveOptions, startRun, telemetryOf } from '../api/spawn-run.js';
import type { Usage } from '../wire/index.js';
import type { OutcomeErrorCode, OutcomeStatus, ExitRunEvent, RejectedEvent, Run, RunEvent, RunEventDraft, RunOptions } from '../api/types.js';

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
  /** `assistant-text-delta`. */
  text(delta: string): void;
  /** `turn-complete` of the open turn. */
  turnComplete(stopReason?: string, usage?: Usage): void;
  /** `steering-injected` / `follow-up-injected` naming the control `ref`. */
  injected(ref: number, kind?: 'steer' | 'follow-up'): void;
  /** `info` listing dropped steer/follow-up refs. */
  dropped(refs: number[]): void;
  /** `result` with the answer. */
  result(finalText: string | undefined, options?: { stopReason?: string; usage?: Usage; truncated?: boolean }): void;
  /** `exit`: the child says how it ended (the run ends when it is `gone()`, or after the kill grace). */
  exit(status: OutcomeStatus, error?: string): void;
  /** Any other event, published as it is (its envelope is filled in); unknown fields go under its `extra`. */
  event(event: RunEventDraft): void;
  /** A rejected line. */
  rejected(event: Omit<RejectedEvent, 'type'>): void;
  /** A protocol failure the run cannot survive. */
  fatal(code: OutcomeErrorCode, error: string): void;
  /** The connection is gone: the run wraps up. */
  gone(): void;
  /** A request the child waits on and the driver could not answer (the run fails past `requestTimeoutMs` unless unblocked). */
  blocked(id: string, what: string): void;
  /** That request was settled elsewhere. */
  unblocked(id: string): void;
}

/** A run over the in-memory driver, and the child side to play. */
export interface InMemoryRun {
  run: Run;
  child: InMemoryChild;
}

class InMemoryDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly readsAhead = false;
  readonly channelDir = '';
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

  attach(): void {
    // No process: nothing to attach.
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

/**
 * Starts a run whose child is played by the test, in-process: `createInMemoryRun({ task: 'hi' })`.
 * Options are those of `spawnRun` without `command`/`args`/`protocol` (no process is started).
 */
export function createInMemoryRun(options: Omit<RunOptions, 'command' | 'args' | 'protocol'> = {}): InMemoryRun {
  let driver: InMemoryDriver | undefined;
  const protocol: Protocol = {
    validate: () => undefined,
    create: (context) => (driver = new InMemoryDriver(context)),
  };
  const resolved = { ...resolveOptions({ ...options, command: 'in-memory' }), protocol: 'in-memory' };
  // Through the API's start, so an in-memory run is traced like any other (see docs/observability.md).
  const run = startRun(resolved, protocol, telemetryOf(options));
  return { run, child: linkedChild(driver!, run.id) };
}

function linkedChild(driver: InMemoryDriver, runId: string): InMemoryChild {
  let seq = 0;
  let turn = 0;
  const sink = () => driver.sink;
  // The spread of a union loses the link between `type` and its fields; each member stays a RunEvent once enveloped.
  const publish = (event: RunEventDraft | Omit<ExitRunEvent, 'v' | 'seq' | 'run'>) => sink().event({ ...event, v: 1, seq: ++seq, run: runId } as RunEvent);
  return {
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
    ready() {
      sink().ready();
      publish({ type: 'ready' });
    },
    ack(ref, status, reason) {
      sink().ack(ref, status, reason);
      publish({ type: 'control-ack', status, ref, ...(reason === undefined ? {} : { reason }) });
    },
    turnStarted(number = turn + 1) {
      turn = number;
      sink().turnStarted(number);
      publish({ type: 'turn-started', turn: number });
    },
    text(delta) {
      publish({ type: 'assistant-text-delta', delta });
    },
    turnComplete(stopReason = 'stop', usage) {
      sink().turnCompleted({ turn, stopReason, ...(usage === undefined ? {} : { usage }) });
      publish({ type: 'turn-complete', turn, stopReason, ...(usage === undefined ? {} : { usage }) });
    },
    injected(ref, kind = 'steer') {
      sink().delivery(ref, 'injected');
      publish({ type: kind === 'steer' ? 'steering-injected' : 'follow-up-injected', ref });
    },
    dropped(refs) {
      for (const ref of refs) sink().delivery(ref, 'dropped');
      publish({ type: 'info', refs });
    },
    result(finalText, { stopReason = 'stop', usage, truncated = false } = {}) {
      const answer = {
        ...(finalText === undefined ? {} : { finalText }),
        truncated,
        ...(truncated ? { truncationNote: 'the in-memory child said its answer is truncated' } : {}),
      };
      sink().result({ stopReason, ...(usage === undefined ? {} : { usage }), answer: Promise.resolve(answer) });
      publish({ type: 'result', stopReason, ...(finalText === undefined ? {} : { finalText }), ...(usage === undefined ? {} : { usage }) });
    },
    exit(status, error) {
      sink().exit(error === undefined ? { status } : { status, error });
      publish({ type: 'exit', status, ...(error === undefined ? {} : { error }) });
    },
    event(event) {
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
    fatal(code, error) {
      sink().fatal(code, error);
    },
    gone() {
      sink().gone();
    },
  };
}
