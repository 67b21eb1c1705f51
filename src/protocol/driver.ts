// The driver seam: what a protocol driver gives the run core, and the facts it reports back through the sink.
import type { Readable, Writable } from 'node:stream';
import type { Usage } from '../wire/index.js';
import type { ChildExit, RunResult } from './results.js';
import type { ResolvedRunOptions } from './resolved-options.js';
import type { Delivery, RateLimitFields, RejectedEvent, RunEvent } from './events.js';
import type { OutcomeErrorCode } from './outcome.js';
import type { ProtocolReports } from './budget.js';

/** A control the caller (or the core itself) asks the driver to send: the Run API's vocabulary, for every protocol. */
export type Control =
  | { type: 'prompt'; text: string }
  | { type: 'steer'; text: string }
  | { type: 'follow-up'; text: string }
  | { type: 'finalize'; note?: string }
  | { type: 'cancel' }
  | { type: 'close' };

/** What became of a control handed to {@link Driver.send}. */
export type SendOutcome =
  /** Sent (or taken in hand by the driver) under `ref`; its answer comes later through {@link DriverSink.ack}. */
  | { kind: 'sent'; ref: number }
  /** Not sent: the protocol cannot carry it (`too-large`, `invalid`). The caller's promise rejects with ControlRefusedError. */
  | { kind: 'refused'; code: 'too-large' | 'invalid'; reason: string }
  /** Not sent: the channel is broken. The run ends `failed` (`channel-error`) and the kill ladder starts. */
  | { kind: 'broken'; reason: string };

/** How the core starts the child process a driver asked for. */
export interface ProcessPlan {
  command: string;
  args: readonly string[];
  /** Variables set over the caller's environment (the protocol's own, such as `FEN_WIRE_*`); they win. */
  env: Record<string, string>;
  /** `ignore`: stdin is /dev/null. `pipe`: the driver writes it ({@link ProcessIO.stdin}). */
  stdin: 'ignore' | 'pipe';
  /**
   * `tail`: stdout joins stderr in the output tail and the `output` event. `driver`: stdout is the
   * protocol's channel ({@link ProcessIO.stdout}): only stderr is tailed.
   */
  stdout: 'tail' | 'driver';
}

/** What {@link Driver.launch} sets up. */
export interface Launch {
  /** The child process to start; absent for a driver that talks to something already running (a daemon). */
  process?: ProcessPlan;
  /** The ref of the task prompt when the driver sent it: its ack becomes `run.taskAck`. */
  taskRef?: number;
  /**
   * The files this run made and the directory holding them, which the parent's watchdog removes should
   * the parent die before {@link Driver.dispose} (only these paths, then the directory if that left it
   * empty). Absent when nothing is to be removed (no files, or `keepFiles`).
   */
  ownFiles?: OwnFiles;
  /**
   * A durable run (`options.durable`, or one being re-attached): the driver's own run directory, where
   * the core keeps the run's record (`run.json`), its lease and the child's output (`output.log`). Only a
   * protocol that declares {@link Protocol.durable} returns it.
   */
  durableDir?: string;
  /**
   * A re-attached run (`options.attach`): the controls the earlier parent wrote, in order, whose acks
   * the child wrote to the channel; the core mirrors them as it reads the channel from its start.
   */
  priorControls?: ReadonlyArray<{ ref: number; type: Control['type'] }>;
}

/** Files of one run, for the watchdog (see {@link Launch.ownFiles}). */
export interface OwnFiles {
  dir: string;
  files: string[];
}

/** The started child's pipes, for a driver whose plan asked for them. */
export interface ProcessIO {
  pid: number;
  /** Present when the plan said `stdin: 'pipe'`. Write errors (EPIPE) are the driver's to handle. */
  stdin: Writable | undefined;
  /** Present when the plan said `stdout: 'driver'`. */
  stdout: Readable | undefined;
  /** Sends `signal` to the root process only (e.g. HEP's cancel is SIGINT); false when it is gone. */
  signal(signal: NodeJS.Signals): boolean;
}

