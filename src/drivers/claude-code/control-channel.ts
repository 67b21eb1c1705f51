// Claude Code's control channel on stdio: subvisor's requests (initialize, interrupt) correlated by id, Claude Code's own (permission questions to the desk, the rest refused), withdrawals, and a request too long to read.
import type { ApproveCallback } from '../../protocol/requests.js';
import type { JsonObject } from '../../wire/index.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import type { FrameRejection, TypedFrame } from '../shared/json-line.js';
import { PendingRequests } from '../shared/pending-requests.js';
import type { PendingFailure } from '../shared/pending-requests.js';
import { ClaudePermissions } from './permissions.js';
import type { StdioSessionFacts, StdioSessionIo } from '../shared/stdio/session-io.js';

/** How many of Claude Code's answered request ids are kept to recognise their echoes. */
const ANSWERED_KEPT = 256;

/** Where the answer to one of subvisor's requests goes: its `response` member, or why there is none. */
export interface ControlHandlers {
  settled(response: JsonObject): void;
  failed(failure: PendingFailure): void;
}

/**
 * subvisor's `control_request`s carry ids `subvisor-1`, `subvisor-2`...; each ends once, by its
 * `control_response` (`subtype: "error"` fails it), a timeout, or the process's exit. Claude Code's own requests
 * are answered exactly once: `can_use_tool` by the permission desk, any other subtype (`hook_callback`,
 * `mcp_message`: subvisor registers no hooks and no SDK MCP servers) with an error response.
 */
export class ClaudeControls {
  readonly #io: StdioSessionIo;
  readonly #facts: StdioSessionFacts;
  readonly #pending: PendingRequests<JsonObject>;
  readonly #permissions: ClaudePermissions;
  #ids = 0;
  /**
   * Claude Code's own requests subvisor answered: with `--replay-user-messages`, 2.1.328 echoes each of subvisor's
   * `control_response` lines back on stdout. An echo of one of these is no answer to a request of subvisor's and no
   * bad line: it is dropped (once). Bounded: a build that does not echo leaves at most the latest few here.
   */
  readonly #answeredTheirs = new Set<string>();

  constructor(io: StdioSessionIo, facts: StdioSessionFacts, options: { protocol: string; approve?: ApproveCallback | undefined }) {
    this.#io = io;
    this.#facts = facts;
    this.#pending = new PendingRequests<JsonObject>(io.setTimer);
    this.#permissions = new ClaudePermissions(options, {
      respond: (requestId, response) => this.#respond(requestId, { subtype: 'success', request_id: requestId, response }),
      report: (draft) => facts.event(draft),
    });
  }

  /** Sends one `control_request` of subvisor's (an error event when it cannot be written). */
  request(request: JsonObject, timeoutMs: number | undefined, handlers: ControlHandlers): void {
    const id = `subvisor-${++this.#ids}`;
    const sent = this.#io.send({ type: 'control_request', request_id: id, request });
    if (!sent.ok) {
      this.#facts.event({ type: 'error', error: `could not send ${String(request['subtype'])} to claude: ${sent.reason}`, source: 'subvisor' });
      return;
    }
    this.#pending.add(id, {
      settled: (response) => {
        if (response['subtype'] === 'error') handlers.failed({ kind: 'failed', reason: stringField(response, 'error') ?? 'an error response' });
        else handlers.settled(isObject(response['response']) ? response['response'] : {});
      },
      failed: handlers.failed,
    }, timeoutMs);
  }

  /** A `control_request`, `control_response` or `control_cancel_request` line. */
  take(frame: TypedFrame): void {
    if (frame.type === 'control_request') return this.#asked(frame);
    if (frame.type === 'control_response') return this.#answered(frame);
    const id = stringField(frame, 'request_id');
    if (id === undefined || !this.#permissions.withdraw(id)) this.#facts.event({ type: 'info', nativeType: 'control_cancel_request', summary: 'a cancel for no open request', ...(id === undefined ? {} : { requestId: id }) });
  }

  /** A line over the bound: a request in it still gets its answer (an error), or Claude Code would wait for it. */
  overlong(rejection: FrameRejection, head: string): void {
    this.#facts.rejected(rejection);
    if (rejection.lineType !== 'control_request') return;
    const id = /"request_id"\s*:\s*"([^"\\]{1,200})"/.exec(head)?.[1];
    if (id === undefined) return;
    this.#respond(id, { subtype: 'error', request_id: id, error: 'the request was longer than the line bound (maxFrameBytes)' });
  }

  /** The run is ending: waiting permission questions are denied now, as are later ones. */
  shutDown(): void {
    this.#permissions.shutDown();
  }

  /** Nothing more will answer: subvisor's requests fail `closed`, the questions are denied. */
  close(reason: string): void {
    this.#pending.close(reason);
    this.#permissions.shutDown();
  }

  /** Claude Code asks: `can_use_tool` goes to the desk; any other subtype is not served. */
  #asked(frame: TypedFrame): void {
    const id = stringField(frame, 'request_id');
    const request = frame['request'];
    if (id === undefined || !isObject(request)) return this.#facts.rejected({ code: 'invalid-payload', reason: 'a control_request without a string request_id and a request object', lineType: frame.type });
    const subtype = stringField(request, 'subtype') ?? 'unknown';
    if (subtype === 'can_use_tool') return this.#permissions.take(id, request);
    this.#respond(id, { subtype: 'error', request_id: id, error: `subvisor does not serve ${subtype}` });
    this.#facts.event({ type: 'info', nativeType: `control_request/${subtype}`, summary: `claude asked for ${subtype}, which subvisor does not serve: answered with an error`, requestId: id, decidedBy: 'policy' });
  }

  /** Answers one of Claude Code's requests, remembering its id to know the echo. */
  #respond(requestId: string, response: JsonObject): void {
    this.#io.send({ type: 'control_response', response });
    this.#answeredTheirs.add(requestId);
    if (this.#answeredTheirs.size > ANSWERED_KEPT) this.#answeredTheirs.delete(this.#answeredTheirs.values().next().value!);
  }

  /** The answer to one of subvisor's requests (or the echo of subvisor's own answer to one of Claude Code's). */
  #answered(frame: TypedFrame): void {
    const response = frame['response'];
    const id = isObject(response) ? stringField(response, 'request_id') : undefined;
    if (id === undefined) return this.#facts.rejected({ code: 'invalid-payload', reason: 'a control_response without a string response.request_id', lineType: frame.type });
    if (this.#answeredTheirs.delete(id)) return;
    const settled = this.#pending.settle(id, response as JsonObject);
    if (!settled.ok) this.#facts.rejected({ code: 'invalid', reason: `a control_response for a request subvisor has not open (${settled.reason})`, lineType: frame.type });
  }
}
