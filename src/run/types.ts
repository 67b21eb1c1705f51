// Public types of a supervised run: options, the Run handle, camelCase events, acks, deliveries and the outcome.
import type { EventEmitter } from 'eventemitter3';
import type { JsonObject, JsonValue, RejectionCode, RunState, WireControlType } from '../wire/index.js';

/* ------------------------------------------------------------------------------------------------ */
/* Options                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

/**
 * Options of {@link spawnRun}. Only `command` is required. Every duration is in milliseconds.
 *
 * Invalid options (no command, a negative duration, a first prompt too large for one wire line) make
 * `spawnRun` throw synchronously: nothing has been started at that point.
 */
export interface RunOptions {
  /** The program to start. Never run through a shell: arguments are passed as they are. */
  command: string;
  /** Arguments of `command`. */
  args?: readonly string[];
  /**
   * The first prompt. It is appended to the control file before the child is spawned, so the child
   * handles it as soon as it is ready. Without a task the child waits in `ready`; with
   * `keepAlive: false` that means it is closed right away.
   */
  task?: string;
  /** The run id both sides agree on (`FEN_WIRE_RUN_ID`). Defaults to a random UUID. */
  runId?: string;
  /** Working directory of the child. Defaults to the parent's. */
  cwd?: string;
  /**
   * Environment of the child, merged over `process.env`. A key set to `undefined` removes it. The
   * `FEN_WIRE_*` variables are always set by subvisor and win over this.
   */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Time budget from now. Sets `FEN_WIRE_DEADLINE` (whole Unix seconds, rounded up) and a parent-side
   * timer: when the child has not exited by that (rounded-up) deadline, the kill ladder starts and the
   * outcome is `timed-out`. Mutually exclusive with `deadline`.
   */
  timeoutMs?: number;
  /** Absolute deadline (a `Date` or epoch milliseconds); see `timeoutMs`. */
  deadline?: Date | number;
  /**
   * Grace given to the child at each step of the kill ladder: after a moment the child should exit
   * (its `exit` event, a `cancel()` sent, the deadline, a protocol failure, abort, disposal), wait this
   * long, then SIGTERM the tree, wait this long again, then SIGKILL it. Default 3000.
   */
  killGraceMs?: number;
  /** How long an accepted `finalize` may take before subvisor sends `cancel`. Default 120000. */
  finalizeGraceMs?: number;
  /** How long the child may take to say `ready`; past it the tree is killed and the outcome is `failed`. Default 30000. */
  readyTimeoutMs?: number;
  /**
   * How long a control waits for its `control-ack` before its promise resolves `unanswered`. Default:
   * no timeout (the ack is awaited until the run ends, then it is `unanswered`).
   */
  ackTimeoutMs?: number;
  /**
   * `false` (default): once the mirrored state is `ready` and every control sent has been answered,
   * subvisor sends `close`, as Fen's own parent does, so a run ends after its work. `true`: the run
   * stays open in `ready` for more prompts until you call `close()`, `finalize()` or `cancel()`.
   */
  keepAlive?: boolean;
  /** Where the private run directory is created (mode 0700). Default `os.tmpdir()`. */
  stateDir?: string;
  /** Aborting it cancels the run and starts the kill ladder; the outcome is `cancelled`. */
  signal?: AbortSignal;
  /** Largest `final-text-path` file subvisor reads. Default 64 MiB. */
  maxFinalTextBytes?: number;
  /** Keep the run directory (control and event files) after the run, for debugging. Default false. */
  keepFiles?: boolean;
  /**
   * `true` (default): events that arrive before the first async iterator is created are kept, so a
   * late `for await` still sees every event from the first. Set `false` when you only listen with
   * `on(...)` or await the outcome: then nothing is retained and an iterator created later sees only
   * the events that arrive after it.
   */
  retainEvents?: boolean;
  /**
   * Backpressure: while an active iterator has more than this many events waiting, subvisor stops
   * reading the event file (the file is the buffer) and resumes when the iterator drains. Default 1024.
   */
  highWaterMark?: number;
  /** Bytes of the child's combined stdout/stderr kept in `outcome.outputTail`. Default 65536. */
  outputTailBytes?: number;
  /**
   * `true` (default): while this run is alive, SIGINT/SIGTERM of the parent process cancel it and reap
   * its tree within a short grace (1 s per step), then the signal takes its normal course (the process
   * dies with 130/143 unless it has other listeners for that signal). Pass `false` when your program
   * handles these signals itself (call `terminate()`/`kill()` from your handler). Either way every tree
   * still alive when the process exits is SIGKILLed synchronously from an `exit` hook.
   */
  handleParentSignals?: boolean;
}