/** A completed turn, as the driver reports it to the core. */
export interface TurnReport {
  turn: number;
  stopReason: string;
  usage?: Usage;
  /**
   * `true` (default): the child now waits for input, so the state moves on (running -> ready, per
   * the state table). `false`: the child goes on by itself (a HEP round): only turns and usage count.
   */
  idle?: boolean;
  /**
   * The turn's answer text, when the protocol gives it before the run ends (`outputSchema` checks it before
   * the automatic close, to send the repair turn while the conversation is still open). Reported only
   * when the run has an `outputSchema`; absent when the text is not known whole (Fen: an answer cut to its
   * transport bounds).
   */
  answer?: string;
}

/** A model call, as a driver reports it (see {@link DriverSink.modelCall}). */
export interface ModelCallReport {
  /** The model the child named. */
  model?: string;
  /** The call's usage, when it ended with one. */
  usage?: Usage;
}

/**
 * The facts a driver reports to the core, all protocol-free. Calls may come in any number and order;
 * the core ignores what no longer matters (facts after the end, a second result, an ack for a ref it
 * does not await). Settling an ack or delivery promise waits until the next published event (the one
 * that carried the answer), or a microtask when none follows.
 */
export interface DriverSink {
  /**
   * Publishes one event to the iterators and `event` listeners. An `exit` event ends the stream.
   * `bytes`: about what its line or frame took, for the byte high-water mark (absent: counted as 0).
   */
  event(event: RunEvent, bytes?: number): void;
  /**
   * Publishes a rejected line or frame (counted in `outcome.rejectedLines`, emitted as `rejected` too).
   * `countedAhead`: it was already counted by {@link DriverSink.lineAhead}.
   */
  rejected(event: RejectedEvent, bytes?: number, countedAhead?: boolean): void;
  /**
   * Fen only: a line read ahead of its publication (see {@link DriverContext.backpressure}), after its facts: the
   * child is writing (the stall watchdog sees it), the automatic close is considered as after a
   * published event, and a `rejected` one counts now; its event is published later.
   */
  lineAhead(rejected: boolean): void;
  /** The child is initialized and waits for input (starting -> ready; clears the ready timer). */
  ready(): void;
  /** The answer to the control sent as `ref`. Never for a ref before `send` returned it. */
  ack(ref: number, status: 'accepted' | 'applied' | 'rejected', reason?: string): void;
  /** An accepted steer/follow-up (`ref`) reached the agent or was dropped unseen. */
  delivery(ref: number, delivery: Delivery): void;
  /** A turn began (turns count from 1). */
  turnStarted(turn: number): void;
  /** A turn ended: its usage is summed into the outcome, and the state moves unless `idle: false`. */
  turnCompleted(report: TurnReport): void;
  /** The agent called a tool (counted against `budget.maxToolCalls`): before or with its `tool-call` event. */
  toolCalled(): void;
  /**
   * A model call began naming its model, or ended with its usage (Fen's `agent-started`/`llm-start`/`llm-end`,
   * mew's `message_end`): the model is the outcome's; the usage counts against the budget's token and cost
   * limits while its turn is open (the turn's own usage replaces these sums when its turn-complete has one).
   */
  modelCall(report: ModelCallReport): void;
  /** The run's answer; the first report wins. */
  result(result: RunResult): void;
  /** How the child said it ended. Controls are refused from now on and the kill ladder starts (the child should leave). */
  exit(exit: ChildExit): void;
  /**
   * A protocol failure the run cannot survive (wrong version, a channel that cannot be read): it wins
   * over every other verdict; a `cancel` is sent when the child can still hear it, then the ladder runs.
   */
  fatal(code: OutcomeErrorCode, error: string): void;
  /** The channel broke (a write failed): the run fails `channel-error` unless the child already said how it ended. */
  broken(reason: string): void;
  /** Drivers without a process only: the peer is gone and nothing more will come; the run ends. */
  gone(): void;
  /**
   * The peer's own id of this conversation (fuseraft's `sessionId`, mew's `session_id`, HEP's `session`,
   * a fuseraft serve task's `sessionId`): with it a caller resumes the conversation by the peer's own
   * means. The latest report is the outcome's `sessionId`.
   */
  session(id: string): void;
  /**
   * Rate-limit news from the child's protocol (a refusal, a warning, a recovery: see `RateLimitRunEvent`),
   * reported when its frame is read. The core tells the run's `rate-limit` listeners at once (a pool's gate
   * listens there), even while the events wait behind backpressure. The driver also publishes the
   * `rate-limit` event with the same fields, in its place in the stream, as it does for every other fact.
   */
  rateLimit(report: RateLimitFields): void;
  /**
   * The peer waits for an answer this driver cannot give (a request kind it has no response for, and no
   * denial it may send): `id` names the request, `what` describes it (no secrets). The core bounds the
   * wait: unless {@link DriverSink.unblocked} comes within `requestTimeoutMs` (another client of a daemon
   * may settle it), the run fails `request-unanswered`, is cancelled, and the kill ladder runs.
   */
  blocked(id: string, what: string): void;
  /** The request reported by {@link DriverSink.blocked} was settled or withdrawn. */
  unblocked(id: string): void;
}

