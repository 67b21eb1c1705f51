// An ACP agent's session/update notifications as run events: message and thought chunks as text and thinking (blocks, the turn's answer), tool calls and their updates, usage_update's cost, every other kind a notice.
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { withExtras } from '../shared/event-drafts.js';
import type { EventDraft } from '../shared/event-drafts.js';
import { putExtra } from '../shared/extra-fields.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import type { TypedFrame } from '../shared/json-line.js';
import { readUpdate, textOf } from './messages.js';
import type { StdioSessionFacts } from '../shared/stdio/session-io.js';

/** What the map asks of the session. */
export interface UpdateHost {
  /** This run's session (undefined before `session/new` answered). */
  sessionId(): string | undefined;
  /** Asked of each update: `session/load` is replaying the conversation, so it is history, not this run's output. */
  loading(): boolean;
}

/** A block of streamed output: its kind and index, and its text so far. */
interface Block {
  kind: 'text' | 'thinking';
  index: number;
  messageId: string | undefined;
  pieces: string[];
}

/** The fields of a tool call the tool-call and tool-result events take (the rest go under `extra`). */
const TOOL_FIELDS = ['sessionUpdate', 'toolCallId', 'title', 'name', 'kind', 'status', 'rawInput', 'rawOutput', 'content'];

/**
 * Maps each `session/update` of this run's session (another session's is a notice): `agent_message_chunk` ->
 * `assistant-text-delta`, `agent_thought_chunk` -> `assistant-thinking-delta`, each block of them closed (by the
 * other kind, a new `messageId`, a tool call or the turn's end) as one `assistant-text` / `assistant-thinking`;
 * `tool_call` -> `tool-call`, and `tool-result` once it (or a `tool_call_update`) says `completed` or `failed`;
 * `usage_update` -> a notice, its cumulative `cost` (USD) kept for the turn's usage; `user_message_chunk`, `plan`,
 * `available_commands_update`, `current_mode_update` and every kind not known -> `info` (`nativeType` the kind,
 * its fields under `extra`). The turn's answer is its last message: the text chunks since its last tool call.
 */
export class UpdateMap {
  readonly #facts: StdioSessionFacts;
  readonly #host: UpdateHost;
  #block: Block | undefined;
  #nextIndex = 0;
  /** The text of the message being written (since the last tool call). */
  #message: string[] = [];
  /** Tool calls announced, and whether their result was published. */
  readonly #tools = new Map<string, { name: string; done: boolean }>();
  #costUsd: number | undefined;

  constructor(facts: StdioSessionFacts, host: UpdateHost) {
    this.#facts = facts;
    this.#host = host;
  }

  /** The session's cumulative cost in USD as `usage_update` last reported it. */
  get costUsd(): number | undefined {
    return this.#costUsd;
  }

  take(params: JsonValue | undefined): void {
    const read = readUpdate(params);
    if (read.rejection !== undefined) this.#facts.rejected(read.rejection);
    if (!read.usable || read.kind === undefined) return;
    const { kind, update } = read;
    const ours = this.#host.sessionId();
    if (ours !== undefined && read.sessionId !== ours) return this.#notice(kind, update, 'of another session');
    if (this.#host.loading()) return this.#notice(kind, update, 'history replayed by session/load');
    switch (kind) {
      case 'agent_message_chunk':
        return this.#chunk('text', kind, update);
      case 'agent_thought_chunk':
        return this.#chunk('thinking', kind, update);
      case 'tool_call':
      case 'tool_call_update':
        return this.#tool(update);
      case 'usage_update':
        return this.#usage(update);
      default:
        return this.#notice(kind, update);
    }
  }

  /** A request names a tool call (`session/request_permission`): its `tool-call`, unless it was announced. */
  announce(toolCall: JsonObject): void {
    this.#closeBlock(false);
    this.#message = [];
    this.#called(toolCall);
  }

  /** A tool call that will not run (its permission denied or cancelled): its `tool-result`, an error, unless one came. */
  denied(toolCallId: string, why: string): void {
    const tool = this.#tools.get(toolCallId);
    if (tool === undefined || tool.done) return;
    tool.done = true;
    this.#facts.event({ type: 'tool-result', name: tool.name, isError: true, id: toolCallId, toolCallId, result: why });
  }

  /** The turn ended: its open block is closed (`final` when it ended well) and its answer, the last message, taken. */
  endTurn(final: boolean): string {
    this.#closeBlock(final);
    const answer = this.#message.join('');
    this.#message = [];
    return answer;
  }

  #chunk(kind: Block['kind'], native: string, update: JsonObject): void {
    const text = textOf(update['content']);
    if (text === undefined) return this.#notice(native, update, `a ${stringField(update['content'] as JsonObject, 'type') ?? 'non-text'} chunk`);
    const messageId = stringField(update, 'messageId');
    let block = this.#block;
    if (block !== undefined && (block.kind !== kind || (messageId !== undefined && block.messageId !== undefined && messageId !== block.messageId))) {
      this.#closeBlock(false);
      block = undefined;
    }
    if (block === undefined) block = this.#block = { kind, index: this.#nextIndex++, messageId, pieces: [] };
    block.pieces.push(text);
    if (kind === 'text') this.#message.push(text);
    const draft: EventDraft = { type: kind === 'text' ? 'assistant-text-delta' : 'assistant-thinking-delta', delta: text, contentIndex: block.index };
    this.#facts.event(withExtras(draft, update as TypedFrame, ['sessionUpdate', 'content']));
  }

