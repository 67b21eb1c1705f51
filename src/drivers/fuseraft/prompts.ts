// The caller-facing approval and question types of fuseraft runs, and how a request becomes one.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { stringField } from './frames.js';
import type { Frame } from './frames.js';

/** The approval kinds seed 002 documents. Any other kind is unknown and never approved by default. */
export const KNOWN_APPROVAL_KINDS = ['shell_command', 'tool_action', 'file_write', 'route_approval'] as const;

/** Fields common to every approval request handed to `approve`. */
interface ApprovalBase {
  /** Which driver asked: the chat (`fuseraft`), the orchestration bridge (`fuseraft-bridge`), the fuseraft daemon (`fuseraft-serve`) or a mew daemon (`mew`). */
  protocol: 'fuseraft' | 'fuseraft-bridge' | 'fuseraft-serve' | 'mew';
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

/** `tool_permission` (mew's `permission_request`): the agent wants to run tool `toolName` with `input`. */
export interface ToolPermissionApproval extends ApprovalBase {
  kind: 'tool_permission';
  known: true;
  /** mew's `request_id` (an integer id of an older build in decimal): the response names it as mew sent it. */
  requestId: string;
  toolName: string;
  /** The tool's input as mew sent it (untrusted); null when absent. */
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

/** The frame's fields without `type`, copied so the caller cannot change what the driver keeps. */
export function fieldsOf(frame: Frame): JsonObject {
  const fields: JsonObject = {};
  for (const key of Object.keys(frame)) {
    if (key === 'type') continue;
    Object.defineProperty(fields, key, { value: frame[key], enumerable: true, writable: true, configurable: true });
  }
  return structuredClone(fields);
}

/** Builds the request `approve` receives. A known kind whose documented fields are missing is unknown. */
export function approvalRequestOf(frame: Frame, protocol: ApprovalBase['protocol']): ApprovalRequest {
  const fields = fieldsOf(frame);
  const kind = typeof frame['kind'] === 'string' ? frame['kind'] : '';
  const base = { protocol, fields };
  const str = (name: string) => stringField(frame, name);
  const nullableStr = (name: string): string | null | undefined => (frame[name] === null ? null : str(name));
  switch (kind) {
    case 'shell_command': {
      const command = str('command');
      if (command !== undefined) return { ...base, kind, known: true, command };
      break;
    }
    case 'tool_action': {
      const [plugin, action, detail] = [str('plugin'), str('action'), str('detail')];
      if (plugin !== undefined && action !== undefined && detail !== undefined) {
        return { ...base, kind, known: true, plugin, action, detail };
      }
      break;
    }
    case 'file_write': {
      const [plugin, action, path] = [str('plugin'), str('action'), str('path')];
      const [oldContent, newContent] = [nullableStr('oldContent'), nullableStr('newContent')];
      if (plugin !== undefined && action !== undefined && path !== undefined && oldContent !== undefined && newContent !== undefined) {
        return { ...base, kind, known: true, plugin, action, path, oldContent, newContent };
      }
      break;
    }
    case 'route_approval': {
      const [keyword, sourceAgent, targetAgent] = [str('keyword'), str('sourceAgent'), str('targetAgent')];
      if (keyword !== undefined && sourceAgent !== undefined && targetAgent !== undefined) {
        return { ...base, kind, known: true, keyword, sourceAgent, targetAgent };
      }
      break;
    }
  }
  return { ...base, kind, known: false };
}

/** Builds the request `answerQuestion` receives (non-string options are left out). */
export function questionRequestOf(frame: Frame): QuestionRequest {
  const options = Array.isArray(frame['options'])
    ? frame['options'].filter((option: JsonValue): option is string => typeof option === 'string')
    : [];
  return {
    question: stringField(frame, 'question') ?? '',
    options,
    allowOther: frame['allowOther'] === true,
    fields: fieldsOf(frame),
  };
}

/** Whether an `approve` answer approves `request` (see {@link ApprovalAnswer}). */
export function approves(request: ApprovalRequest, answer: unknown): boolean {
  if (answer === 'approve-unknown-kind') return true;
  return answer === true && request.known;
}
