// mew's requests that wait for a client's answer: their ids, what the caller is asked, and the one response each gets.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { fieldsOf } from '../fuseraft/prompts.js';
import type { ApprovalRequest, QuestionRequest } from '../fuseraft/prompts.js';
import { isObject, stringField } from './messages.js';
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
      approval: ApprovalRequest;
      /** What is asked, for event summaries (`bash`, ...): never the request's content. */
      subject: string;
      /** The response: the approval, or mew's denial for `false`. */
      respond(approved: boolean): MewMessage;
    }
  | {
      ask: 'questions';
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
 * The requests subvisor answers, by tag, with the response mew-daemon's `handle_connection` takes for
 * each (mewcomputer/mew, crates/mew-daemon/src/lib.rs and crates/mew-protocol/src/lib.rs).
 */
const REQUESTS: Readonly<Record<string, (message: MewMessage, id: RequestId) => MewRequest>> = {
  permission_request: (message, id) => {
    const approval = toolPermissionOf(message, String(id));
    return { ask: 'approval', approval, subject: approval.known && approval.kind === 'tool_permission' ? approval.toolName : 'an unnamed tool', respond: (approved) => permissionResponse(id, approved) };
  },
  // AskUserResponse {request_id, answers}; `cancelled` (seed 004) closes the question unanswered, and older builds ignore it.
  ask_user_request: (message, id) => {
    const questions = Array.isArray(message['questions']) ? message['questions'].map(questionOf) : [];
    return {
      ask: 'questions',
      questions,
      subject: questions.length === 1 ? 'a question' : `${questions.length} questions`,
      respond: (answers) => ({ type: 'ask_user_response', request_id: id, answers: answers ?? [], cancelled: answers === undefined }),
    };
  },
};

/** The request a message is, when subvisor answers its kind; undefined for any other message. */
export function requestOf(message: MewMessage, id: RequestId): MewRequest | undefined {
  return Object.hasOwn(REQUESTS, message.type) ? REQUESTS[message.type]!(message, id) : undefined;
}

/** Whether a message is a request mew waits on a client's answer for (answerable or not). */
export function isRequest(message: MewMessage): boolean {
  return Object.hasOwn(REQUESTS, message.type);
}

function permissionResponse(id: RequestId, approved: boolean): MewMessage {
  return { type: 'permission_response', request_id: id, decision: approved ? ALLOW : DENY };
}

/** The request `approve` receives for a `permission_request`: known when it names its tool. */
function toolPermissionOf(message: MewMessage, requestId: string): ApprovalRequest {
  const fields = fieldsOf(message);
  const toolName = stringField(message, 'tool_name');
  if (toolName === undefined) return { protocol: 'mew', kind: 'tool_permission', known: false, fields };
  return { protocol: 'mew', kind: 'tool_permission', known: true, requestId, toolName, input: inputOf(message), fields };
}

/** A tool's input as mew sent it (a copy the caller cannot change); null when absent. */
function inputOf(message: MewMessage): JsonValue {
  return message['input'] === undefined ? null : structuredClone(message['input']);
}

/** One entry of `ask_user_request.questions`: a string, or an object with `question` (or `text`) and `options`. */
function questionOf(entry: JsonValue): QuestionRequest {
  if (typeof entry === 'string') return { question: entry, options: [], allowOther: true, fields: { question: entry } };
  const source: JsonObject = isObject(entry) ? entry : {};
  const options = Array.isArray(source['options']) ? source['options'].filter((option): option is string => typeof option === 'string') : [];
  const allowOther = source['allow_other'] ?? source['allowOther'];
  return {
    question: stringField(source, 'question') ?? stringField(source, 'text') ?? '',
    options,
    allowOther: typeof allowOther === 'boolean' ? allowOther : options.length === 0,
    fields: structuredClone(source),
  };
}
