// The exact wire objects of both directions (kebab-case keys) and the codec's result types.

/** Which way a line travels: `event` lines go child -> parent, `control` lines parent -> child. */
export type Direction = 'event' | 'control';

/** Any JSON value, as carried by fields such as `arguments` and `result`. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object, as carried by `usage`. */
export type JsonObject = { [key: string]: JsonValue };

/** Fields every line carries. */
export interface Envelope {
  v: 1;
  seq: number;
  type: string;
  run: string;
}

/** Optional fields any display event may carry. */
export interface DisplayFields {
  timestamp?: string;
  summary?: string;
  'transport-truncated?'?: boolean;
  'run-id'?: string;
  agent?: string;
  'requested-cwd'?: string;
  cwd?: string;
  'physical-cwd'?: string;
}

/**
 * One message type as decoded: the envelope, the declared fields, and an index signature. Unlike the
 * camelCase RunEvents (whose unknown fields move under `extra`), a wire message is the object the
 * line parsed to, as it is: the codec checks the declared fields and keeps any other field the sender
 * wrote, so the index signature says what is really there (read as `unknown`, to be checked).
 */
type Wire<T extends string, P> = Envelope & { type: T } & P & { [extra: string]: unknown };
type Display<T extends string, P> = Wire<T, P & DisplayFields>;

export type AgentStartedEvent = Display<'agent-started', { provider?: string; model?: string }>;
export type UserEvent = Display<'user', { text?: string }>;
export type LlmStartEvent = Display<'llm-start', { provider?: string; model?: string }>;
export type LlmEndEvent = Display<'llm-end', { 'stop-reason'?: string; usage?: JsonObject }>;
export type AssistantTextEvent = Display<
  'assistant-text',
  { 'final?': boolean; 'content-index'?: number; text?: string }
>;
export type AssistantTextDeltaEvent = Display<
  'assistant-text-delta',
  { 'content-index'?: number; delta?: string }
>;
export type AssistantThinkingEvent = Display<
  'assistant-thinking',
  { 'final?': boolean; 'content-index'?: number; text?: string }
>;
export type AssistantThinkingDeltaEvent = Display<
  'assistant-thinking-delta',
  { 'content-index'?: number; delta?: string }
>;
export type AssistantStreamEndEvent = Display<'assistant-stream-end', { 'final?': boolean }>;
export type ToolCallEvent = Display<'tool-call', { name: string; id?: string; arguments?: JsonValue }>;
export type ToolResultEvent = Display<
  'tool-result',
  {
    name: string;
    'is-error?': boolean;
    id?: string;
    'tool-call-id'?: string;
    'duration-seconds'?: number;
    result?: JsonValue;
  }
>;
export type SteeringInjectedEvent = Display<'steering-injected', { text?: string; ref?: number }>;
export type FollowUpInjectedEvent = Display<'follow-up-injected', { text?: string; ref?: number }>;
export type AgentTurnCompleteEvent = Display<'agent-turn-complete', { status?: string; error?: string }>;
export type ErrorEvent = Display<'error', { error?: string; source?: string }>;
export type InfoEvent = Display<'info', { refs?: number[] }>;

export type ReadyEvent = Wire<'ready', {}>;
export type TurnStartedEvent = Wire<'turn-started', { turn: number }>;
export type TurnCompleteEvent = Wire<
  'turn-complete',
  { turn: number; 'stop-reason': string; usage?: JsonObject }
>;
export type AckStatus = 'accepted' | 'rejected' | 'applied';
/** `ref` may be omitted only when `status` is `rejected` (the codec rejects any other ack without it). */
export type ControlAckEvent =
  | Wire<'control-ack', { status: 'accepted' | 'applied'; ref: number; reason?: string }>
  | Wire<'control-ack', { status: 'rejected'; ref?: number; reason?: string }>;
export type ResultEvent = Wire<
  'result',
  {
    'stop-reason': string;
    'final-text'?: string;
    usage?: JsonObject;
    'truncated?'?: boolean;
    'final-text-path'?: string;
    /** Sent only by older children; the current spec dropped it. */
    context?: 'complete' | 'partial';
  }
>;
export type ExitStatus = 'done' | 'cancelled' | 'failed' | 'timed-out';
export type ExitEvent = Wire<'exit', { status: ExitStatus; error?: string }>;

/** Every child -> parent line. */
export type WireEvent =
  | AgentStartedEvent
  | UserEvent
  | LlmStartEvent
  | LlmEndEvent
  | AssistantTextEvent
  | AssistantTextDeltaEvent
  | AssistantThinkingEvent
  | AssistantThinkingDeltaEvent
  | AssistantStreamEndEvent
  | ToolCallEvent
  | ToolResultEvent
  | SteeringInjectedEvent
  | FollowUpInjectedEvent
  | AgentTurnCompleteEvent
  | ErrorEvent
  | InfoEvent
  | ReadyEvent
  | TurnStartedEvent
  | TurnCompleteEvent
  | ControlAckEvent
  | ResultEvent
  | ExitEvent;

export type PromptControl = Wire<'prompt', { text: string }>;
export type SteerControl = Wire<'steer', { text: string }>;
export type FollowUpControl = Wire<'follow-up', { text: string }>;
export type FinalizeControl = Wire<'finalize', { note?: string }>;
export type CancelControl = Wire<'cancel', {}>;
export type CloseControl = Wire<'close', {}>;

/** Every parent -> child line. */
export type WireControl =
  | PromptControl
  | SteerControl
  | FollowUpControl
  | FinalizeControl
  | CancelControl
  | CloseControl;

export type WireEventType = WireEvent['type'];
export type WireControlType = WireControl['type'];
export type WireMessage = WireEvent | WireControl;

/** The message type a direction carries. */
export type MessageOf<D extends Direction> = D extends 'event' ? WireEvent : WireControl;

/** A type's declared fields, without the index signature that admits unknown extras. */
type DeclaredFields<T> = { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };

/**
 * A message as handed to a sender: the declared payload fields of one type (required ones required),
 * without the envelope; unknown extra fields stay allowed.
 */
export type PayloadOf<M> = M extends unknown
  ? Omit<DeclaredFields<M>, keyof Envelope> & { [extra: string]: unknown }
  : never;

export type RejectionCode =
  | 'malformed'
  | 'too-large'
  | 'invalid'
  | 'version-mismatch'
  | 'unknown-type'
  | 'invalid-payload'
  | 'out-of-order';

/** Why a line was not accepted. Only `version-mismatch` is fatal: the receiver must stop the channel. */
export interface Rejection {
  code: RejectionCode;
  reason: string;
  fatal: boolean;
  /** The line's seq, present only when it is an integer in 1..2^53-1 (never on `out-of-order`). */
  seq?: number;
  /** The line's `type` when the line parsed to an object whose `type` is a string. */
  type?: string;
  /** The line's `run` when the line parsed to an object whose `run` is a string. */
  run?: string;
  /** Schema errors, one per failed field: on `invalid-payload`, and on `invalid` for a missing v or bad envelope. */
  errors?: string[];
}

export type DecodeResult<M = WireMessage> = { ok: true; message: M } | { ok: false; rejection: Rejection };

/** `line` never contains the terminating newline; the writer appends it. */
export type EncodeResult = { ok: true; line: string } | { ok: false; rejection: Rejection };

/** The run states shared by the child and a parent's mirror. */
export type RunState =
  | 'starting'
  | 'ready'
  | 'running'
  | 'closing'
  | 'finalizing'
  | 'done'
  | 'cancelled'
  | 'failed'
  | 'timed-out';

export type TerminalState = ExitStatus;
