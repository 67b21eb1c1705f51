// The event types this version defines, at run time: which names and events are known, and otherAgentEvent() for a new unknown one.
import type { AgentEvent, Json, KnownAgentEvent, OtherAgentEvent } from './types.js';

/** Every known event type; the compiler checks that this list and {@link KnownAgentEvent} agree. */
export const KNOWN_AGENT_EVENT_TYPES: readonly string[] = Object.keys({
  text: true,
  thinking: true,
  tool_started: true,
  tool_ended: true,
  retrying: true,
  completed: true,
  failed: true,
  run_event: true,
  answer_truncated: true,
} satisfies Record<KnownAgentEvent['type'], true>);

/** Whether `type` names an event type this version defines (whose fields are fixed). */
export function isKnownEventType(type: string): boolean {
  return KNOWN_AGENT_EVENT_TYPES.includes(type);
}

/**
 * Whether an event is of a type this version defines: after it, `switch (event.type)` narrows to each event's own
 * fields (`event.delta` of a `text` is a string); an event for which it is false is an {@link OtherAgentEvent}.
 */
export function isKnownAgentEvent(event: AgentEvent): event is KnownAgentEvent {
  return isKnownEventType(event.type);
}

/**
 * A non-terminal event of a type this version does not define, such as `otherAgentEvent('citation', { url })`:
 * the way to yield one from a typed agent (an object literal is checked against the known types). A known
 * type is a compile error, and a `TypeError` at run time: yield that event with its own fields.
 */
export function otherAgentEvent<T extends string>(
  type: T & (T extends KnownAgentEvent['type'] ? never : unknown),
  fields: { readonly [field: string]: Json } = {},
): OtherAgentEvent {
  if (typeof type !== 'string' || type === '') throw new TypeError('otherAgentEvent: the type must be a non-empty string');
  if (isKnownEventType(type)) {
    throw new TypeError(`otherAgentEvent: "${type}" is a known event type; yield it as { type: '${type}', ... } with its own fields (docs/agent.md)`);
  }
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) throw new TypeError('otherAgentEvent: fields must be an object');
  return { ...fields, type } as unknown as OtherAgentEvent;
}