/** What a driver receives when it is created. */
export interface DriverContext {
  readonly runId: string;
  /** Wall time (`Date.now()`) the run started: files the child makes are no older. */
  readonly startedAt: number;
  /** The run's options after defaults and validation (the task included). */
  readonly options: ResolvedRunOptions;
  readonly sink: DriverSink;
  /**
   * Backpressure for a driver that cannot read facts ahead of events: while true, stop reading the
   * channel; the core calls {@link Driver.resume} when it is false again. It is false while a control
   * awaits its answer (a consumer awaiting it inside its loop would deadlock) and once the child is gone.
   */
  shouldPause(): boolean;
  /**
   * Backpressure for a driver that reads facts ahead of events (Fen only: its file is the buffer; a driver
   * that reads a pipe or a socket uses {@link DriverContext.shouldPause}): while true
   * the consumers are over their high-water mark and events should wait, while the facts (acks,
   * turns, result, exit) are still reported as the child writes them; {@link Driver.resume} follows
   * when it is false again.
   */
  backpressure(): boolean;
}

/** What {@link Driver.finish} may report (Fen only: a driver whose events are still to be read from a file). */
export interface FinishReport {
  /**
   * Every fact is in, but events are still to be published as the consumers take them (the file is
   * the buffer); it resolves once the last one was published (or they were dropped by `dispose`).
   */
  eventsBehind: Promise<void>;
  /**
   * Releases what the events behind are read from (a descriptor) while holding no reference to the
   * driver or the run: the core calls it when the run handle is garbage-collected before they were all
   * published. A no-op once the driver released it.
   */
  release?: () => void;
}

/**
 * One run's protocol: sets up the channel, turns its frames into facts and events, carries controls.
 * The core calls `launch` once, then `attach` once after spawning (never without a process, nor when
 * the spawn failed), `send`/`resume` any number of times, `finish` once after the process exited (or
 * after `gone`), `dispose` at least once at the very end (and from the parent's exit hook).
 *
 * A driver of a child that speaks lines on its stdio (HEP, fuseraft, the agents' drivers) needs only
 * `closeWhenIdle`, `launch`, `attach`, `send`, `resume`, `finish` and `dispose`, and builds them on
 * `src/drivers/shared/` (the stdio channel, the decoder, the request desk, the correlator, the JSON-RPC
 * peer). The optional members serve a channel of files (Fen: `channelDir`, `readsAhead`, a durable run's
 * `Launch.ownFiles`/`durableDir`/`priorControls`, `FinishReport.eventsBehind`) or a run without a process
 * (a daemon: `disconnect`); the core's default is the answer for everyone else.
 */
