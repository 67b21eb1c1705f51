// Codex's requests to the client (approvals, questions, permissions, elicitations, dynamic tools) on the shared request desk: each answered once, by the caller's callback or the safe default, never left waiting.
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { AnswerQuestionCallback, ApprovalRequest, FileChangeEntry, QuestionRequest } from '../../protocol/requests.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import { requestKey } from '../shared/jsonrpc/message.js';
import type { JsonRpcId } from '../shared/jsonrpc/message.js';
import type { Reply, RequestHandler } from '../shared/jsonrpc/peer.js';
import { RequestDesk } from '../shared/request-desk.js';
import type { DecidedBy, DeskRequest } from '../shared/request-desk.js';
import { acceptApproval, callbackError, fieldsOf } from '../shared/requests.js';
import type { ApprovalOptions } from '../shared/requests.js';

export interface CodexRequestOptions extends ApprovalOptions {
  answerQuestion?: AnswerQuestionCallback | undefined;
}

export interface CodexRequestOutput {
  /** Publishes an event. */
  report(draft: RunEventDraftOf<'info'>): void;
  /** The files a `fileChange` item announced before its approval was asked (`item/started`). */
  fileChanges(itemId: string): JsonValue | undefined;
}

/** An approval's verdict, or a question's answers by question id (undefined: the safe default). */
type Answer = boolean | Record<string, string>;

/** What is answered to a request of each kind, given whether it was approved and whether the run is ending. */
interface Pending {
  /** The request as the caller's callback sees it (approvals), or the questions (requestUserInput). */
  approval?: ApprovalRequest;
  questions?: Array<{ id: string; secret: boolean; request: QuestionRequest }>;
  body(answer: Answer | undefined, decidedBy: DecidedBy): JsonValue;
}

/**
 * The server requests Codex's app-server sends (0.169.0's `ServerRequest`), each answered exactly once:
 * - `item/commandExecution/requestApproval` and `item/fileChange/requestApproval` go to `approve`
 *   (`shell_command`, `file_change`); approved: `{decision: "accept"}`, denied (also with no `approve`):
 *   `"decline"`, which lets the turn go on without it; when the run is ending: `"cancel"`.
 * - `item/permissions/requestApproval` goes to `approve` as the unknown kind `permissions`: only
 *   `'approve-unknown-kind'` grants what it asks (for the turn); otherwise nothing is granted.
 * - `item/tool/requestUserInput` goes to `answerQuestion`, one question at a time; a null (or no callback)
 *   leaves that question unanswered.
 * - `mcpServer/elicitation/request` is declined unasked (subvisor cannot fill an MCP server's form), and
 *   `item/tool/call` answers that subvisor offers no dynamic tools.
 * Any other method is answered -32601 by the JSON-RPC peer. `serverRequest/resolved` withdraws a request not
 * answered yet (Codex cleared it: its turn ended or was interrupted): it gets no answer.
 */
export class CodexRequests {
  readonly #options: CodexRequestOptions;
  readonly #out: CodexRequestOutput;
  readonly #desk = new RequestDesk<Answer>();

  constructor(options: CodexRequestOptions, out: CodexRequestOutput) {
    this.#options = options;
    this.#out = out;
  }

  /** Requests received and not answered yet. */
  get waiting(): number {
    return this.#desk.waiting;
  }

  /** The peer's handlers, by method. */
  handlers(): Record<string, RequestHandler> {
    return {
      'item/commandExecution/requestApproval': (params, reply) => this.#take(reply, this.#commandApproval(objectOf(params))),
      'item/fileChange/requestApproval': (params, reply) => this.#take(reply, this.#fileChangeApproval(objectOf(params))),
      'item/permissions/requestApproval': (params, reply) => this.#take(reply, this.#permissions(objectOf(params))),
      'item/tool/requestUserInput': (params, reply) => this.#take(reply, this.#questions(objectOf(params))),
      'mcpServer/elicitation/request': (params, reply) => this.#unasked(reply, params, 'an MCP server asks for input: declined (subvisor cannot fill its form)', { action: 'decline', content: null, _meta: null }),
      'item/tool/call': (params, reply) => this.#unasked(reply, params, 'a dynamic tool was called: subvisor offers none', { contentItems: [{ type: 'inputText', text: 'No dynamic tools are offered by this client.' }], success: false }),
    };
  }

