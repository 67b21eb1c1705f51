// The approval and question requests a driver hands to the caller's `approve` and `answerQuestion` callbacks.
import type { JsonObject, JsonValue } from '../wire/index.js';

/** The approval kinds seed 002 documents. Any other kind is unknown and never approved by default. */
export const KNOWN_APPROVAL_KINDS = ['shell_command', 'tool_action', 'file_write', 'route_approval'] as const;

/** Fields common to every approval request handed to `approve`. */
export interface ApprovalBase {
  /**
   * Which protocol asked: the name the run was started with (`RunOptions.protocol`, `ConnectOptions.protocol`),
   * one of the registry's protocols that ask for approvals (`fuseraft`, `fuseraft-bridge`, `fuseraft-serve`,
   * `mew`, `codex`, `claude-code`, `acp` today). The registry (`src/api/registry.ts`) is its source of truth: a driver fills it from its
   * run's options, so a protocol added there needs no edit here.
   */
  protocol: string;
  /** Every field of the `approval_request` line except `type`, as fuseraft sent it (untrusted). */
  fields: JsonObject;
}

/** `shell_command`: the agent wants to run `command`. */
export interface ShellCommandApproval extends ApprovalBase {
  kind: 'shell_command';
  known: true;
  command: string;
}

/** `tool_action`: a mutating tool action of a plugin. */
export interface ToolActionApproval extends ApprovalBase {
  kind: 'tool_action';
  known: true;
  plugin: string;
  action: string;
  detail: string;
}

/** `file_write`: a plugin wants to write `path` (render `oldContent` -> `newContent` as a diff). */
export interface FileWriteApproval extends ApprovalBase {
  kind: 'file_write';
  known: true;
  plugin: string;
  action: string;
  path: string;
  oldContent: string | null;
  newContent: string | null;
}

/** `route_approval` (bridge): an agent handoff that needs a human. */
export interface RouteApproval extends ApprovalBase {
  kind: 'route_approval';
  known: true;
  keyword: string;
  sourceAgent: string;
  targetAgent: string;
}

/** `tool_permission` (mew's `permission_request`, Claude Code's `can_use_tool` of a tool other than Bash): the agent wants to run tool `toolName` with `input`. */
export interface ToolPermissionApproval extends ApprovalBase {
  kind: 'tool_permission';
  known: true;
  /** mew's `request_id` (an integer id of an older build in decimal), Claude Code's `request_id`: the response names it as sent. */
  requestId: string;
  toolName: string;
  /** The tool's input as the agent sent it (untrusted); null when absent. */
  input: JsonValue;
}

/** `workspace_permission` (mew's `workspace_permission_request`): the agent wants to use `path`, outside its workspace. */
export interface WorkspacePermissionApproval extends ApprovalBase {
  kind: 'workspace_permission';
  known: true;
  /** mew's `request_id` (as for {@link ToolPermissionApproval}). */
  requestId: string;
  path: string;
}

/** `subagent_permission` (mew's `subagent_permission_request`): a subagent (started by the call `parentCallId`) wants to run `toolName`. */
export interface SubagentPermissionApproval extends ApprovalBase {
  kind: 'subagent_permission';
  known: true;
  requestId: string;
  parentCallId: string;
  toolName: string;
  /** The tool's input as mew sent it (untrusted); null when absent. */
  input: JsonValue;
}

/** `plan_approval` (mew's `plan_approval_request`): the agent wrote a plan (`planMarkdown`, saved at `planPath`) and waits for it to be approved. */
export interface PlanApproval extends ApprovalBase {
  kind: 'plan_approval';
  known: true;
  requestId: string;
  callId: string;
  planPath: string;
  planMarkdown: string;
  persona: string;
}

/** `goal_proposal` (mew's `goal_proposed`): the agent proposes a goal; once accepted it keeps working until it is met. */
export interface GoalProposalApproval extends ApprovalBase {
  kind: 'goal_proposal';
  known: true;
  requestId: string;
  callId: string;
  objective: string;
}

