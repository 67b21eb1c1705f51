// Codex's notifications as run events and facts: items, text and reasoning deltas, usage, errors, rate limits; the turn's start and end handed to the session; everything else a notice.
import type { RateLimitFields, RunEventDraftOf, RunEventExtra } from '../../protocol/index.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import type { EventDraft } from '../shared/event-drafts.js';
import { putExtra } from '../shared/extra-fields.js';
import { stringField } from '../shared/json-kinds.js';
import { agentTextOf, isToolItem, reasoningTextOf, toolCallOf, toolResultOf } from './item-events.js';
import type { Item } from './item-events.js';
import { errorMessageOf, readParams, userTextOf } from './messages.js';
import type { Params } from './messages.js';
import { accountRateLimit, errorRateLimit } from './rate-limits.js';
import { UsageReader } from './turn-record.js';
import type { TurnRecord, TurnStatus } from './turn-record.js';
import type { StdioSessionFacts } from '../shared/stdio/session-io.js';

/** What the map asks of the session. */
export interface NotificationHost {
  /** This run's thread (undefined before it started). */
  threadId(): string | undefined;
  /** The turn running (or asked for), if any. */
  turn(): TurnRecord | undefined;
  /** `turn/started`: a turn began (the one asked for, or one Codex began itself). */
  turnStarted(turnId: string): void;
  /** `turn/completed`: false when no open turn has that id (the notification is then a notice). */
  turnCompleted(turnId: string, status: TurnStatus, turn: JsonObject): boolean;
  /** `serverRequest/resolved`: true when it withdrew a request not answered yet (which reported itself). */
  resolved(requestId: JsonValue | undefined): boolean;
}

const TURN_END: ReadonlySet<string> = new Set(['completed', 'interrupted', 'failed']);

/**
 * Maps each notification of this run's thread (one of another thread, a sub-agent's, is a notice: it never
 * ends this run's turn): `item/agentMessage/delta` -> `assistant-text-delta`; an `agentMessage` item completed
 * -> `assistant-text` (the turn's answer is its latest); reasoning deltas and items -> thinking, never the answer;
 * a tool item (`commandExecution`, `fileChange`, `mcpToolCall`, `webSearch`...) started -> `tool-call`, completed ->
 * `tool-result`; a user message -> `user`, or `steering-injected` when it is an accepted steer;
 * `thread/tokenUsage/updated` -> `llm-end` with the last request's usage; `error` -> `error` (and `rate-limit` when
 * it is a refusal); `account/rateLimits/updated` -> `rate-limit` when it carries a window; the rest -> `info`
 * (`nativeType` the method, its params under `extra`). The start of a message, reasoning or user item publishes
 * nothing: the item comes whole when it completes.
 */
export class NotificationMap {
  readonly #facts: StdioSessionFacts;
  readonly #host: NotificationHost;
  readonly #usage = new UsageReader();
  /** Tool items whose tool-call was published and whose result was not yet. */
  readonly #toolsOpen = new Set<string>();

  constructor(facts: StdioSessionFacts, host: NotificationHost) {
    this.#facts = facts;
    this.#host = host;
  }

  take(method: string, raw: JsonValue | undefined): void {
    const read = readParams(method, raw);
    if (read.rejection !== undefined) this.#facts.rejected(read.rejection);
    if (!read.usable) return;
    const params = read.params;
    const threadId = stringField(params, 'threadId');
    const ours = this.#host.threadId();
    // A sub-agent's requests come to this desk too: their withdrawal is heard whatever the thread.
    const mine = threadId === undefined || ours === undefined || threadId === ours || method === 'serverRequest/resolved';
    if (!mine) return this.#notice(method, params, 'of another thread (a sub-agent)');
    switch (method) {
      case 'item/agentMessage/delta':
        return this.#delta('assistant-text-delta', params);
      case 'item/reasoning/summaryTextDelta':
      case 'item/reasoning/textDelta':
        return this.#delta('assistant-thinking-delta', params);
      case 'item/started':
        return this.#itemStarted(method, params, params['item'] as Item);
      case 'item/completed':
        return this.#itemCompleted(method, params, params['item'] as Item);
      case 'turn/started':
        this.#host.turnStarted((params['turn'] as JsonObject)['id'] as string);
        return this.#notice(method, params);
      case 'turn/completed':
        return this.#turnCompleted(method, params, params['turn'] as JsonObject);
      case 'thread/tokenUsage/updated':
        return this.#tokenUsage(method, params);
      case 'error':
        return this.#error(params);
      case 'account/rateLimits/updated': {
        const news = accountRateLimit(params);
        return news === undefined ? this.#notice(method, params) : this.#rateLimit(news, params);
      }
      case 'serverRequest/resolved':
        if (!this.#host.resolved(params['requestId'])) this.#notice(method, params);
        return;
      case 'warning':
        return this.#notice(method, params, stringField(params, 'message'));
      case 'configWarning':
      case 'deprecationNotice':
        return this.#notice(method, params, stringField(params, 'summary'));
      default:
        return this.#notice(method, params);
    }
  }

  #delta(type: 'assistant-text-delta' | 'assistant-thinking-delta', params: Params): void {
    const itemId = params['itemId'] as string;
    const contentIndex = this.#host.turn()?.blockOf(itemId) ?? 0;
    this.#facts.event({ type, delta: params['delta'] as string, contentIndex, extra: { itemId } });
  }

