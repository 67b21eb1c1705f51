// Public types of the Agent Handler contract (seed 003) as subvisor implements it: Agent, Scope, Prompt, AgentEvent.
import type { RunEvent } from '../api/types.js';
import type { JsonValue } from '../wire/index.js';

/** Any JSON value (the seed's `Json`). */
export type Json = JsonValue;

/** The conversation anchor of an invoke. `session` is opaque and owned by the caller. */
export interface Scope {
  session: string;
  /** Extensions (identity, source, ...) ride on extra fields. */
  [extension: string]: unknown;
}

/** An image attached to a prompt (base64 `data`). */
export interface ImageRef {
  mimeType: string;
  data: string;
}

/** One turn's input. Agents that do not support `images` ignore them. */
export interface Prompt {
  text: string;
  images?: ImageRef[];
}

/** A piece of the answer. All textual output arrives as `text` deltas. */
export interface TextAgentEvent {
  type: 'text';
  delta: string;
}
/** A piece of the model's reasoning: process, never part of the answer. */
export interface ThinkingAgentEvent {
  type: 'thinking';
  delta: string;
}
/** A tool call began. */
export interface ToolStartedAgentEvent {
  type: 'tool_started';
  id: string;
  name: string;
  args: Json;
}
/** A tool call ended. */
export interface ToolEndedAgentEvent {
  type: 'tool_ended';
  id: string;
  isError: boolean;
  content: Json;
}
/** Advisory: the agent retries something internally after `delayMs`. */
export interface RetryingAgentEvent {
  type: 'retrying';
  attempt: number;
  maxAttempts: number;
  delayMs: number;
  reason: string;
}
/** Terminal: success. `data` only when the agent produced structured data. */
export interface CompletedAgentEvent {
  type: 'completed';
  data?: Json;
}
/** Terminal: failure. `retryable` means "worth re-sending with the same session"; `code` subdivides. */
export interface FailedAgentEvent {
  type: 'failed';
  details: string;
  retryable: boolean;
  code?: string;
}

/** The seed's core events. */
export type CoreAgentEvent =
  | TextAgentEvent
  | ThinkingAgentEvent
  | ToolStartedAgentEvent
  | ToolEndedAgentEvent
  | RetryingAgentEvent
  | CompletedAgentEvent
  | FailedAgentEvent;

/** subvisor's own extension (asAgent): a child's run event that has no Agent Handler meaning (off with `runEvents: false`). */
export interface RunAgentEvent {
  type: 'run_event';
  event: RunEvent;
}
/** subvisor's own extension (asAgent): right before a `completed` whose text is known to be incomplete. */
export interface AnswerTruncatedAgentEvent {
  type: 'answer_truncated';
  note: string;
}

/** Every event type this version defines: an event of one of these types has exactly that type's fields. */
export type KnownAgentEvent = CoreAgentEvent | RunAgentEvent | AnswerTruncatedAgentEvent;

declare const otherAgentEventType: unique symbol;

/**
 * The `type` of an event this version does not define: a string, branded so that no object literal passes for an
 * unknown event. A literal with a known `type` is then checked against that type's fields (one it requires that is
 * missing or of the wrong type is a compile error; so is an extra one, where TypeScript checks literals for them),
 * and a new unknown event is made with {@link otherAgentEvent}.
 */
export type OtherAgentEventType = string & { readonly [otherAgentEventType]: true };

/**
 * A non-terminal event of a type this version does not define. Terminal consumers ignore it (the seed's
 * MUST 4); relays pass it on unchanged (MUST 5): an event taken from one invoke stream can be yielded into
 * another as it is. {@link isKnownAgentEvent} tells it from the known ones.
 */
export interface OtherAgentEvent {
  type: OtherAgentEventType;
  [field: string]: unknown;
}

/** Every event of an invoke stream: the known ones, and unknown non-terminal ones. */
export type AgentEvent = KnownAgentEvent | OtherAgentEvent;

/** The terminal events: the set is frozen by the seed. */
export type TerminalAgentEvent = CompletedAgentEvent | FailedAgentEvent;

/** Mid-run intervention of the session control plane. */
export interface DispatchCommand {
  type: 'steer' | 'follow_up' | 'abort';
  /** Required (non-empty) for `steer` and `follow_up`; ignored for `abort`. */
  text?: string;
}

/**
 * The answer of the run serving a session to a dispatched command: the child's ack (`accepted`, `applied`,
 * `rejected`), or `unanswered` when the run ended first. `seq` is the control line's seq, absent when no
 * line was written (no run serves the session, empty text, the run already ended).
 */
export interface DispatchAck {
  status: 'accepted' | 'applied' | 'rejected' | 'unanswered';
  reason?: string;
  seq?: number;
  /** Only on an accepted steer or follow-up: whether the agent saw it (`injected`) or it was `dropped`. */
  delivery?: Promise<'injected' | 'dropped'>;
}

/** The Agent Handler: one invoke per turn. */
export interface Agent {
  invoke(scope: Scope, prompt: Prompt): AsyncIterable<AgentEvent>;
  /** Optional session control plane. */
  dispatch?(session: string, command: DispatchCommand): Promise<DispatchAck>;
}

/** Whether an event is one of the two terminals. */
export function isTerminalEvent(event: { type: unknown }): event is TerminalAgentEvent {
  return event.type === 'completed' || event.type === 'failed';
}
