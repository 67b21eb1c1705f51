// Public run events: the camelCase RunEvent union every protocol's driver yields, the same for all.
import type { JsonObject, JsonValue, RejectionCode, Usage } from '../../wire/index.js';

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
export type LlmEndRunEvent = DisplayEvent<'llm-end', { stopReason?: string; usage?: Usage }>;
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
export type TurnCompleteRunEvent = LifecycleEvent<'turn-complete', { turn: number; stopReason: string; usage?: Usage }>;
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
    usage?: Usage;
    truncated?: boolean;
    finalTextPath?: string;
    /** Sent only by older children. */
    context?: 'complete' | 'partial';
  }
>;

/**
 * `exit`: the last event of every run, exactly once. When the child wrote no `exit` (it crashed, was
 * killed, or never started) subvisor ends the stream with one it made: `synthetic: true`, no `v`/`seq`,
 * and `status` taken from the outcome. A protocol with no exit frame (HEP) has its exit made from the
 * exit code by its driver: no `v`/`seq`, not `synthetic`, with `exitCode`.
 */
export interface ExitRunEvent {
  type: 'exit';
  status: 'done' | 'cancelled' | 'failed' | 'timed-out';
  error?: string;
  /** Present (true) only on an exit subvisor made up. */
  synthetic?: true;
  /** Absent when `synthetic`, or made from an exit code (HEP). */
  v?: 1;
  /** Absent when `synthetic`, or made from an exit code (HEP). */
  seq?: number;
  run: string;
  [extra: string]: unknown;
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
  | PassthroughRunEvent
  | ExitRunEvent
  | RejectedEvent;

/** The `type` values of {@link RunEvent}. */
export type RunEventType = RunEvent['type'];

/** The member of {@link RunEvent} with the given `type`, e.g. `RunEventOf<'tool-call'>`. */
export type RunEventOf<T extends RunEventType> = Extract<RunEvent, { type: T }>;

