// Claude Code's permission questions (`control_request` `can_use_tool`) on the shared request desk: each answered once, by `approve` or a denial, unless Claude Code withdraws it.
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { ApprovalRequest } from '../../protocol/requests.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import { RequestDesk } from '../shared/request-desk.js';
import type { DecidedBy } from '../shared/request-desk.js';
import { acceptApproval, callbackError, fieldsOf } from '../shared/requests.js';
import type { ApprovalOptions } from '../shared/requests.js';

export interface PermissionOutput {
  /** Writes one `control_response` (the answer to Claude Code's request `requestId`). */
  respond(requestId: string, response: JsonObject): void;
  /** Publishes a notice. */
  report(draft: RunEventDraftOf<'info'>): void;
}

/**
 * `can_use_tool {tool_name, input, tool_use_id, ...}` goes to `approve`: the Bash tool with a string `command` as
 * `shell_command`, any other tool as `tool_permission` (its name and input). Approved: `{behavior: "allow",
 * updatedInput}` (the input unchanged); denied (also with no `approve`, a callback that fails, the run ending):
 * `{behavior: "deny", message}`, which Claude Code hands the model as the tool's error and the turn goes on.
 * `control_cancel_request` withdraws a request not answered yet: it gets no answer.
 */
export class ClaudePermissions {
  readonly #options: ApprovalOptions;
  readonly #out: PermissionOutput;
  readonly #desk = new RequestDesk<boolean>();

  constructor(options: ApprovalOptions, out: PermissionOutput) {
    this.#options = options;
    this.#out = out;
  }

  /** A `can_use_tool` request (`request` is its `request` member). */
  take(requestId: string, request: JsonObject): void {
    const approval = approvalOf(this.#options.protocol, requestId, request);
    this.#out.report({ type: 'info', nativeType: 'can_use_tool', summary: `approval requested: ${approval.kind}`, requestId, kind: approval.kind });
    const approve = this.#options.approve;
    const input = isObject(request['input']) ? request['input'] : {};
    this.#desk.add({
      key: requestId,
      ask: approve === undefined ? undefined : () => approve(approval),
      accept: (value) => acceptApproval(approval, value),
      respond: (answer, decidedBy, error) => {
        const approved = answer === true;
        this.#out.respond(requestId, approved ? { behavior: 'allow', updatedInput: input } : { behavior: 'deny', message: denialOf(decidedBy) });
        const by = decidedBy === 'callback' ? '' : ` (${decidedBy})`;
        this.#out.report({ type: 'info', nativeType: 'approval_response', summary: `${approved ? 'approved' : 'denied'} ${approval.kind}${by}`, kind: approval.kind, requestId, approved, decidedBy, ...callbackError(error) });
      },
      withdrawn: () => this.#out.report({ type: 'info', nativeType: 'control_cancel_request', summary: 'claude withdrew the request before it was answered', requestId }),
    });
  }

  /** `control_cancel_request`: true when it withdrew a request not answered yet. */
  withdraw(requestId: string): boolean {
    return this.#desk.withdraw(requestId);
  }

  /** The run is ending: every open request is denied now, as are later ones. */
  shutDown(): void {
    this.#desk.shutDown();
  }
}

function approvalOf(protocol: string, requestId: string, request: JsonObject): ApprovalRequest {
  const fields = fieldsOf(request);
  const toolName = stringField(request, 'tool_name') ?? '';
  const input: JsonValue = request['input'] ?? null;
  const command = isObject(input) ? stringField(input, 'command') : undefined;
  if (toolName === 'Bash' && command !== undefined) return { protocol, fields, kind: 'shell_command', known: true, command };
  if (toolName === '') return { protocol, fields, kind: 'can_use_tool', known: false };
  return { protocol, fields, kind: 'tool_permission', known: true, requestId, toolName, input };
}

function denialOf(decidedBy: DecidedBy): string {
  switch (decidedBy) {
    case 'no-callback':
      return 'Denied: the supervising program approves no tool use (no approve callback).';
    case 'shutdown':
      return 'Denied: the run is ending.';
    default:
      return 'Denied by the supervising program.';
  }
}
