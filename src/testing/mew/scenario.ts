// The MewDaemonScenario type: what the fake mew daemon does with each submitted prompt, and how it misbehaves.
import type { JsonObject, JsonValue } from '../../wire/index.js';

/** One step of a turn. */
export type MewStep =
  /**
   * A text part, streamed as mew's providers stream one: `provider part_start {part: {type: "text", id,
   * message_id, session_id, text: ""}}`, `part_delta {part_id, field: "text", delta}` with `text` cut into
   * `chunks` (default 1), `ms` apart (default 0), then `part_end`.
   */
  | { text: string; chunks?: number; ms?: number }
  /** A reasoning part, streamed exactly like a text part (its deltas' field is `text` too): only `part.type` says `reasoning`. */
  | { thinking: string; chunks?: number; ms?: number }
  /**
   * The model's tool call (a `tool_call` part whose input streams as the field `arguments`), then
   * `tool_start {call_id, name}`, `tool_progress` with `progress` when given, `tool_end {call_id, success}` (default true).
   */
  | { tool: string; progress?: string; success?: boolean; ms?: number }
  /**
   * A `permission_request {request_id, tool_name, input}`, waiting for a `permission_response` from any
   * client (then `request_resolved` to all); an allowed tool then runs (tool_start/tool_end), a denied one
   * ends with a failed tool_end. `resolvedByOther`: another client settles it after that many ms (the
   * fake sends `request_resolved` and goes on as allowed) whatever this client answers.
   */
  | { permission: string; input?: JsonValue; resolvedByOther?: number }
  /** An `ask_user_request` with these questions (mew's `Question {prompt, options}`), waiting for an `ask_user_response`. */
  | { ask: string[] }
  /** A `workspace_permission_request {request_id, path}`, answered by `permission_response`; the turn then says `access to <path> allowed|denied. `. */
  | { workspacePermission: string }
  /** A `subagent_permission_request {request_id, parent_call_id, tool_name, input}`, answered by `permission_response`; the turn says `subagent <tool> allowed|denied. `. */
  | { subagentPermission: string; input?: JsonValue }
  /**
   * A `plan_approval_request {request_id, call_id, plan_path, plan_markdown, persona}` (this markdown),
   * answered by `plan_approval_response {approved, feedback?}`; the turn says `plan approved. ` or `plan not approved. `.
   */
  | { planApproval: string; planPath?: string; persona?: string }
  /** A `goal_proposed {request_id, call_id, objective}`, answered by `goal_response {accepted}`; the turn says `goal accepted. ` or `goal rejected. `. */
  | { goal: string }
  /**
   * A request of a kind no client response is defined for (`{type, request_id, ...fields}`): it waits
   * until `resolvedByOther` ms pass (another client settles it: `request_resolved`), or forever.
   */
  | { blockingRequest: string; fields?: JsonObject; resolvedByOther?: number }
  /** `subagent_start`, `subagent_status`, `subagent_end` of a subagent of this name. */
  | { subagent: string }
  /** `provider retry_wait {attempt, max_attempts, delay_secs, reason}` (this attempt; 5 at most; `delaySecs`, default 1). */
  | { retry: number; delaySecs?: number }
  /** A `provider message_end {finish, usage, cost}` mid-turn (one per LLM response; the turn's end sends one too). */
  | { messageEnd: { usage?: JsonObject; cost?: number; finish?: string } }
  /** Waits `ms`. */
  | { pause: number }
  /** Sends exactly this text (malformed JSON, say). */
  | { raw: string }
  /** Sends a message of a type mew does not have (default `mystery_event`), with these fields. */
  | { unknown?: string; fields?: JsonObject }
  /** Drops the connection abruptly (no close frame), as a crashed daemon or a cut network. */
  | { drop: true }
  /**
   * A notice of another session of the daemon, which mew broadcasts to every client: `idle`
   * (`session_activity_changed {activity: "idle"}`), `usage` (`session_usage_changed {usage, cost}`), or
   * `turn_complete` / `turn_failed` (`session_alert {kind}`), each carrying that session's `session_id`.
   */
  | { otherSession: 'idle' | 'usage' | 'turn_complete' | 'turn_failed' };

/** What the daemon does with one accepted submission. */
export interface MewTurn {
  steps?: MewStep[];
  /** The receipt rejects the submission with this message (no turn runs). */
  rejected?: string;
  /** The turn ends with `error_event {message}` and `session_alert {turn_failed}`. */
  fail?: string;
  /** How the end is announced: `alert` (session_alert), `idle` (session_activity_changed), or `both` (default: idle, then the alert). */
  end?: 'alert' | 'idle' | 'both';
  /** The usage of the turn's last `message_end` (mew's `Tokens`; default input 100, output characters / 4) and its cost (default 0.001). */
  usage?: JsonObject;
  cost?: number;
}

/**
 * A script for the fake mew daemon. Each accepted `submit_prompt` runs the next turn of `turns` (the
 * last one repeats; default: a turn answering `Done.`).
 */
export interface MewDaemonScenario {
  name?: string;
  turns?: MewTurn[];
  /** `pong.protocol_version` (default 3). Below 3 is an old daemon a client must refuse. */
  protocolVersion?: number;
  /** `pong.version` (default `0.0.0-fake`). */
  version?: string;
  /** How the daemon spells its tags: mew's own `snake_case` (default) or the seed example's `PascalCase`. */
  wireCase?: 'snake_case' | 'PascalCase';
  /**
   * How request ids are typed: `string` (default, the newer builds) or `integer` (the older builds'
   * `request_id: u64`, counted from 1). A response whose id is of the other kind is refused with
   * `error {message}` and the request stays pending, as mew's decoding refuses it.
   */
  requestIds?: 'string' | 'integer';
  /** Answers this many pings, then none (the connection stays open): a hung daemon. Default: every ping. */
  pongs?: number;
  /**
   * The receipt of the n-th submission (1-based) is lost: the connection drops instead. `status` is what a
   * later `read_prompt_receipt` says: `rejected` (with `message`), `unknown` (the daemon never took it), or
   * `accepted` (its turn ran while the client was away).
   */
  loseReceipt?: { submission: number; status: 'accepted' | 'rejected' | 'unknown'; message?: string };
  /** Messages in `session_history` on attach, before the session's own (default: none). The fake keeps each prompt and each turn's parts there as `mew_message::Message`s. */
  history?: JsonValue[];
  /** `cancel` is read and ignored: a running turn goes on (a daemon that hangs). */
  ignoreCancel?: boolean;
}

/** The default turn: one text answer. */
export const DEFAULT_MEW_TURN: MewTurn = { steps: [{ text: 'Done.' }] };

/** The turn the n-th accepted submission (1-based) runs. */
export function turnOf(scenario: MewDaemonScenario, n: number): MewTurn {
  const turns = scenario.turns ?? [];
  if (turns.length === 0) return DEFAULT_MEW_TURN;
  return turns[Math.min(n, turns.length) - 1]!;
}