/* ------------------------------------------------------------------------------------------------ */
/* Events                                                                                           */
/* ------------------------------------------------------------------------------------------------ */

/**
 * Fields every decoded event carries: the envelope. Unknown extra fields the child sent are kept,
 * with their keys converted like the known ones (kebab-case to camelCase, trailing `?` dropped).
 */
export interface RunEventBase {
  /** Protocol version (always 1). */
  v: 1;
  /** The child's sequence number of this line. */
  seq: number;
  /** The run id of the line (always the run's own id: lines for another run are protocol failures). */
  run: string;
  /** Unknown extra fields, camelCased. */
  [extra: string]: unknown;
}

/** Optional fields any display event may carry (Fen's normalized bus events). */
export interface DisplayEventFields {
  timestamp?: string;
  summary?: string;
  /** The child cut the payload to its transport bounds (`transport-truncated?`). */
  transportTruncated?: boolean;
  /** `run-id` */
  runId?: string;
  agent?: string;
  /** `requested-cwd` */
  requestedCwd?: string;
  cwd?: string;
  /** `physical-cwd` */
  physicalCwd?: string;
}

type DisplayEvent<T extends string, P> = RunEventBase & DisplayEventFields & { type: T } & P;
type LifecycleEvent<T extends string, P> = RunEventBase & { type: T } & P;

/** `agent-started`: the agent began. */
export type AgentStartedRunEvent = DisplayEvent<'agent-started', { provider?: string; model?: string }>;
/** `user`: a user message entered the conversation. */
export type UserRunEvent = DisplayEvent<'user', { text?: string }>;
/** `llm-start`: a model call began. */
export type LlmStartRunEvent = DisplayEvent<'llm-start', { provider?: string; model?: string }>;
/** `llm-end`: a model call ended (`stop-reason` -> `stopReason`). */
export type LlmEndRunEvent = DisplayEvent<'llm-end', { stopReason?: string; usage?: JsonObject }>;
/** `assistant-text`: a complete text block (`final?` -> `final`, `content-index` -> `contentIndex`). */
export type AssistantTextRunEvent = DisplayEvent<'assistant-text', { final: boolean; contentIndex?: number; text?: string }>;
/** `assistant-text-delta`: a streamed piece of text. */
export type AssistantTextDeltaRunEvent = DisplayEvent<'assistant-text-delta', { contentIndex?: number; delta?: string }>;
/** `assistant-thinking`: a complete thinking block. */
export type AssistantThinkingRunEvent = DisplayEvent<
  'assistant-thinking',
  { final: boolean; contentIndex?: number; text?: string }
>;
/** `assistant-thinking-delta`: a streamed piece of thinking. */
export type AssistantThinkingDeltaRunEvent = DisplayEvent<
  'assistant-thinking-delta',
  { contentIndex?: number; delta?: string }
>;
/** `assistant-stream-end`: a streamed message ended. */
export type AssistantStreamEndRunEvent = DisplayEvent<'assistant-stream-end', { final: boolean }>;
/** `tool-call`: the agent called a tool. */
export type ToolCallRunEvent = DisplayEvent<'tool-call', { name: string; id?: string; arguments?: JsonValue }>;
/** `tool-result`: a tool returned (`is-error?` -> `isError`, `tool-call-id` -> `toolCallId`, `duration-seconds` -> `durationSeconds`). */
export type ToolResultRunEvent = DisplayEvent<
  'tool-result',
  { name: string; isError: boolean; id?: string; toolCallId?: string; durationSeconds?: number; result?: JsonValue }
