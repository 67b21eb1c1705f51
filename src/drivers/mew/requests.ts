// mew's requests that wait for a client's answer: their ids, what the caller is asked, and the one response each gets.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { fieldsOf } from '../shared/requests.js';
import type { ApprovalRequest, QuestionRequest } from '../../protocol/requests.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import type { MewMessage } from './messages.js';

/** A request id as mew sent it: a string (newer builds) or an integer (older builds type it `u64`). */
export type RequestId = string | number;

/**
 * What a message's `request_id` allows. `key` names the request inside subvisor (a string id quoted,
 * so `"7"` and `7` differ); `undefined` when there is no id at all.
 */
export type IdReading =
  | { answerable: true; id: RequestId; key: string }
  | { answerable: false; key: string | undefined; problem: string };

/**
 * Reads a `request_id`. A response must carry the id exactly as it came (mew decodes it as its build
 * types it, and answers a response for an id it does not hold by nothing). A string is echoed as is, an
 * integer as the same number. An integer past 2^53 (mew's ids are u64) reached subvisor rounded by
 * JSON.parse: echoing it would name another request, so such a request cannot be answered, and neither
 * can one whose id is not an integer or a string.
 */
export function readRequestId(value: JsonValue | undefined): IdReading {
  if (typeof value === 'string') return { answerable: true, id: value, key: JSON.stringify(value) };
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value >= 0) return { answerable: true, id: value, key: String(value) };
    return { answerable: false, key: String(value), problem: `its request_id ${value} is not an integer JSON can carry exactly (mew's u64 ids are rounded past 2^53), so an answer could name another request` };
  }
  return { answerable: false, key: undefined, problem: 'it has no request_id (a string or an integer) to answer with' };
}

/** A request subvisor answers: what the caller is asked, and the response to send for an answer. */
export type MewRequest =
  | {
      ask: 'approval';
      /** The type of the response message (`permission_response`, `plan_approval_response`, `goal_response`). */
      responseType: string;
      approval: ApprovalRequest;
      /** What is asked, in a few words for event summaries (a tool's name, a path): never bulk content such as a plan or a tool's input. */
      subject: string;
      /** The response: the approval, or mew's denial for `false`. */
      respond(approved: boolean): MewMessage;
    }
  | {
      ask: 'questions';
      responseType: 'ask_user_response';
      questions: QuestionRequest[];
      subject: string;
      /** The response: the answers, or the question closed unanswered for `undefined`. */
      respond(answers: string[] | undefined): MewMessage;
    };

/**
 * mew-protocol's `PermissionDecision` is `allow_once | allow_session | deny`, `rename_all = "snake_case"`
 * in every build (also those whose message tags are PascalCase): any other value fails mew's decoding of
 * the whole `permission_response`, and the request stays pending. subvisor allows once.
 */
const ALLOW = 'allow_once';
const DENY = 'deny';

/**
 * The requests subvisor answers, by tag, each with the response mew takes for it and its denial. From
 * mewcomputer/mew: crates/mew-daemon/src/lib.rs (`translate_event` stores the responder of
 * `PermissionRequest`, `WorkspacePermissionRequest` and `SubagentPermissionRequest` alike in
 * `pending_permissions`, which `ClientMessage::PermissionResponse {request_id, decision}` settles;
 * `PlanApprovalRequest` in `pending_plan_approvals`, settled by `PlanApprovalResponse {request_id,
 * approved, feedback}`: not approved is `PlanDecision::ChangesRequested`; `GoalProposed` in
 * `pending_goal_proposals`, settled by `GoalResponse {request_id, accepted}`: not accepted is
 * `GoalDecision::Rejected`; `AskUser` in `pending_ask_user`, settled by `AskUserResponse {request_id,
 * answers}`), and crates/mew-protocol/src/lib.rs for the fields of each message.
 */
