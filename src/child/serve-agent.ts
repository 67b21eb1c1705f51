// serveAgent: runs any Agent Handler as a Fen wire child (controls acked before acting, a turn per prompt, result, exit).
import type { Agent } from '../agent/types.js';
import { actOnControl, advance, createReceiver, DEFAULT_FINALIZE_NOTE, isTerminal, rejectionAck } from '../wire/index.js';
import type { ExitStatus, JsonValue as Json, RunState, WireControl } from '../wire/index.js';
import { AgentTurn } from './agent-turn.js';
import type { TurnReport } from './agent-turn.js';
import { ChildConfigError, wireConfigFrom } from './config.js';
import type { ChildWireConfig } from './config.js';
import { ControlReader } from './control-reader.js';
import type { ControlItem } from './control-reader.js';
import { EventWriter } from './event-writer.js';
import { resultPayload } from './result.js';
import { refuseUnknownKeys } from '../text/option-keys.js';

export interface ServeAgentOptions {
  /** Where the FEN_WIRE_* variables are read. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The variable carrying the invoke's session (asAgent's `sessionEnv`). Default `SUBVISOR_AGENT_SESSION`. */
  sessionEnv?: string;
  /**
   * `true` (default): serveAgent owns the process: SIGTERM/SIGINT end the run `cancelled`, and the process
   * exits with the run's status (0 after `exit done`, 1 otherwise) once the `exit` event is written.
   * `false`: nothing is done to the process; the returned promise says how the run ended.
   */
  exitProcess?: boolean;
  /** Control polling while a turn runs, in ms. Default 30 (Fen's cadence). */
  turnTickMs?: number;
  /** Control polling while idle, in ms. Default 300 (Fen's cadence). */
  idleTickMs?: number;
  /** How long an interrupted turn's `return()` may take before the child goes on without it. Default 2000. */
  returnGraceMs?: number;
}

/** How a served run ended. */
export interface ServeResult {
  status: ExitStatus;
  /** The exit status Fen's child uses: 0 after `exit done`, 1 otherwise. */
  exitCode: number;
  error?: string;
}

const SERVE_AGENT_OPTION_KEYS = Object.keys({
  env: true,
  sessionEnv: true,
  exitProcess: true,
  turnTickMs: true,
  idleTickMs: true,
  returnGraceMs: true,
} satisfies Record<keyof ServeAgentOptions, true>);

/**
 * Runs `agent` as a Fen wire child program over the FEN_WIRE_* files, until the run's `exit`. Each prompt
 * (and steer or follow-up sent while idle) is one `invoke`; `finalize` runs one more invoke with its note;
 * `cancel` and the deadline stop the turn through the iterator's `return()`. A missing FEN_WIRE_* variable
 * rejects with a `ChildConfigError` (with `exitProcess`, the message goes to stderr and the process exits 1).
 */
export async function serveAgent(agent: Agent, options: ServeAgentOptions = {}): Promise<ServeResult> {
  refuseUnknownKeys(options, SERVE_AGENT_OPTION_KEYS, 'serveAgent');
  const exitProcess = options.exitProcess ?? true;
  let config: ChildWireConfig;
  try {
    config = wireConfigFrom(options.env ?? process.env, options.sessionEnv);
  } catch (error) {
    if (!exitProcess || !(error instanceof ChildConfigError)) throw error;
    process.stderr.write(`serveAgent: ${error.message}\n`);
    process.exit(1);
  }
  const child = new ServedRun(agent, config, {
    turnTickMs: options.turnTickMs ?? 30,
    idleTickMs: options.idleTickMs ?? 300,
    returnGraceMs: options.returnGraceMs ?? 2000,
  });
  const onSignal = (signal: NodeJS.Signals) => child.stop(`terminated by ${signal}`);
  if (exitProcess) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
  const result = await child.run();
  if (exitProcess) process.exit(result.exitCode);
  return result;
}

