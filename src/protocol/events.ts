// Public run events: the camelCase RunEvent union every protocol's driver yields, the same for all.
import type { JsonObject, JsonValue, RejectionCode, Usage } from '../wire/index.js';
import type { Outcome } from './outcome.js';

/** What happened to an accepted steer or follow-up: the agent saw it, or it was dropped unseen. */
export type Delivery = 'injected' | 'dropped';

/**
 * The fields a child sent that its protocol does not define, keyed by their converted names (Fen:
 * kebab-case to camelCase, a trailing `?` dropped; HEP: snake_case to camelCase; fuseraft, mew and
 * fuseraft serve: as sent). Every unknown field lands here, one literally named `extra` included, so
 * an unknown field can never shadow a declared one, nor be shadowed. When two unknown keys would get
 * the same name (`a-b` and `aB`), the key spelled that way literally keeps it and the other one
 * keeps its own spelling: nothing is dropped.
 */
export type RunEventExtra = { [key: string]: JsonValue };

/** Fields every decoded event carries: the envelope, and the child's unknown fields. */
export interface RunEventBase {
  /** Protocol version (always 1). */
  v: 1;
  /** The child's sequence number of this line. */
  seq: number;
  /** The run id of the line (always the run's own id: lines for another run are protocol failures). */
  run: string;
  /** The child's fields its protocol does not define (see {@link RunEventExtra}); absent when there were none. */
  extra?: RunEventExtra;
}