const REQUESTS: Readonly<Record<string, (message: MewMessage, id: RequestId, protocol: string) => MewRequest>> = {
  permission_request: (message, id, protocol) => {
    const toolName = stringField(message, 'tool_name');
    const approval = known(protocol, message, 'tool_permission', toolName !== undefined && { requestId: String(id), toolName, input: inputOf(message) });
    return permission(approval, id, toolName ?? 'an unnamed tool');
  },
  workspace_permission_request: (message, id, protocol) => {
    const path = stringField(message, 'path');
    return permission(known(protocol, message, 'workspace_permission', path !== undefined && { requestId: String(id), path }), id, `access to ${path ?? 'a path'}`);
  },
  subagent_permission_request: (message, id, protocol) => {
    const [parentCallId, toolName] = [stringField(message, 'parent_call_id'), stringField(message, 'tool_name')];
    const fields = parentCallId !== undefined && toolName !== undefined && { requestId: String(id), parentCallId, toolName, input: inputOf(message) };
    return permission(known(protocol, message, 'subagent_permission', fields), id, `${toolName ?? 'a tool'} for a subagent`);
  },
  plan_approval_request: (message, id, protocol) => {
    const [callId, planPath, planMarkdown, persona] = ['call_id', 'plan_path', 'plan_markdown', 'persona'].map((name) => stringField(message, name));
    const fields = callId !== undefined && planPath !== undefined && planMarkdown !== undefined && persona !== undefined && { requestId: String(id), callId, planPath, planMarkdown, persona };
    const approval = known(protocol, message, 'plan_approval', fields);
    return { ask: 'approval', responseType: 'plan_approval_response', approval, subject: 'a plan', respond: (approved) => ({ type: 'plan_approval_response', request_id: id, approved }) };
  },
  goal_proposed: (message, id, protocol) => {
    const [callId, objective] = [stringField(message, 'call_id'), stringField(message, 'objective')];
    const approval = known(protocol, message, 'goal_proposal', callId !== undefined && objective !== undefined && { requestId: String(id), callId, objective });
    return { ask: 'approval', responseType: 'goal_response', approval, subject: 'a goal', respond: (approved) => ({ type: 'goal_response', request_id: id, accepted: approved }) };
  },
  // AskUserResponse {request_id, answers}; `cancelled` (seed 004) closes the question unanswered, and older builds ignore it.
  ask_user_request: (message, id) => {
    const questions = Array.isArray(message['questions']) ? message['questions'].map(questionOf) : [];
    return {
      ask: 'questions',
      responseType: 'ask_user_response',
      questions,
      subject: questions.length === 1 ? 'a question' : `${questions.length} questions`,
      respond: (answers) => ({ type: 'ask_user_response', request_id: id, answers: answers ?? [], cancelled: answers === undefined }),
    };
  },
};

/** The request a message is, when subvisor answers its kind (`protocol`: the registered name `approve` sees); undefined for any other message. */
export function requestOf(message: MewMessage, id: RequestId, protocol: string): MewRequest | undefined {
  return Object.hasOwn(REQUESTS, message.type) ? REQUESTS[message.type]!(message, id, protocol) : undefined;
}

/**
 * Whether a message is a request mew waits on a client's answer for: a kind subvisor answers, or any
 * other whose tag ends in `_request` (`Request`) and that carries a `request_id`: newer mew builds add
 * such requests, and a client that ignores one leaves the agent waiting.
 */
export function isRequest(message: MewMessage): boolean {
  return Object.hasOwn(REQUESTS, message.type) || (message.type.endsWith('_request') && Object.hasOwn(message, 'request_id'));
}

/** An approval request of a known `kind` with its documented fields, or `known: false` when they are not all there (`false`). */
function known<K extends ApprovalRequest['kind'], F extends object>(protocol: string, message: MewMessage, kind: K, fields: F | false): ApprovalRequest {
  const base = { protocol, kind, fields: fieldsOf(message) };
  return (fields === false ? { ...base, known: false } : { ...base, ...fields, known: true }) as ApprovalRequest;
}

/** A request answered by `permission_response` (tool, workspace and subagent permissions share mew's `pending_permissions`). */
function permission(approval: ApprovalRequest, id: RequestId, subject: string): MewRequest {
  return { ask: 'approval', responseType: 'permission_response', approval, subject, respond: (approved) => ({ type: 'permission_response', request_id: id, decision: approved ? ALLOW : DENY }) };
}

/** A tool's input as mew sent it (a copy the caller cannot change); null when absent. */
function inputOf(message: MewMessage): JsonValue {
  return message['input'] === undefined ? null : structuredClone(message['input']);
}

/**
 * One entry of `ask_user_request.questions`: mew's `Question {prompt, options: [{label, description}]}`,
 * or (read leniently) a string, or an object with `question` / `text` and string options.
 */
function questionOf(entry: JsonValue): QuestionRequest {
  if (typeof entry === 'string') return { question: entry, options: [], allowOther: true, fields: { question: entry } };
  const source: JsonObject = isObject(entry) ? entry : {};
  const options = Array.isArray(source['options']) ? source['options'].flatMap(optionLabel) : [];
  const allowOther = source['allow_other'] ?? source['allowOther'];
  return {
    question: stringField(source, 'prompt') ?? stringField(source, 'question') ?? stringField(source, 'text') ?? '',
    options,
    allowOther: typeof allowOther === 'boolean' ? allowOther : options.length === 0,
    fields: structuredClone(source),
  };
}

/** An option's text: a string, or mew's `QuestionOption {label, description}`. */
function optionLabel(option: JsonValue): string[] {
  if (typeof option === 'string') return [option];
  const label = isObject(option) ? stringField(option, 'label') : undefined;
  return label === undefined ? [] : [label];
}
