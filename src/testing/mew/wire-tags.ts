// The fake mew daemon's message tags, written out in both spellings (snake_case as mew's code sends them, PascalCase as seed 004's example shows) rather than derived by the driver's codec: a spelling bug in the driver cannot hide in the fake.
import type { JsonValue } from '../../wire/index.js';
import { isObject } from '../../drivers/shared/json-kinds.js';

/** How the fake spells the tags it sends. */
export type FakeMewTagCase = 'snake_case' | 'PascalCase';

/** A message of the fake's: its tag in snake_case, every other field as sent or to be sent. */
export interface FakeMewMessage {
  type: string;
  [field: string]: JsonValue;
}

/** Tags the fake daemon sends, with their PascalCase spelling. */
const SERVER_TAGS: Readonly<Record<string, string>> = {
  error: 'Error',
  error_event: 'ErrorEvent',
  pong: 'Pong',
  prompt_receipt: 'PromptReceipt',
  provider: 'Provider',
  request_resolved: 'RequestResolved',
  session_activity_changed: 'SessionActivityChanged',
  session_alert: 'SessionAlert',
  session_usage_changed: 'SessionUsageChanged',
  session_history: 'SessionHistory',
  session_ready: 'SessionReady',
  subagent_end: 'SubagentEnd',
  subagent_start: 'SubagentStart',
  subagent_status: 'SubagentStatus',
  tool_end: 'ToolEnd',
  tool_progress: 'ToolProgress',
  tool_start: 'ToolStart',
  permission_request: 'PermissionRequest',
  ask_user_request: 'AskUserRequest',
  workspace_permission_request: 'WorkspacePermissionRequest',
  subagent_permission_request: 'SubagentPermissionRequest',
  plan_approval_request: 'PlanApprovalRequest',
  goal_proposed: 'GoalProposed',
  // The unknown blocking request of the `unknown-request` scenario.
  hologram_request: 'HologramRequest',
};

/** Tags a client sends, by either spelling, to their snake_case form. */
const CLIENT_TAGS: ReadonlyMap<string, string> = new Map(
  [
    ['ping', 'Ping'],
    ['new_session', 'NewSession'],
    ['attach_session', 'AttachSession'],
    ['prompt', 'Prompt'],
    ['submit_prompt', 'SubmitPrompt'],
    ['read_prompt_receipt', 'ReadPromptReceipt'],
    ['cancel', 'Cancel'],
    ['permission_response', 'PermissionResponse'],
    ['ask_user_response', 'AskUserResponse'],
    ['plan_approval_response', 'PlanApprovalResponse'],
    ['goal_response', 'GoalResponse'],
  ].flatMap(([snake, pascal]) => [
    [snake!, snake!],
    [pascal!, snake!],
  ]),
);

/**
 * The text of a message the fake sends, its tag spelled as `tagCase` asks. A tag not in the table (a
 * scenario's own `unknown` event) is sent as the scenario wrote it.
 */
export function encodeFakeMessage(message: FakeMewMessage, tagCase: FakeMewTagCase): string {
  const type = tagCase === 'PascalCase' ? (SERVER_TAGS[message.type] ?? message.type) : message.type;
  return JSON.stringify({ ...message, type });
}

/** The snake_case form of a client's tag in either spelling; undefined for a tag no client sends. */
export function clientTag(value: unknown): string | undefined {
  return typeof value === 'string' ? CLIENT_TAGS.get(value) : undefined;
}

/**
 * A client's message as the fake reads it: a JSON object with a string tag (a tag no client sends is kept
 * as written, so the daemon can say it does not know it); undefined when it is not.
 */
export function readClientMessage(text: string): FakeMewMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(value) || typeof value['type'] !== 'string') return undefined;
  return { ...value, type: clientTag(value['type']) ?? value['type'] };
}
