// An ACP agent's session/request_permission on the shared request desk: to `approve` as a `tool_call` approval, answered with one of the agent's options (or cancelled), exactly once, never left waiting.
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { ApprovalRequest, PermissionOption } from '../../protocol/requests.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import { requestKey } from '../shared/jsonrpc/message.js';
import type { JsonRpcId } from '../shared/jsonrpc/message.js';
import type { Reply, RequestHandler } from '../shared/jsonrpc/peer.js';
import { RequestDesk } from '../shared/request-desk.js';
import type { DecidedBy } from '../shared/request-desk.js';
import { acceptApproval, callbackError, fieldsOf } from '../shared/requests.js';
import type { ApprovalOptions } from '../shared/requests.js';

export interface PermissionOutput {
  report(draft: RunEventDraftOf<'info'>): void;
  /** The tool call a request names (`toolCall`), announced before it is decided: it may be the first the run hears of it. */
  announce(toolCall: JsonObject): void;
  /** A tool call that was denied (or cancelled): it will not run. */
  denied(toolCallId: string, why: string): void;
}

/**
 * `session/request_permission {sessionId, toolCall, options}` (ACP v1): each request goes to `approve` as a
 * `tool_call` approval (an unknown kind when its tool call or options cannot be read) and gets one answer:
 * approved, the `allow_once` option (`allow_always` when it is the only allow); denied (also with no `approve`),
 * the `reject_once` option; `{outcome: "cancelled"}` when the run is ending (ACP's rule after `session/cancel`)
 * or the agent offered no such option. `$/cancel_request` withdraws a request not answered yet.
 */
export class AcpPermissions {
  readonly #options: ApprovalOptions;
  readonly #out: PermissionOutput;
  readonly #desk = new RequestDesk<boolean>();

  constructor(options: ApprovalOptions, out: PermissionOutput) {
    this.#options = options;
    this.#out = out;
  }

  /** The peer's handlers, by method (every other client method, `fs/*` and `terminal/*` included, is answered -32601). */
  handlers(): Record<string, RequestHandler> {
    return { 'session/request_permission': (params, reply) => this.#take(reply, isObject(params) ? params : {}) };
  }

  /** `$/cancel_request {requestId}`: true when it withdrew a request not answered yet. */
  withdraw(requestId: JsonValue | undefined): boolean {
    return (typeof requestId === 'string' || typeof requestId === 'number') && this.#desk.withdraw(requestKey(requestId as JsonRpcId));
  }

  /** The turn is cancelled or the run is ending: every open request is answered `cancelled` now, as are later ones. */
  shutDown(): void {
    this.#desk.shutDown();
  }

  #take(reply: Reply, params: JsonObject): void {
    const toolCall = isObject(params['toolCall']) ? params['toolCall'] : undefined;
    const options = optionsOf(params['options']);
    const approval = approvalOf(this.#options.protocol, params, toolCall, options);
    this.#out.report({ type: 'info', nativeType: reply.method, summary: `approval requested: ${approval.kind}${approval.known ? '' : ' (unknown kind)'}`, requestId: String(reply.id) });
    if (toolCall !== undefined && typeof toolCall['toolCallId'] === 'string') this.#out.announce(toolCall);
    const approve = this.#options.approve;
    this.#desk.add({
      key: reply.key,
      ask: approve === undefined ? undefined : () => approve(approval),
      accept: (value) => acceptApproval(approval, value),
      respond: (answer, decidedBy, error) => {
        const chosen = choose(options, answer === true, decidedBy);
        reply.result({ outcome: chosen === undefined ? { outcome: 'cancelled' } : { outcome: 'selected', optionId: chosen.optionId } });
        this.#answered(reply, approval, answer === true && chosen !== undefined, decidedBy, chosen, error);
        const toolCallId = toolCall === undefined ? undefined : stringField(toolCall, 'toolCallId');
        if (toolCallId !== undefined && !(answer === true && chosen !== undefined)) this.#out.denied(toolCallId, chosen === undefined ? 'cancelled' : `denied (${chosen.kind})`);
      },
      withdrawn: () => this.#out.report({ type: 'info', nativeType: '$/cancel_request', summary: 'the agent withdrew the request before it was answered', requestId: String(reply.id) }),
    });
  }

  #answered(reply: Reply, approval: ApprovalRequest, approved: boolean, decidedBy: DecidedBy, chosen: PermissionOption | undefined, error: unknown): void {
    const by = decidedBy === 'callback' ? '' : ` (${decidedBy})`;
    const draft: RunEventDraftOf<'info'> = {
      type: 'info',
      nativeType: 'approval_response',
      summary: `${approved ? 'approved' : 'denied'} ${approval.kind}${by}: ${chosen === undefined ? 'cancelled' : chosen.kind}`,
      kind: approval.kind,
      requestId: String(reply.id),
      approved,
      decidedBy,
      ...callbackError(error),
    };
    this.#out.report(draft);
  }
}

/** The option an answer selects: an allow (once before always) when approved, else `reject_once`; undefined: `cancelled`. */
function choose(options: readonly PermissionOption[], approved: boolean, decidedBy: DecidedBy): PermissionOption | undefined {
  if (decidedBy === 'shutdown') return undefined;
  const kinds = approved ? ['allow_once', 'allow_always'] : ['reject_once'];
  for (const kind of kinds) {
    const option = options.find((candidate) => candidate.kind === kind);
    if (option !== undefined) return option;
  }
  return undefined;
}

function optionsOf(value: JsonValue | undefined): PermissionOption[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((option) =>
    isObject(option) && typeof option['optionId'] === 'string' && typeof option['kind'] === 'string'
      ? [{ optionId: option['optionId'], name: stringField(option, 'name') ?? option['optionId'], kind: option['kind'] }]
      : [],
  );
}

function approvalOf(protocol: string, params: JsonObject, toolCall: JsonObject | undefined, options: PermissionOption[]): ApprovalRequest {
  const base = { protocol, fields: fieldsOf(params) };
  const toolCallId = toolCall === undefined ? undefined : stringField(toolCall, 'toolCallId');
  if (toolCall === undefined || toolCallId === undefined || options.length === 0) return { ...base, kind: 'tool_call', known: false };
  return {
    ...base,
    kind: 'tool_call',
    known: true,
    toolCallId,
    title: stringField(toolCall, 'title') ?? '',
    toolKind: stringField(toolCall, 'kind') ?? 'other',
    rawInput: toolCall['rawInput'] ?? null,
    options,
  };
}