  #closeBlock(final: boolean): void {
    const block = this.#block;
    if (block === undefined) return;
    this.#block = undefined;
    const text = block.pieces.join('');
    this.#facts.event({ type: block.kind === 'text' ? 'assistant-text' : 'assistant-thinking', final: final && block.kind === 'text', contentIndex: block.index, text });
  }

  #tool(update: JsonObject): void {
    this.#closeBlock(false);
    this.#message = [];
    const id = update['toolCallId'] as string;
    this.#called(update);
    const status = stringField(update, 'status');
    const tool = this.#tools.get(id)!;
    if (status !== 'completed' && status !== 'failed') {
      if (update['sessionUpdate'] === 'tool_call_update') this.#notice('tool_call_update', update, status === undefined ? undefined : `tool call ${status}`);
      return;
    }
    if (tool.done) return this.#notice('tool_call_update', update, 'the tool call had its result already');
    tool.done = true;
    const draft: RunEventDraftOf<'tool-result'> = { type: 'tool-result', name: tool.name, isError: status === 'failed', id, toolCallId: id };
    const result = update['rawOutput'] ?? update['content'];
    if (result !== undefined && result !== null) draft.result = result;
    this.#facts.event(withExtras(draft, update as TypedFrame, TOOL_FIELDS));
  }

  /** The `tool-call` of a tool call not announced yet. */
  #called(toolCall: JsonObject): void {
    const id = toolCall['toolCallId'] as string;
    if (this.#tools.has(id)) return;
    const name = stringField(toolCall, 'name') ?? stringField(toolCall, 'kind') ?? 'tool';
    this.#tools.set(id, { name, done: false });
    const args: JsonObject = {};
    for (const field of ['title', 'kind', 'rawInput', 'locations', 'content']) {
      const value = toolCall[field];
      if (value !== undefined && value !== null) putExtra(args, field, value);
    }
    this.#facts.event(withExtras({ type: 'tool-call', name, id, arguments: args }, toolCall as TypedFrame, [...TOOL_FIELDS, 'locations']));
  }

  #usage(update: JsonObject): void {
    const cost = update['cost'];
    if (isObject(cost) && cost['currency'] === 'USD' && typeof cost['amount'] === 'number' && Number.isFinite(cost['amount'])) this.#costUsd = cost['amount'];
    const used = update['used'];
    const size = update['size'];
    this.#notice('usage_update', update, typeof used === 'number' && typeof size === 'number' ? `${used} of ${size} context tokens used` : undefined);
  }

  #notice(kind: string, update: JsonObject, summary?: string): void {
    const draft: RunEventDraftOf<'info'> = { type: 'info', nativeType: kind };
    if (summary !== undefined) draft.summary = summary;
    this.#facts.event(withExtras(draft, update as TypedFrame, ['sessionUpdate']));
  }
}