  /** `serverRequest/resolved {requestId}`: true when it withdrew a request not answered yet. */
  resolved(requestId: JsonValue | undefined): boolean {
    return isId(requestId) && this.#desk.withdraw(requestKey(requestId));
  }

  /** The run is ending: every open request gets its safe default now (`cancel` for approvals), as do later ones. */
  shutDown(): void {
    this.#desk.shutDown();
  }

  #take(reply: Reply, pending: Pending): void {
    const { approval, questions } = pending;
    const what = approval !== undefined ? `approval requested: ${approval.kind}${approval.known ? '' : ' (unknown kind)'}` : 'question asked';
    this.#out.report({ type: 'info', nativeType: reply.method, summary: what, requestId: String(reply.id) });
    const respond = (answer: Answer | undefined, decidedBy: DecidedBy, error?: unknown) => {
      reply.result(pending.body(answer, decidedBy));
      this.#answered(reply, pending, answer, decidedBy, error);
    };
    const request: DeskRequest<Answer> = { key: reply.key, ask: undefined, accept: () => ({ answer: undefined }), respond, withdrawn: () => this.#withdrawn(reply) };
    if (approval !== undefined) {
      const approve = this.#options.approve;
      this.#desk.add({ ...request, ask: approve === undefined ? undefined : () => approve(approval), accept: (value) => acceptApproval(approval, value) });
      return;
    }
    const answerQuestion = this.#options.answerQuestion;
    this.#desk.add({
      ...request,
      invalid: questions === undefined || questions.length === 0,
      // One question after another; a null leaves that one unanswered; a request settled meanwhile stops asking.
      ask: answerQuestion === undefined ? undefined : async (current) => {
        const answers: Record<string, string> = {};
        for (const question of questions!) {
          const value: unknown = await answerQuestion(question.request);
          if (typeof value === 'string') answers[question.id] = value;
          else if (value !== null) throw new TypeError('answerQuestion returned neither a string nor null');
          if (!current()) break;
        }
        return answers;
      },
      accept: (value) => ({ answer: isObject(value) ? (value as Record<string, string>) : undefined }),
    });
  }

  #commandApproval(params: JsonObject): Pending {
    const command = stringField(params, 'command');
    const kind = stringField(params, 'kind') ?? 'command';
    const base = { protocol: this.#options.protocol, fields: fieldsOf(params) };
    // A command to run (`kind: "command"`, the default of older servers); input to a running terminal or network access is another kind.
    const approval: ApprovalRequest =
      kind === 'command' && command !== undefined
        ? { ...base, kind: 'shell_command', known: true, command }
        : { ...base, kind: params['networkApprovalContext'] !== undefined && params['networkApprovalContext'] !== null ? 'network_access' : `command_${kind}`, known: false };
    return { approval, body: decisionBody };
  }

  #fileChangeApproval(params: JsonObject): Pending {
    const itemId = stringField(params, 'itemId');
    const changes = changesOf(itemId === undefined ? undefined : this.#out.fileChanges(itemId));
    const base = { protocol: this.#options.protocol, fields: fieldsOf(params) };
    // A patch whose files were never announced cannot be judged: an unknown kind (approved only explicitly).
    const approval: ApprovalRequest =
      changes.length > 0 ? { ...base, kind: 'file_change', known: true, changes, reason: stringField(params, 'reason') ?? null } : { ...base, kind: 'file_change', known: false };
    return { approval, body: decisionBody };
  }

  #permissions(params: JsonObject): Pending {
    const approval: ApprovalRequest = { protocol: this.#options.protocol, fields: fieldsOf(params), kind: 'permissions', known: false };
    const requested = isObject(params['permissions']) ? params['permissions'] : {};
    return {
      approval,
      // Only the granted subset matters to Codex: nothing, unless approved; then what was asked, for this turn.
      body: (answer) => ({ permissions: answer === true ? grantedOf(requested) : {}, scope: 'turn' }),
    };
  }

  #questions(params: JsonObject): Pending {
    const list = Array.isArray(params['questions']) ? params['questions'] : [];
    const questions: NonNullable<Pending['questions']> = [];
    for (const entry of list) {
      if (!isObject(entry) || typeof entry['id'] !== 'string' || typeof entry['question'] !== 'string') continue;
      const options = Array.isArray(entry['options']) ? entry['options'].filter(isObject).map((option) => stringField(option, 'label')).filter((label): label is string => label !== undefined) : [];
      questions.push({ id: entry['id'], secret: entry['isSecret'] === true, request: { question: entry['question'], options, allowOther: entry['isOther'] === true, fields: fieldsOf(entry) } });
    }
    return {
      questions,
      body: (answer) => ({ answers: Object.fromEntries(Object.entries(isObject(answer) ? answer : {}).map(([id, text]) => [id, { answers: [text] }])) }),
    };
  }

  /** A request answered by rule, without asking anyone. */
  #unasked(reply: Reply, params: JsonValue | undefined, summary: string, body: JsonValue): void {
    reply.result(body);
    const draft: RunEventDraftOf<'info'> = { type: 'info', nativeType: reply.method, summary, requestId: String(reply.id), decidedBy: 'policy' };
    if (isObject(params)) draft.extra = fieldsOf(params);
    this.#out.report(draft);
  }

  #answered(reply: Reply, pending: Pending, answer: Answer | undefined, decidedBy: DecidedBy, error: unknown): void {
    const by = decidedBy === 'callback' ? '' : ` (${decidedBy})`;
    const requestId = String(reply.id);
    if (pending.approval !== undefined) {
      const approved = answer === true;
      const kind = pending.approval.kind;
      this.#out.report({ type: 'info', nativeType: 'approval_response', summary: `${approved ? 'approved' : 'denied'} ${kind}${by}`, kind, requestId, approved, decidedBy, ...callbackError(error) });
      return;
    }
    const given = isObject(answer) ? Object.keys(answer).length : 0;
    // A secret question's answer is never repeated in an event.
    const shown = pending.questions?.length === 1 && given === 1 && pending.questions[0]!.secret === false ? { answer: Object.values(answer as Record<string, string>)[0]! } : {};
    const summary = given > 0 ? `question answered (${given} of ${pending.questions?.length ?? 0})` : `question left unanswered${by}`;
    this.#out.report({ type: 'info', nativeType: 'question_response', summary, requestId, answered: given > 0, decidedBy, ...shown, ...callbackError(error) });
  }

  #withdrawn(reply: Reply): void {
    this.#out.report({ type: 'info', nativeType: 'serverRequest/resolved', summary: 'codex withdrew the request before it was answered', requestId: String(reply.id) });
  }
}