>;
/** `steering-injected`: a queued steer reached the agent; `ref` is the seq of that steer control. */
export type SteeringInjectedRunEvent = DisplayEvent<'steering-injected', { text?: string; ref?: number }>;
/** `follow-up-injected`: a queued follow-up reached the agent; `ref` is the seq of that follow-up control. */
export type FollowUpInjectedRunEvent = DisplayEvent<'follow-up-injected', { text?: string; ref?: number }>;
/** `agent-turn-complete`: the agent's own end-of-turn notice. */
export type AgentTurnCompleteRunEvent = DisplayEvent<'agent-turn-complete', { status?: string; error?: string }>;
/** `error`: the child reported an error (the run may go on). */
export type ErrorRunEvent = DisplayEvent<'error', { error?: string; source?: string }>;
/** `info`: a notice; `refs` lists the seqs of queued steer/follow-up controls that were dropped. */
export type InfoRunEvent = DisplayEvent<'info', { refs?: number[] }>;
/** `ready`: the child is initialized and waiting for input. */
export type ReadyRunEvent = LifecycleEvent<'ready', {}>;
/** `turn-started`: a turn began (turns count from 1). */
export type TurnStartedRunEvent = LifecycleEvent<'turn-started', { turn: number }>;
/** `turn-complete`: a turn ended, with its stop reason (`aborted` when interrupted) and summed usage. */
export type TurnCompleteRunEvent = LifecycleEvent<'turn-complete', { turn: number; stopReason: string; usage?: JsonObject }>;
/** `control-ack`: the child's answer to the control whose seq is `ref`. Also surfaced as {@link Ack}. */
export type ControlAckRunEvent = LifecycleEvent<
  'control-ack',
  { status: 'accepted' | 'rejected' | 'applied'; ref?: number; reason?: string }
>;
/**
 * `result`: the run's answer as the child sent it (`final-text` -> `finalText`, `truncated?` ->
 * `truncated`, `final-text-path` -> `finalTextPath`). The whole answer is in `outcome.finalText`.
 */
export type ResultRunEvent = LifecycleEvent<
  'result',
  {
    stopReason: string;
    finalText?: string;
    usage?: JsonObject;
    truncated?: boolean;
    finalTextPath?: string;
    /** Sent only by older children. */
    context?: 'complete' | 'partial';
  }
>;

/**
 * `exit`: the last event of every run, exactly once. When the child wrote no `exit` (it crashed, was
 * killed, or never started) subvisor ends the stream with one it made: `synthetic: true`, no `v`/`seq`,
 * and `status` taken from the outcome.
 */
export interface ExitRunEvent {
  type: 'exit';
  status: 'done' | 'cancelled' | 'failed' | 'timed-out';
  error?: string;
  /** Present (true) only on an exit subvisor made up. */
  synthetic?: true;
  /** Absent only when `synthetic`. */
  v?: 1;
  /** Absent only when `synthetic`. */
  seq?: number;
  run: string;
  [extra: string]: unknown;
}

/** Codes of {@link RejectedEvent}: the wire codec's rejection codes plus the channel's own failures. */
export type RejectedCode =
  | RejectionCode
  /** A valid event whose `run` is another run's id (fatal). */
  | 'foreign-run'
  /** The event file shrank below the read offset (fatal). */
  | 'event-file-truncated'
  /** Reading the event file failed (fatal). */
  | 'read-error';

/**
 * A line of the event file that was not accepted. `fatal` ones (version mismatch, foreign run,
 * truncated event file) end the run `failed`; the others are reported, counted in
 * `outcome.rejectedLines`, and the run goes on.
 */
export interface RejectedEvent {
  type: 'rejected';
  code: RejectedCode;
  reason: string;
  fatal: boolean;
  /** The line's seq, when it had a usable one. */
  seq?: number;
  /** The line's `type` field, when readable. */
  lineType?: string;
  /** The line's `run` field, when readable. */
  run?: string;
  /** Schema errors, one per failed field. */
  errors?: string[];
}

