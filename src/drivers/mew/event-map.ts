// Maps mew's streaming messages (provider events, tools, subagents, notices) to subvisor's RunEvent shapes.
import type { JsonObject, Usage } from '../../wire/index.js';
import { readUsage } from '../shared/usage-reader.js';
import type { UsageSpec } from '../shared/usage-reader.js';
import { passthrough, withExtras } from '../shared/event-drafts.js';
import type { EventDraft } from '../shared/event-drafts.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import { stringField } from '../shared/json-kinds.js';
import type { MewMessage } from './messages.js';

/** Messages the seed documents that carry nothing the run acts on: `info` events. */
export const NOTICES: ReadonlySet<string> = new Set([
  'session_list', 'session_cleared', 'session_title_changed', 'model_list', 'model_switched', 'thinking_variant_changed',
  'todos_updated', 'job_update', 'job_output', 'job_output_error', 'slash_result', 'project_list', 'session_usage_changed',
]);

/**
 * What a `part_delta` adds to. mew's providers stream a reasoning part exactly like a text part (the
 * delta's `field` is `text` for both; a tool call's are `call_id`, `tool_name`, `arguments`, Anthropic's
 * redacted thinking `encrypted_content`): only the type of the part its `part_id` names, announced by
 * `part_start`, says which is which. `unseen`: a part whose `part_start` this client did not see (it began
 * before the client attached), so nothing says what it is.
 */
export type DeltaKind = 'answer' | 'thinking' | 'other' | 'unseen';

/** The kind of a `part_delta`, given the type (snake_case) of the part it names (undefined: never announced). */
export function deltaKind(event: JsonObject, partType: string | undefined): DeltaKind {
  if (partType === undefined) return 'unseen';
  if ((stringField(event, 'field') ?? 'text') !== 'text') return 'other';
  return partType === 'text' ? 'answer' : partType === 'reasoning' ? 'thinking' : 'other';
}

/** The RunEvent of one `provider` event (its `event` already normalized by checkMessage); `delta`: the kind of a `part_delta`. */
export function providerDraft(event: JsonObject, delta: DeltaKind = 'unseen'): EventDraft {
  const tag = stringField(event, 'type') ?? 'unknown';
  const frame = { ...event, type: `provider.${tag}` };
  switch (tag) {
    case 'part_delta': {
      if (delta === 'unseen') return passthrough(frame, 'a delta of a part whose part_start this client did not see (it began before the client attached): not taken as the answer');
      if (delta === 'other') return passthrough(frame);
      const type = delta === 'answer' ? 'assistant-text-delta' : 'assistant-thinking-delta';
      // checkMessage checked `delta` (required, a string).
      return withExtras({ type, delta: event['delta'] as string }, frame, ['delta']);
    }
    case 'message_end': {
      const draft: RunEventDraftOf<'llm-end'> = { type: 'llm-end' };
      const finish = stringField(event, 'finish');
      if (finish !== undefined) draft.stopReason = finish;
      const usage = usageOf(event);
      if (usage !== undefined) draft.usage = usage;
      return withExtras(draft, frame, ['finish', 'usage', 'cost']);
    }
    case 'retry_wait':
      return passthrough(frame, retrySummary(event));
    case 'error':
      return withExtras({ type: 'error', error: stringField(event, 'message') ?? 'the provider reported an error', source: 'provider' }, frame, ['message']);
    default:
      return passthrough(frame);
  }
}

/** `retry_wait {attempt, max_attempts, delay_secs, reason}` (mew_message::ProviderEventWire; `delay_ms` read too) in one line. */
function retrySummary(event: JsonObject): string {
  const [attempt, max, secs, ms] = [event['attempt'], event['max_attempts'], event['delay_secs'], event['delay_ms']];
  const delay = typeof ms === 'number' ? ms : typeof secs === 'number' ? secs * 1000 : undefined;
  const reason = stringField(event, 'reason');
  const of = typeof attempt === 'number' ? ` (attempt ${attempt}${typeof max === 'number' ? ` of ${max}` : ''})` : '';
  return `the provider call failed${reason === undefined ? '' : ` (${reason})`}; retrying${of}${delay === undefined ? '' : ` in ${delay} ms`}`;
}

/** Where a `message_end` carries its usage: mew's `Tokens` object, and its cost beside it. */
const MEW_USAGE: UsageSpec = { object: 'usage', cost: 'cost' };

/**
 * The usage of one `message_end`: its `usage` object as mew sent it, with `cost` added when it is a
 * number, so the run's summed usage carries the cost too. Undefined when there is neither.
 */
export function usageOf(event: JsonObject): Usage | undefined {
  return readUsage(event, MEW_USAGE);
}

/** `tool_start {call_id}` -> `tool-call`. mew names the tool in `name` or `tool_name` when it names it at all. */
export function toolStartDraft(message: MewMessage): EventDraft {
  const id = message['call_id'] as string;
  const name = toolNameOf(message);
  return withExtras({ type: 'tool-call', name, id }, message, ['call_id', 'name']);
}

/** The tool name of a `tool_start` ('tool' when mew does not say). */
export function toolNameOf(message: MewMessage): string {
  return stringField(message, 'name') ?? stringField(message, 'tool_name') ?? 'tool';
}

/** `tool_end {call_id, success}` -> `tool-result` (named after its `tool_start`). */
export function toolEndDraft(message: MewMessage, name: string): EventDraft {
  const id = message['call_id'] as string;
  return withExtras({ type: 'tool-result', name, isError: message['success'] !== true, id, toolCallId: id }, message, ['call_id', 'success']);
}

/** Subagent messages -> `info` with a one-line summary (the fields pass through). */
export function subagentDraft(message: MewMessage): EventDraft {
  const name = stringField(message, 'display_name') ?? stringField(message, 'name') ?? stringField(message, 'tool_name') ?? 'a subagent';
  switch (message.type) {
    case 'subagent_start':
      return passthrough(message, `subagent started: ${name}`);
    case 'subagent_status':
      return passthrough(message, stringField(message, 'message') ?? `subagent ${name} is working`);
    default:
      return passthrough(message, 'subagent finished');
  }
}