interface Cadence {
  turnTickMs: number;
  idleTickMs: number;
  returnGraceMs: number;
}

interface Queued {
  seq: number;
  text: string;
}

type TurnOrigin = { kind: 'prompt' | 'final' } | { kind: 'steer' | 'follow-up'; ref: number };

/** The child's run: Fen's state table over controls, one AgentTurn at a time, the result and the exit. */
class ServedRun {
  #state: RunState = 'starting';
  readonly #events: EventWriter;
  readonly #controls: ControlReader;
  readonly #receiver = createReceiver('control');
  /** Follow-ups queued while a turn runs (agents without dispatch): each runs as the next turn. */
  readonly #followUps: Queued[] = [];
  #turn: AgentTurn | undefined;
  #turnCount = 0;
  #finalNote: string | undefined;
  #finalStarted = false;
  #lastAnswer: string | undefined;
  #lastData: Json | undefined;
  #lastFailure: TurnReport['failure'];
  #exitError: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #finishing = false;
  #resolve!: (result: ServeResult) => void;
  readonly #done = new Promise<ServeResult>((resolve) => (this.#resolve = resolve));

  constructor(
    private readonly agent: Agent,
    private readonly config: ChildWireConfig,
    private readonly cadence: Cadence,
  ) {
    this.#events = new EventWriter(config.eventPath, config.runId);
    this.#controls = new ControlReader(config.controlPath);
  }

  run(): Promise<ServeResult> {
    this.#events.emit('ready', {});
    this.#state = advance(this.#state, 'started');
    if (this.config.deadlineMs !== undefined) this.#armDeadline(this.config.deadlineMs);
    this.#tick();
    return this.#done;
  }

  /** The process is asked to stop (SIGTERM/SIGINT): end `cancelled` after unwinding the turn. */
  stop(reason: string): void {
    if (isTerminal(this.#state)) return;
    this.#exitError = reason;
    this.#state = 'cancelled';
    void this.#finish();
  }

  #tick(): void {
    this.#timer = undefined;
    if (this.#finishing) return;
    if (!isTerminal(this.#state)) {
      const read = this.#controls.read((item) => this.#onControl(item));
      if (!read.ok) return this.#fatal(read.reason);
    }
    this.#settle();
    if (this.#finishing) return;
    this.#timer = setTimeout(() => this.#tick(), this.#turn === undefined ? this.cadence.idleTickMs : this.cadence.turnTickMs);
  }

  #armDeadline(at: number): void {
    const wait = Math.min(Math.max(0, at - Date.now()), 2 ** 31 - 1);
    this.#deadlineTimer = setTimeout(() => {
      if (Date.now() < at) return this.#armDeadline(at);
      if (isTerminal(this.#state)) return;
      this.#state = advance(this.#state, 'deadline');
      this.#exitError = 'the run passed its deadline';
      void this.#finish();
    }, wait);
  }

  #fatal(reason: string): void {
    if (isTerminal(this.#state)) return;
    this.#exitError = reason;
    this.#state = advance(this.#state, 'fatal');
    void this.#finish();
  }

  #ack(ack: { status: 'accepted' | 'applied' | 'rejected'; ref?: number; reason?: string }): void {
    this.#events.emit('control-ack', ack);
  }

  /** Handles one control line: every line gets exactly one ack, written before anything it causes. */
  #onControl(item: ControlItem): boolean {
    if ('tooLong' in item) {
      this.#ack({ status: 'rejected', reason: 'control line is too large to read' });
      return true;
    }
    const decoded = this.#receiver.receive(item.line);
    if (!decoded.ok) {
      if (decoded.rejection.fatal) {
        // A version mismatch gets no ack: the channel stops and the child exits failed.
        this.#fatal(`control channel: ${decoded.rejection.reason}`);
        return false;
      }
      this.#ack(rejectionAck(decoded.rejection));
      return true;
    }
    const message = decoded.message;
    if (message.run !== this.config.runId) {
      this.#ack({ status: 'rejected', ref: message.seq, reason: `run ${message.run} is not ${this.config.runId}` });
      return true;
    }
    this.#apply(message);
    return !this.#finishing;
  }

  #apply(message: WireControl): void {
    const ref = message.seq;
    const text = 'text' in message && typeof message.text === 'string' ? message.text : '';
    const interrupt = () => {
      this.#finalNote = message.type === 'finalize' && message.note !== undefined ? message.note : DEFAULT_FINALIZE_NOTE;
      this.#dropQueued();
      this.#turn?.interrupt();
    };
    // A vetoed control was answered by the veto itself (`true`).
    actOnControl<true | void>(this.#state, message.type, {
      refused: ({ status, reason }) => this.#ack({ status, ref, ...(reason === undefined ? {} : { reason }) }),
      veto: (action) => {
        if (action !== 'queue-steer' || this.agent.dispatch !== undefined) return undefined;
        this.#ack({ status: 'rejected', ref, reason: 'this agent takes no steer while a turn runs (it has no dispatch)' });
        return true;
      },
      moveTo: (next) => {
        this.#ack({ status: 'accepted', ref });
        this.#state = next;
      },
      actions: {
        'start-turn': () => {
          if (message.type === 'steer' || message.type === 'follow-up') this.#startTurn(text, { kind: message.type, ref });
          else this.#startTurn(text, { kind: 'prompt' });
        },
        'queue-steer': () => void this.#dispatch('steer', text, ref),
        'queue-follow-up': () => {
          if (this.agent.dispatch !== undefined) void this.#dispatch('follow_up', text, ref);
          else this.#followUps.push({ seq: ref, text });
        },
        'start-final-turn': interrupt,
        'interrupt-turn': interrupt,
        finish: () => void this.#finish(),
        cancel: () => void this.#finish(),
        // The end of the turn finishes the run.
        'close-after-turn': () => undefined,
      },
    });
  }