/** Every event a run yields: the child's decoded events (camelCase), `rejected`, and the final `exit`. */
export type RunEvent =
  | AgentStartedRunEvent
  | UserRunEvent
  | LlmStartRunEvent
  | LlmEndRunEvent
  | AssistantTextRunEvent
  | AssistantTextDeltaRunEvent
  | AssistantThinkingRunEvent
  | AssistantThinkingDeltaRunEvent
  | AssistantStreamEndRunEvent
  | ToolCallRunEvent
  | ToolResultRunEvent
  | SteeringInjectedRunEvent
  | FollowUpInjectedRunEvent
  | AgentTurnCompleteRunEvent
  | ErrorRunEvent
  | InfoRunEvent
  | ReadyRunEvent
  | TurnStartedRunEvent
  | TurnCompleteRunEvent
  | ControlAckRunEvent
  | ResultRunEvent
  | ExitRunEvent
  | RejectedEvent;

/** The `type` values of {@link RunEvent}. */
export type RunEventType = RunEvent['type'];

/** The member of {@link RunEvent} with the given `type`, e.g. `RunEventOf<'tool-call'>`. */
export type RunEventOf<T extends RunEventType> = Extract<RunEvent, { type: T }>;

/* ------------------------------------------------------------------------------------------------ */
/* Acks and deliveries                                                                              */
/* ------------------------------------------------------------------------------------------------ */

/**
 * Who sent a control: `task` (the first prompt from `RunOptions.task`), `caller` (a control method),
 * `auto` (subvisor itself: the keepAlive-false `close`, the `cancel` of terminate/abort/finalize grace/
 * protocol failure).
 */
export type AckOrigin = 'task' | 'caller' | 'auto';

/** What happened to an accepted steer or follow-up: the agent saw it, or it was dropped unseen. */
export type Delivery = 'injected' | 'dropped';

/**
 * The answer to one control.
 * - `accepted`: legal in the current state; the child acted on it.
 * - `applied`: the run was already doing that (a repeated finalize, close while closing/finalizing).
 * - `rejected`: illegal in the state, or invalid; `reason` says why.
 * - `unanswered`: the run ended, or `ackTimeoutMs` passed, before the child answered.
 */
export interface Ack {
  status: 'accepted' | 'applied' | 'rejected' | 'unanswered';
  /** The child's reason (rejections), or subvisor's (unanswered). */
  reason?: string;
  /** The seq of the control line this ack answers. */
  seq: number;
  /**
   * Only on an accepted `steer` or `follow-up` (including one that started a turn from `ready`):
   * resolves `injected` when the child's `steering-injected`/`follow-up-injected` event names this seq
   * (`ref`), `dropped` when an `info` event lists it in `refs` or the run ends first. Never rejects.
   */
  delivery?: Promise<Delivery>;
}

/* ------------------------------------------------------------------------------------------------ */
/* Outcome                                                                                          */
/* ------------------------------------------------------------------------------------------------ */

/** Final status of a run. */
export type OutcomeStatus = 'done' | 'cancelled' | 'failed' | 'timed-out';

/**
 * Why a run did not end as planned; set together with `outcome.error`.
 * - `spawn-failed`: the command could not be started (ENOENT, EACCES...). The CLI maps it to exit code 3.
 * - `version-mismatch`, `foreign-run`, `event-file-truncated`: protocol failures (the run was cancelled and reaped).
 * - `ready-timeout`: no `ready` within `readyTimeoutMs`.
 * - `deadline`: the parent enforced the deadline (status `timed-out`).
 * - `aborted`: the parent cancelled the run: `cancel()`, the `signal`, `terminate()` or disposal (status `cancelled`).
 * - `finalize-timeout`: an accepted finalize did not end the run within `finalizeGraceMs`, so it was cancelled.
 * - `no-exit-event`: the process ended without writing `exit` (crash).
 * - `child-error`: the child's own `exit` said failed/timed-out/cancelled with an error text.
 * - `channel-error`: reading the event file or writing the control file failed.
 * - `parent-shutdown`: the parent process received SIGINT/SIGTERM.
 */