/** One file of a {@link FileChangeApproval}: its path and what the patch does to it (`add`, `delete`, `update`; `movePath` when an update moves it). */
export interface FileChangeEntry {
  path: string;
  kind: string;
  movePath?: string;
  /** The change as a unified diff (untrusted); empty when the agent sent none. */
  diff: string;
}

/** `file_change` (Codex's `item/fileChange/requestApproval`): the agent wants to apply a patch to `changes`. */
export interface FileChangeApproval extends ApprovalBase {
  kind: 'file_change';
  known: true;
  /** The files the patch touches, as the agent announced them before asking. */
  changes: FileChangeEntry[];
  /** Why the agent asks (extra write access, say), when it says; null otherwise. */
  reason: string | null;
}

/** One option of a {@link ToolCallApproval}, as the agent offered it. */
export interface PermissionOption {
  optionId: string;
  name: string;
  /** ACP's `PermissionOptionKind`: `allow_once`, `allow_always`, `reject_once`, `reject_always`. */
  kind: string;
}

/**
 * `tool_call` (an ACP agent's `session/request_permission`): the agent wants to run the tool call `toolCallId`.
 * Approved, subvisor selects the `allow_once` option (`allow_always` when that is the only one); denied, the
 * `reject_once` option (the outcome `cancelled` when none is offered).
 */
export interface ToolCallApproval extends ApprovalBase {
  kind: 'tool_call';
  known: true;
  toolCallId: string;
  /** What the agent shows a person (Gemini CLI 0.61.0: the command, or the file and what is done to it). */
  title: string;
  /** ACP's `ToolKind`: `read`, `edit`, `delete`, `move`, `search`, `execute`, `think`, `fetch`, `switch_mode`, `other`. */
  toolKind: string;
  /** The tool's input as the agent sent it (untrusted); null when absent (Gemini CLI 0.61.0 sends none). */
  rawInput: JsonValue;
  options: PermissionOption[];
}

/**
 * A kind this version of subvisor does not know, or a known kind whose fields are not what seed 002
 * documents (a `shell_command` without a string `command` is not a request anyone can judge). Only
 * the answer `'approve-unknown-kind'` approves it.
 */
export interface UnknownApproval extends ApprovalBase {
  kind: string;
  known: false;
}

/** One `approval_request`, as `approve` receives it. Narrow on `known` and `kind`. */
export type ApprovalRequest =
  | ShellCommandApproval
  | ToolActionApproval
  | FileWriteApproval
  | RouteApproval
  | ToolPermissionApproval
  | WorkspacePermissionApproval
  | SubagentPermissionApproval
  | PlanApproval
  | GoalProposalApproval
  | FileChangeApproval
  | ToolCallApproval
  | UnknownApproval;

/**
 * What `approve` returns (or its promise resolves to).
 * - `true`: approve a known kind. For an unknown kind `true` counts as a denial: fuseraft's rule is
 *   that a client never auto-approves a kind it does not recognise, and a callback written for the
 *   four known kinds must not approve a fifth by accident.
 * - `'approve-unknown-kind'`: approve, whatever the kind: the explicit opt-in of a callback that
 *   inspected `request.fields` itself.
 * - `false` (or anything else, a throw, a rejection): deny.
 */
export type ApprovalAnswer = boolean | 'approve-unknown-kind';

/** The `approve` option: called once per `approval_request`, one at a time, in order. */
export type ApproveCallback = (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>;

/** One `question` (repl only, and only when `answerQuestion` is given). */
export interface QuestionRequest {
  question: string;
  options: string[];
  allowOther: boolean;
  /** Every field of the `question` line except `type`, as sent (untrusted). */
  fields: JsonObject;
}

/** The `answerQuestion` option: the answer text, or null to skip. Anything else (a throw too) skips. */
export type AnswerQuestionCallback = (question: QuestionRequest) => string | null | Promise<string | null>;