/** An approval's answer: accept, decline, or cancel when the run is ending (which also interrupts Codex's turn). */
function decisionBody(answer: Answer | undefined, decidedBy: DecidedBy): JsonValue {
  return { decision: answer === true ? 'accept' : decidedBy === 'shutdown' ? 'cancel' : 'decline' };
}

/** The files of a `fileChange` item's `changes` (`[{path, kind: {type, move_path?}, diff}]`). */
function changesOf(value: JsonValue | undefined): FileChangeEntry[] {
  if (!Array.isArray(value)) return [];
  const changes: FileChangeEntry[] = [];
  for (const change of value) {
    if (!isObject(change) || typeof change['path'] !== 'string') continue;
    const kind = isObject(change['kind']) ? change['kind'] : {};
    const entry: FileChangeEntry = { path: change['path'], kind: stringField(kind, 'type') ?? 'unknown', diff: stringField(change, 'diff') ?? '' };
    const movePath = stringField(kind, 'move_path');
    if (movePath !== undefined) entry.movePath = movePath;
    changes.push(entry);
  }
  return changes;
}

/** What a permission request asked (`network`, `fileSystem`), as the grant: its non-null members. */
function grantedOf(requested: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(requested).filter(([name, value]) => (name === 'network' || name === 'fileSystem') && isObject(value)));
}

function objectOf(params: JsonValue | undefined): JsonObject {
  return isObject(params) ? params : {};
}

function isId(value: JsonValue | undefined): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}