export type OutcomeErrorCode =
  | 'spawn-failed'
  | 'version-mismatch'
  | 'foreign-run'
  | 'event-file-truncated'
  | 'ready-timeout'
  | 'deadline'
  | 'aborted'
  | 'finalize-timeout'
  | 'no-exit-event'
  | 'child-error'
  | 'channel-error'
  | 'parent-shutdown';

/** The single record of how a run ended. `run.outcome` resolves to it exactly once and never rejects. */
export interface Outcome {
  runId: string;
  status: OutcomeStatus;
  /** The whole answer (from `final-text-path` when the child wrote one and it was safe to read). */
  finalText?: string;
  /** True only when `finalText` is known to be incomplete (or missing after `exit done`). */
  truncated: boolean;
  /** Why the answer is incomplete or missing. */
  truncationNote?: string;
  /** The result's stop reason. */
  stopReason?: string;
  /** Token usage: the result's, or else summed from every `turn-complete`. */
  usage?: JsonObject;
  /** Number of turns the run went through (the highest turn number seen). */
  turns: number;
  /** A human-readable reason when the run did not end `done` cleanly (the child's own error when it gave one). */
  error?: string;
  /** Machine-readable category of `error`. */
  errorCode?: OutcomeErrorCode;
  /** True when the command could not be started at all (`errorCode` is `spawn-failed`). */
  spawnFailed: boolean;
  /** The process's exit code (null when killed by a signal or never started). */
  exitCode: number | null;
  /** The signal that ended the process, if any. */
  signal: NodeJS.Signals | null;
  /** subvisor had to signal the process tree (SIGTERM or more). */
  killed: boolean;
  /** SIGKILL was needed because something survived SIGTERM. */
  escalated: boolean;
  /** Event lines that were rejected (every `rejected` event). */
  rejectedLines: number;
  /** The last bytes (`outputTailBytes`) of the child's stdout and stderr, interleaved as they arrived. */
  outputTail: string;
  /** Wall time from `spawnRun` to the outcome. */
  durationMs: number;
}

/* ------------------------------------------------------------------------------------------------ */
/* The Run handle                                                                                   */
/* ------------------------------------------------------------------------------------------------ */

/** The signal a kill step sent and the pids it targeted (the group leader pid stands for its group). */
export interface KillStep {
  signal: 'SIGTERM' | 'SIGKILL';
  pids: number[];
}

/**
 * The state a {@link Run} handle reports: one of the wire states mirrored from the child, or `queued`
 * for a run of a supervisor pool (`createSupervisor`) that waits for a free slot and has no child yet.
 * A run from `spawnRun` is never `queued`; a queued run leaves `queued` for `starting` (or, when it is
 * cancelled before it starts, straight for `cancelled`).
 */
export type RunHandleState = 'queued' | RunState;

/** Listener map of a {@link Run} (eventemitter3). Listeners must not throw. */
export interface RunEvents {
  /** Every event, in order, as the iterator yields it (ending with exactly one `exit`). */
  event: (event: RunEvent) => void;
  /** The state changed (the mirrored wire state, or a pooled run leaving `queued`). */
  state: (state: RunHandleState, previous: RunHandleState) => void;
  /**
   * A control was answered (or given up on as `unanswered`): every control subvisor wrote, including
   * the task prompt and its own `close` (keepAlive false) and `cancel` (terminate, abort, finalize grace,
   * protocol failure). `control` is its type (its seq is `ack.seq`), `origin` who sent it.
   */
  ack: (ack: Ack, control: WireControlType, origin: AckOrigin) => void;
  /** An accepted steer/follow-up was injected or dropped; `seq` is the control's seq. */
  delivery: (seq: number, delivery: Delivery) => void;
  /** A line was rejected (also emitted as an `event`). */
  rejected: (event: RejectedEvent) => void;
  /** A chunk of the child's stdout or stderr. */
  output: (chunk: string, stream: 'stdout' | 'stderr') => void;
  /** The kill ladder signalled the tree. */
  kill: (step: KillStep) => void;
  /** The run ended; emitted once, right before `run.outcome` resolves. */
  outcome: (outcome: Outcome) => void;
}