/** Optional fields any display event may carry (Fen's normalized bus events). */
export interface DisplayEventFields {
  timestamp?: string;
  summary?: string;
  /** The child cut the payload to its transport bounds (`transport-truncated?`). */
  transportTruncated?: boolean;
  /**
   * Text and thinking events the child cut: the child's own note of the cut, which Fen writes into the
   * text itself (`[fen: tool output truncated: kept 4096 sanitized bytes from 102410 input bytes]`).
   * subvisor takes it out of `delta`/`text`, which then hold only the agent's words, and puts it here.
   */
  transportNote?: string;
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

/** fuseraft-bridge: the message was the Orchestrator's (a routing or correction turn, never the answer). */
interface OrchestratorMark {
  orchestrator?: true;
}

/** fuseraft-serve: the daemon's id of the task an event belongs to. */
interface ServeSession {
  sessionId?: string;
}

/** `agent-started`: the agent began. */
export type AgentStartedRunEvent = DisplayEvent<'agent-started', { provider?: string; model?: string }>;
/** `user`: a user message entered the conversation. */
export type UserRunEvent = DisplayEvent<'user', { text?: string } & OrchestratorMark>;
/** `llm-start`: a model call began. */
export type LlmStartRunEvent = DisplayEvent<'llm-start', { provider?: string; model?: string }>;
/** `llm-end`: a model call ended (`stop-reason` -> `stopReason`). */
export type LlmEndRunEvent = DisplayEvent<'llm-end', { stopReason?: string; usage?: Usage }>;
/** `assistant-text`: a complete text block (`final?` -> `final`, `content-index` -> `contentIndex`). */
export type AssistantTextRunEvent = DisplayEvent<
  'assistant-text',
  { final: boolean; contentIndex?: number; text?: string } & OrchestratorMark & ServeSession
>;
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

/**
 * What subvisor's own drivers put on the `info` notices they make (a Fen child sends none of these:
 * from a Fen child they would be unknown fields, under `extra`). The native frame's own fields are
 * under `extra`.
 */
export interface InfoNoticeFields {
  /**
   * fuseraft, fuseraft-bridge, fuseraft-serve and mew: the native frame type the notice stands for
   * (`status`, `provider.retry_wait`, ...), or the driver's own notice (`connection-lost`, `in-flight`,
   * `pending-results`, `reattached`, `approval_response`, `question_response`, `permission_response`,
   * `ask_user_response`, `session_history`, `session_ready`, `connection`).
   */
  nativeType?: string;
  /** HEP: the frame type of a progress notice (`tool_delta`, `tool_liveness`, `compaction_start`, `compaction_end`). */
  hepType?: string;
  /** The daemon transport's `connection-lost` notice: how the connection ended (`connection-lost`, `no-pong`). */
  code?: string;
  /** Approvals and questions (fuseraft's and mew's prompt desks): who decided (`callback`, `policy`, `timeout`, ...). */
  decidedBy?: string;
  /** An approval or permission: whether it was granted. */
  approved?: boolean;
  /** fuseraft: what the approval was for (the request's `kind`). */
  kind?: string;
  /** fuseraft: the answer given to a question (null: skipped). */
  answer?: string | null;
  /** mew: whether an `ask_user_request` was answered. */
  answered?: boolean;
  /** mew: the request the answer is for (its `request_id`; an integer id of an older build in decimal). */
  requestId?: string;
  /** The approval callback threw or rejected: its message (the safe default was sent). */
  callbackError?: string;
  /** mew `session_history`: how many messages the session already held (not replayed). */
  messageCount?: number;
  /** fuseraft-serve `in-flight`: the daemon's record of a task of this client still open. */
  inFlight?: JsonObject;
  /** fuseraft-serve `pending-results`: the task ids whose results follow. */
  pendingResults?: string[];
  /** subvisor/queue: the queue's own notice; its `seq` is 0. */
  queue?: 'attempt' | 'retry' | 'handed-back' | 'trimmed';
  /** subvisor/queue `attempt`, `retry`, `handed-back`: the attempt (from 1). */
  attempt?: number;
  /** subvisor/queue `retry`: the outcome of the attempt that is retried. */
  outcome?: Outcome;
  /** subvisor/queue `handed-back`, `attempt`: the worker (null when its record was trimmed). */
  worker?: string | null;
  /** subvisor/queue `attempt`: why the previous attempt ended, when known. */
  previous?: string | null;
  /** subvisor/queue `trimmed`: how many records were missed. */
  missed?: number;
}

/** `info`: a notice; `refs` lists the seqs of queued steer/follow-up controls that were dropped. */
export type InfoRunEvent = DisplayEvent<'info', { refs?: number[] } & InfoNoticeFields>;
/** `ready`: the child is initialized and waiting for input. */
export type ReadyRunEvent = LifecycleEvent<'ready', {
  /** HEP only: always `'hep'` (the header's fields are under `extra`). */
  protocol?: 'hep';
}>;
/** `turn-started`: a turn began (turns count from 1). */
export type TurnStartedRunEvent = LifecycleEvent<'turn-started', {
  turn: number;
  /** fuseraft-serve: the task's queue position when the daemon queued it. */
  position?: number;
  /** fuseraft-serve: the turn of a task re-attached with `connectRun({ resume })`. */
  resumed?: true;
} & ServeSession>;
/** `turn-complete`: a turn ended, with its stop reason (`aborted` when interrupted) and summed usage. */
export type TurnCompleteRunEvent = LifecycleEvent<'turn-complete', {
  turn: number;
  stopReason: string;
  usage?: Usage;
  /** fuseraft and mew: why a turn that ended `error` failed. */
  error?: string;
  /** fuseraft-bridge: the agent whose message ended the turn. */
  agent?: string;
  /** fuseraft-bridge: the message's tool calls, as sent. */
  toolCalls?: JsonValue;
} & OrchestratorMark>;

interface ControlAckFields {
  reason?: string;
}
/**
 * `control-ack`: the child's answer to the control whose seq is `ref`. Also surfaced as {@link Ack}.
 * `ref` may be missing only from a rejection (of a line too broken to name its seq).
 */
export type ControlAckRunEvent =
  | LifecycleEvent<'control-ack', { status: 'accepted' | 'applied'; ref: number } & ControlAckFields>
  | LifecycleEvent<'control-ack', { status: 'rejected'; ref?: number } & ControlAckFields>;
/**
 * `result`: the run's answer as the child sent it (`final-text` -> `finalText`, `truncated?` ->
 * `truncated`, `final-text-path` -> `finalTextPath`). The whole answer is in `outcome.finalText`.
 */
export type ResultRunEvent = LifecycleEvent<
  'result',
  {
    stopReason: string;
    finalText?: string;
    usage?: Usage;
    truncated?: boolean;
    finalTextPath?: string;
    /** Sent only by older children. */
    context?: 'complete' | 'partial';
  } & ServeSession
>;

/** What a `rate-limit` event says (see {@link RateLimitRunEvent}); also what a driver reports with `DriverSink.rateLimit`. */
export interface RateLimitFields {
  /**
   * `limited`: the provider refuses new work now (an HTTP 429 or 529, a quota rejected): a pool's gate
   * shuts. `warning`: work is still taken but a limit is near. `allowed`: work is taken (a recovery after
   * `limited`, or a routine report).
   */
  status: 'limited' | 'warning' | 'allowed';
  /**
   * How long to wait before new work, in milliseconds from when the frame was read (an HTTP `retry-after`,
   * Claude Code's `retry_delay_ms`). Absent when the protocol does not say.
   */
  retryAfterMs?: number;
  /** When the limit resets, in epoch milliseconds (a driver converts a protocol's epoch seconds). Absent when unknown. */
  resetsAt?: number;
  /** The provider's HTTP status, where the protocol gives it (429 too many requests, 529 overloaded). */
  httpStatus?: number;
  /**
   * Whether the agent retries the refused request by itself (Claude Code's `api_retry`, Codex's `willRetry`):
   * the run may still succeed. `false`: the agent gave up (Fen reports the error once its own retries are spent).
   * Absent when the protocol does not say.
   */
  agentRetries?: boolean;
  /** The agent's own retry, when it says: the attempt about to be made (from 1)... */
  attempt?: number;
  /** ...out of this many. */
  maxAttempts?: number;
  /** Which limit, in the protocol's words (Claude Code's `rateLimitType`, `five_hour`, `seven_day`...; Codex's `primary`, `secondary`). */
  limitType?: string;
  /**
   * The native frame it came from: `rate_limit_event`, `system/api_retry` (Claude Code), `error`,
   * `account/rateLimits/updated` (Codex), `session/prompt` (ACP: the prompt's error), `error` (Fen).
   */
  nativeType: string;
  /** A short description for people: at most 300 characters, never a secret (a driver cuts the provider's text). */
  message?: string;
}

/**
 * `rate-limit`: the child's protocol reported rate-limit news (a refusal, a warning, a recovery), in one
 * shape for every protocol; the native frame's own fields are under `extra`. Its driver reports the same
 * fields to the core when it reads the frame (`DriverSink.rateLimit`), so a pool's gate hears of it at
 * once, even while this event waits behind backpressure. A frame that carried another event too (Fen's
 * `error`) gives both, with the same `seq`.
 */
export type RateLimitRunEvent = LifecycleEvent<'rate-limit', RateLimitFields>;

/**
 * `exit`: the last event of every run, exactly once. When the child wrote no `exit` (it crashed, was
 * killed, or never started) subvisor ends the stream with one it made: `synthetic: true`, no `v`/`seq`,
 * and `status` taken from the outcome. A protocol with no exit frame (HEP) has its exit made from the
 * exit code by its driver: no `v`/`seq`, not `synthetic`, with `exitCode`.
 */
export interface ExitRunEvent {
  type: 'exit';
  /** The run's status: always `outcome.status`, whatever the child said. */
  status: 'done' | 'cancelled' | 'failed' | 'timed-out';
  /**
   * The status the child itself announced, present only when the run's verdict differs from it (a child
   * that obeyed the cancel sent at the deadline says `cancelled`; the run ended `timed-out`).
   */
  childStatus?: 'done' | 'cancelled' | 'failed' | 'timed-out';
  /** The run's error when it did not end `done` (the verdict's, when it differs from the child's). */
  error?: string;
  /** Present (true) only on an exit subvisor made up. */
  synthetic?: true;
  /** Absent when `synthetic`, or made from an exit code (HEP). */
  v?: 1;
  /** Absent when `synthetic`, or made from an exit code (HEP). */
  seq?: number;
  run: string;
  /** HEP: the child's exit code (null when a signal ended it). */
  exitCode?: number | null;
  /** The child's unknown fields of its `exit` line (see {@link RunEventExtra}). */
  extra?: RunEventExtra;
}

/**
 * `passthrough`: a frame of a type the run's driver does not know (a newer protocol version may add
 * some), delivered raw instead of dropped. HEP only, today; Fen rejects unknown types (`unknown-type`).
 */
export type PassthroughRunEvent = LifecycleEvent<'passthrough', { protocol: string; frame: JsonObject }>;

/** Codes of {@link RejectedEvent}: the wire codec's rejection codes plus the channel's own failures. */
export type RejectedCode =
  | RejectionCode
  /** A valid event whose `run` is another run's id (fatal). */
  | 'foreign-run'
  /** The event file shrank below the read offset (fatal). */
  | 'event-file-truncated'
  /** The event file was swapped: renamed over, removed (and re-created), or truncated and written again (fatal). */
  | 'event-file-replaced'
  /** Reading the event file failed (fatal). */
  | 'read-error';

/**
 * A line of the event file that was not accepted. `fatal` ones (version mismatch, foreign run,
 * truncated or replaced event file) end the run `failed`; the others are reported, counted in
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
  | RateLimitRunEvent
  | PassthroughRunEvent
  | ExitRunEvent
  | RejectedEvent;

/** The `type` values of {@link RunEvent}. */
export type RunEventType = RunEvent['type'];

/** The member of {@link RunEvent} with the given `type`, e.g. `RunEventOf<'tool-call'>`. */
export type RunEventOf<T extends RunEventType> = Extract<RunEvent, { type: T }>;

/**
 * A child's event before its envelope (`v`, `seq`, `run`), which whoever publishes it adds: what a
 * driver builds, and what `createInMemoryRun().event()` takes. One member per event type, so a
 * draft's fields are checked like the event's.
 */
export type RunEventDraft = Exclude<RunEvent, ExitRunEvent | RejectedEvent> extends infer E
  ? E extends RunEventBase
    ? Omit<E, 'v' | 'seq' | 'run'>
    : never
  : never;

/** The draft of one event type, e.g. `RunEventDraftOf<'tool-call'>`. */
export type RunEventDraftOf<T extends RunEventDraft['type']> = Extract<RunEventDraft, { type: T }>;