  /** A steer or follow-up for the running turn goes to the agent's control plane: injected when it takes it. */
  async #dispatch(type: 'steer' | 'follow_up', text: string, ref: number): Promise<void> {
    let reason: string | undefined;
    try {
      const ack = await this.agent.dispatch!(this.config.session, { type, text });
      if (ack.status !== 'accepted' && ack.status !== 'applied') reason = ack.reason ?? ack.status;
    } catch (error) {
      reason = (error as Error)?.message ?? String(error);
    }
    if (this.#finishing) return;
    if (reason === undefined) {
      this.#events.emit(type === 'steer' ? 'steering-injected' : 'follow-up-injected', { text, ref });
    } else {
      this.#events.emit('info', { refs: [ref], summary: `the agent did not take the ${type.replace('_', '-')}: ${reason}` });
    }
  }

  #startTurn(text: string, origin: TurnOrigin): void {
    this.#turnCount += 1;
    const number = this.#turnCount;
    this.#events.emit('turn-started', { turn: number });
    if (origin.kind === 'steer') this.#events.emit('steering-injected', { text, ref: origin.ref });
    else if (origin.kind === 'follow-up') this.#events.emit('follow-up-injected', { text, ref: origin.ref });
    else this.#events.emit('user', { text });
    const turn = new AgentTurn(this.agent, { session: this.config.session }, text, this.#events, this.cadence.returnGraceMs);
    this.#turn = turn;
    void turn.done.then((report) => this.#endTurn(turn, number, origin.kind === 'final', report));
  }

  #endTurn(turn: AgentTurn, number: number, final: boolean, report: TurnReport): void {
    if (this.#turn === turn) this.#turn = undefined;
    if (report.answer !== '') this.#events.emit('assistant-stream-end', { 'final?': true });
    if (!report.aborted && report.failure === undefined && report.data !== undefined) {
      const withData = { turn: number, 'stop-reason': 'stop', data: report.data };
      if (!this.#events.fits('turn-complete', withData)) {
        // Structured data is never cut: data that cannot travel on one line fails the turn instead.
        const details = 'the structured data of completed does not fit one wire line (64 KiB)';
        report.failure = { details, retryable: false, code: 'data_too_large' };
        this.#events.emit('error', { error: details, source: 'agent', retryable: false, code: 'data_too_large' });
      }
    }
    const stopReason = report.aborted ? 'aborted' : report.failure !== undefined ? 'error' : 'stop';
    const complete: Record<string, unknown> = { turn: number, 'stop-reason': stopReason };
    if (!report.aborted && report.failure === undefined && report.data !== undefined) complete['data'] = report.data;
    this.#events.emit('turn-complete', complete);
    if (!report.aborted) {
      this.#lastFailure = report.failure;
      if (report.failure === undefined) {
        this.#lastAnswer = report.answer;
        this.#lastData = report.data;
      }
    }
    if (!isTerminal(this.#state)) this.#state = advance(this.#state, final && !report.aborted ? 'final-turn-done' : 'turn-done');
    this.#settle();
  }

  /** What the run can do now that no control asked for: finish, the final turn, a queued follow-up. */
  #settle(): void {
    if (this.#finishing || this.#turn !== undefined) return;
    if (isTerminal(this.#state)) {
      void this.#finish();
    } else if (this.#state === 'finalizing' && !this.#finalStarted) {
      this.#finalStarted = true;
      this.#startTurn(this.#finalNote ?? DEFAULT_FINALIZE_NOTE, { kind: 'final' });
    } else if (this.#state === 'ready' && this.#followUps.length > 0) {
      const next = this.#followUps.shift()!;
      this.#state = 'running';
      this.#startTurn(next.text, { kind: 'follow-up', ref: next.seq });
    }
  }

  #dropQueued(): void {
    const refs = this.#followUps.splice(0).map((queued) => queued.seq);
    if (refs.length > 0) this.#events.emit('info', { refs, summary: `dropped ${refs.length} queued control(s)` });
  }

  /** The run is terminal: unwind the turn, drop the queue, write the result (done), exit. */
  async #finish(): Promise<void> {
    if (this.#finishing) return;
    this.#finishing = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#deadlineTimer !== undefined) clearTimeout(this.#deadlineTimer);
    const turn = this.#turn;
    if (turn !== undefined) {
      turn.interrupt();
      await turn.done; // its report arrives through #endTurn (turn-complete aborted) before this resumes
    }
    this.#dropQueued();
    let status = this.#state as ExitStatus;
    if (status === 'done' && this.#lastFailure !== undefined) {
      // The run's last turn failed: the run did too, and says how (asAgent reads code and retryable).
      const failure = this.#lastFailure;
      return this.#exit('failed', failure.details, { retryable: failure.retryable, ...(failure.code === undefined ? {} : { code: failure.code }) });
    }
    if (status === 'done' && !this.#writeResult()) {
      status = 'failed';
      this.#exitError = 'the result does not fit one wire line (its structured data is too large)';
    }
    this.#exit(status, this.#exitError);
  }

  #writeResult(): boolean {
    const base: Record<string, unknown> = { 'stop-reason': 'stop' };
    if (this.#lastData !== undefined) base['data'] = this.#lastData;
    const payload = resultPayload(base, this.#lastAnswer, (candidate) => this.#events.fits('result', candidate), () => undefined);
    if (payload === undefined) return false;
    this.#events.emit('result', payload);
    return true;
  }

  #exit(status: ExitStatus, error: string | undefined, extra: Record<string, unknown> = {}): void {
    this.#events.emit('exit', { status, ...(error === undefined ? {} : { error }), ...extra });
    this.#resolve({ status, exitCode: status === 'done' ? 0 : 1, ...(error === undefined ? {} : { error }) });
  }
}