  #itemStarted(method: string, params: Params, item: Item): void {
    const turn = this.#host.turn();
    if (isToolItem(item)) {
      if (item.type === 'fileChange') turn?.rememberFileChanges(item.id, item['changes']);
      if (this.#toolsOpen.has(item.id)) return;
      this.#toolsOpen.add(item.id);
      return this.#facts.event(toolCallOf(item));
    }
    if (item.type === 'agentMessage' || item.type === 'reasoning') {
      turn?.blockOf(item.id);
      return;
    }
    if (item.type === 'userMessage') return;
    this.#notice(method, params, `${item.type} started`);
  }

  #itemCompleted(method: string, params: Params, item: Item): void {
    const turn = this.#host.turn();
    if (isToolItem(item)) {
      // An item announced only when it completes still gets its call before its result.
      if (!this.#toolsOpen.delete(item.id)) this.#facts.event(toolCallOf(item));
      return this.#facts.event(toolResultOf(item));
    }
    switch (item.type) {
      case 'agentMessage': {
        const draft = agentTextOf(item, turn?.blockOf(item.id) ?? 0);
        if (turn !== undefined) turn.lastMessage = draft.text;
        return this.#facts.event(draft);
      }
      case 'reasoning':
        return this.#facts.event(reasoningTextOf(item, turn?.blockOf(item.id) ?? 0));
      case 'userMessage': {
        const text = userTextOf(item);
        const steer = turn?.takeSteer(text);
        if (steer === undefined) return this.#facts.event(text === undefined ? { type: 'user' } : { type: 'user', text });
        this.#facts.delivery(steer.ref, 'injected');
        return this.#facts.event({ type: 'steering-injected', text: steer.text, ref: steer.ref });
      }
      default:
        return this.#notice(method, params, `${item.type} completed`);
    }
  }

  #turnCompleted(method: string, params: Params, turn: JsonObject): void {
    const status = stringField(turn, 'status');
    // A completion whose status cannot be read still ends the turn, as a failure.
    const end: TurnStatus = status !== undefined && TURN_END.has(status) ? (status as TurnStatus) : 'failed';
    if (end !== status && turn['error'] === undefined) turn['error'] = { message: `codex completed the turn with status ${JSON.stringify(status ?? null)}` };
    if (!this.#host.turnCompleted(turn['id'] as string, end, turn)) this.#notice(method, params, 'a turn this run does not have open');
  }

  #tokenUsage(method: string, params: Params): void {
    const usage = this.#usage.read(params['tokenUsage'] as JsonObject);
    if (usage === undefined) return this.#notice(method, params, 'the same usage again');
    this.#host.turn()?.addUsage(usage);
    const draft: RunEventDraftOf<'llm-end'> = { type: 'llm-end', usage };
    this.#facts.event(withParams(draft, params, ['tokenUsage']));
  }

  #error(params: Params): void {
    const error = params['error'] as JsonObject;
    const message = errorMessageOf(error['message'] as string);
    const turn = this.#host.turn();
    // An error Codex retries is news; one it does not is the turn's failure, in the model's words.
    if (params['willRetry'] !== true && turn !== undefined) turn.error = message;
    const news = errorRateLimit(params);
    if (news !== undefined) this.#facts.rateLimit(news);
    this.#facts.event(withParams({ type: 'error', error: message, source: 'codex' }, params, []));
    if (news !== undefined) this.#facts.event(withParams({ type: 'rate-limit', ...news }, params, []));
  }

  /** Rate-limit news of `account/rateLimits/updated`: the notice of the notification, then the news (the same seq). */
  #rateLimit(news: RateLimitFields, params: Params): void {
    this.#facts.rateLimit(news);
    this.#notice('account/rateLimits/updated', params);
    this.#facts.event(withParams({ type: 'rate-limit', ...news }, params, []));
  }

  #notice(method: string, params: Params, summary?: string): void {
    const draft: RunEventDraftOf<'info'> = { type: 'info', nativeType: method };
    if (summary !== undefined) draft.summary = summary;
    this.#facts.event(withParams(draft, params, []));
  }
}

/** `draft` with the params' members it did not take (`used`) under `extra`, as sent. */
function withParams<D extends EventDraft>(draft: D, params: Params, used: readonly string[]): D {
  let extra: RunEventExtra | undefined;
  for (const key in params) {
    if (used.includes(key)) continue;
    putExtra((extra ??= {}), key, params[key]!);
  }
  if (extra !== undefined) draft.extra = extra;
  return draft;
}