export interface Driver {
  /**
   * Whether `keepAlive: false` makes the core send `close` once the run is ready and idle (Fen,
   * fuseraft). `false` for a child that ends by itself after its prompt (HEP).
   */
  readonly closeWhenIdle: boolean;
  /**
   * Whether the driver reads facts ahead of the events held back ({@link DriverContext.backpressure}):
   * then events kept for an iterator not created yet are bounded too, as the run ends without them.
   * Default false (a driver that stops reading under {@link DriverContext.shouldPause}).
   */
  readonly readsAhead?: boolean;
  /** The private channel directory, for protocols that have one (Fen); default '' (`run.channelDir`). */
  readonly channelDir?: string;
  /** Sets the channel up (and sends the task when the protocol writes it). Throwing fails the run before anything started. */
  launch(): Launch;
  /** The child was spawned: start reading its pipes. Optional for a driver whose plan starts no process it reads (a daemon). */
  attach?(io: ProcessIO): void;
  /** Carries one control. Never throws. */
  send(control: Control): SendOutcome;
  /** Backpressure eased, or an ack is awaited: read what is waiting. */
  resume(): void;
  /**
   * The child is gone (`exit` undefined for a run without a process): read what is left, report the
   * final facts (a HEP driver reports `exit` from the exit code here). The core waits for the promise.
   */
  finish(exit: ProcessExitInfo | undefined): void | FinishReport | Promise<void | FinishReport>;
  /** Drivers without a process: drop the connection (the kill ladder's last step); `gone` follows. Never called for a run with a process. */
  disconnect?(): void;
  /**
   * Releases everything (files, descriptors, sockets) synchronously. Idempotent. A driver with
   * {@link FinishReport.eventsBehind} pending may keep what those events are read from (an open
   * descriptor of an already removed file) until they are published; `dispose(true)` (the parent
   * process exiting) releases that too.
   */
  dispose(now?: boolean): void;
}

/** How the root process ended, as the driver sees it in {@link Driver.finish}. */
export interface ProcessExitInfo {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** The command could not be started. */
  spawnFailed: boolean;
}

/** What the core may ask of a protocol's children beyond the common controls. */
export interface ProtocolCapabilities {
  /** `finalize` asks a running child for its answer now (a budget that is reached uses it; else it cancels). */
  finalize: boolean;
  /**
   * A prompt after the answer continues the same conversation, before the run closes (`outputSchema`'s
   * repair turn); false for a protocol that runs one prompt per process or starts every task afresh.
   */
  continueConversation: boolean;
}

/** A protocol: option checks, and the factory of one driver per run. Registered by name in `src/api/registry.ts`. */
export interface Protocol {
  /** Which budget figures its children report: a limit on a figure it does not report is refused at spawn. */
  readonly reports: ProtocolReports;
  readonly capabilities: ProtocolCapabilities;
  /**
   * spawnRun: the command starts a daemon that listens at `RunOptions.url`, and the run is a session on
   * it (mew). Only such a protocol takes `url` and `mewTagCase` from spawnRun (they become `connection`).
   */
  readonly spawnsDaemon?: boolean;
  /**
   * Its channel outlives the parent (files, not pipes): a run may be `durable` and re-attached by a later
   * parent (`attachRun`). Only such a protocol accepts `options.durable`.
   */
  readonly durable?: boolean;
  /** Its child asks the parent to approve actions (fuseraft's approval requests, mew's permission requests): `approve` answers them. */
  readonly asksApproval?: boolean;
  /** The program started when `RunOptions.command` is left out (an agent's own name on `PATH`, such as `codex`); absent: `command` is required. */
  readonly defaultCommand?: string;
  /**
   * The agent resumes a conversation of its own by id (`RunOptions.resume`: Codex's thread id). Only such a
   * protocol accepts `resume` from spawnRun; the driver reads it as `ResolvedRunOptions.resume`.
   */
  readonly resumes?: boolean;
  /** Checks the protocol's own option rules; throws TypeError/RangeError (spawnRun throws it synchronously). */
  validate(options: ResolvedRunOptions): void;
  create(context: DriverContext): Driver;
}