/**
 * A supervised child run: the control surface, the event stream and the outcome in one handle.
 *
 * **Iteration** (`for await (const event of run)`) yields every event in order and ends after exactly
 * one `exit`. Each iterator has its own queue (a single-consumer queue, not a replay log): the first
 * iterator created also receives every event that arrived before it (unless `retainEvents: false`),
 * later iterators start with the events that arrive after they are created. Breaking out of the loop
 * does not stop the run. While an iterator has more than `highWaterMark` events waiting, reading of
 * the event file pauses (except while a control waits for its ack, and after the process exited).
 *
 * **Disposal** (`await using run = spawnRun(...)`) is {@link Run.terminate}.
 */
export interface Run extends EventEmitter<RunEvents>, AsyncIterable<RunEvent>, AsyncDisposable {
  /** The run id (`FEN_WIRE_RUN_ID`). */
  readonly id: string;
  /** The child's pid; undefined when it could not be spawned. */
  readonly pid: number | undefined;
  /**
   * The mirrored run state (one of the wire states), or `queued` for a pooled run still waiting for a
   * slot; follows the `state` event.
   */
  readonly state: RunHandleState;
  /** The private run directory holding the control and event files (removed at the end unless `keepFiles`). */
  readonly channelDir: string;
  /** True once the outcome is settled. */
  readonly ended: boolean;
  /** Resolves exactly once with the outcome; never rejects. */
  readonly outcome: Promise<Outcome>;
  /**
   * The ack of the first prompt (`task`), like the control methods' acks (`unanswered` when the run
   * ends first). `undefined` when no task was written. Never rejects.
   */
  readonly taskAck: Promise<Ack | undefined>;
  /** Sends `prompt {text}` (legal in `ready`). */
  prompt(text: string): Promise<Ack>;
  /** Sends `steer {text}`; text must not be empty. An accepted ack carries `delivery`. */
  steer(text: string): Promise<Ack>;
  /** Sends `follow-up {text}`; text must not be empty. An accepted ack carries `delivery`. */
  followUp(text: string): Promise<Ack>;
  /** Sends `finalize {note?}`. If the run has not ended `finalizeGraceMs` after acceptance, subvisor cancels it. */
  finalize(note?: string): Promise<Ack>;
  /**
   * Sends `cancel {}` and starts the kill ladder right away: the grace counts from this call, not from
   * the ack, so a child that never answers (or is still `starting` and slower than `killGraceMs` to get
   * ready) is killed all the same. Later controls are refused (`run-ended`).
   */
  cancel(): Promise<Ack>;
  /** Sends `close {}`: exit cleanly after the current turn. */
  close(): Promise<Ack>;
  /**
   * Ends the run now: sends `cancel` (when the run is still live), starts the kill ladder and resolves
   * with the outcome once the whole tree is gone. The outcome is `cancelled` (errorCode `aborted`) unless
   * the run had already ended otherwise. Safe to call more than once.
   */
  terminate(reason?: string): Promise<Outcome>;
  /**
   * Ends the run at once: SIGKILLs the process group and every known descendant now (no cancel, no
   * grace) and resolves with the outcome once the tree is gone. The outcome is `cancelled` (errorCode
   * `aborted`) unless the run had already ended otherwise.
   */
  kill(reason?: string): Promise<Outcome>;
  /**
   * The same stream in batches: each step yields every event waiting at that moment (at least one), in
   * order, the last batch ending with the `exit`. One promise per batch instead of one per event, for
   * consumers that care about throughput. Same queue semantics and backpressure as the event iterator
   * (it is one: the first iterator or batch iterator created gets the retained events).
   */
  batches(): AsyncIterableIterator<RunEvent[], undefined>;
  /** Creates an event iterator (see the class notes for the queue semantics). */
  [Symbol.asyncIterator](): AsyncIterator<RunEvent, undefined>;
  /** `terminate()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}
