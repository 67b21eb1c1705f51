// Maps one run's events to Agent Handler events: text and thinking without doubling, tools, retries, passthrough.
import type { Outcome, RunEvent, RunEventExtra } from '../api/types.js';
import { isKnownEventType } from './known-events.js';
import type { AgentEvent, Json, OtherAgentEvent } from './types.js';

/** What a child said about its own failure (serveAgent children put `code` and `retryable` on `error`/`exit`). */
export interface ChildFailure {
  details?: string;
  code?: string;
  retryable?: boolean;
}

/** A deep copy that is exactly what a JSON round trip gives (drops `undefined`, turns -0 into 0). */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * One stream of text (or thinking) made of blocks: deltas open a block, a full block event closes it.
 * A full block repeats what its deltas said: only the part the deltas did not carry is emitted.
 */
class BlockText {
  /** Text emitted by deltas of the block still open. */
  open = '';
  /** The text of the last closed block, as emitted. */
  last = '';
  any = false;

  delta(delta: string): string {
    this.open += delta;
    if (delta !== '') this.any = true;
    return delta;
  }

  /** A complete block: returns what still has to be emitted. */
  full(text: string): string {
    let missing = '';
    if (this.open === '') missing = text;
    else if (text.startsWith(this.open)) missing = text.slice(this.open.length);
    // Otherwise the block differs from its deltas (cut to transport bounds): the deltas stand.
    this.last = this.open === '' || text.startsWith(this.open) ? text : this.open;
    this.open = '';
    if (missing !== '') this.any = true;
    return missing;
  }

  close(): void {
    if (this.open !== '') this.last = this.open;
    this.open = '';
  }

  /** The part of a whole answer not yet emitted: all of it when no text was, the tail when the last block is its prefix. */
  remainder(answer: string): string {
    if (!this.any) return answer;
    const block = this.open !== '' ? this.open : this.last;
    return answer.startsWith(block) ? answer.slice(block.length) : '';
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** An `info` event's `retrying` field in the shape of a `retrying` AgentEvent (serveAgent's convention). */
function retryOf(value: unknown): AgentEvent | undefined {
  if (!isRecord(value)) return undefined;
  const { attempt, maxAttempts, delayMs, reason } = value;
  if (typeof attempt !== 'number' || typeof maxAttempts !== 'number' || typeof delayMs !== 'number') return undefined;
  return { type: 'retrying', attempt, maxAttempts, delayMs, reason: typeof reason === 'string' ? reason : '' };
}

/**
 * A rate limit the agent waits out and retries by itself, as the contract's advisory `retrying` (the quiet gap it
 * explains is the agent's wait). A warning, a recovery, or a refusal the agent gave up on is no retry: it stays a
 * run event (and a refusal ends the run `failed` by its own terminal).
 */
function rateLimitRetryOf(event: Extract<RunEvent, { type: 'rate-limit' }>): AgentEvent | undefined {
  if (event.status !== 'limited' || event.agentRetries !== true) return undefined;
  const status = event.httpStatus === undefined ? 'rate limited' : `rate limited (HTTP ${event.httpStatus})`;
  return {
    type: 'retrying',
    attempt: event.attempt ?? 1,
    maxAttempts: event.maxAttempts ?? event.attempt ?? 1,
    delayMs: event.retryAfterMs ?? (event.resetsAt === undefined ? 0 : Math.max(0, event.resetsAt - Date.now())),
    reason: event.message === undefined ? status : `${status}: ${event.message}`,
  };
}

/**
 * Stateful mapper of one invoke's run events. `map` returns the AgentEvents an event stands for (never a
 * terminal); `answerRemainder` the text of the run's answer that the stream has not carried yet.
 */
export class RunEventMapper {
  readonly #text = new BlockText();
  readonly #thinking = new BlockText();
  /** Open tool calls by name, for results that do not name their call. */
  readonly #openTools = new Map<string, string[]>();
  #toolCounter = 0;
  #failure: ChildFailure | undefined;
  #result: { finalText?: string; data?: Json } | undefined;
  #turnData: Json | undefined;

  constructor(private readonly passRunEvents: boolean) {}

  /** The child's own account of its failure, from its last `error` or its `exit`. */
  get childFailure(): ChildFailure | undefined {
    return this.#failure;
  }

  /** The `data` field of the child's `result`, or else of its last `turn-complete` (serveAgent children send both). */
  get data(): Json | undefined {
    return this.#result?.data ?? this.#turnData;
  }

  map(event: RunEvent): AgentEvent[] {
    const out: AgentEvent[] = [];
    const text = (delta: string) => {
      if (delta !== '') out.push({ type: 'text', delta });
    };
    const thinking = (delta: string) => {
      if (delta !== '') out.push({ type: 'thinking', delta });
    };
    switch (event.type) {
      case 'assistant-text-delta':
        text(this.#text.delta(typeof event.delta === 'string' ? event.delta : ''));
        return out;
      case 'assistant-text':
        text(this.#text.full(typeof event.text === 'string' ? event.text : ''));
        return out;
      case 'assistant-thinking-delta':
        thinking(this.#thinking.delta(typeof event.delta === 'string' ? event.delta : ''));
        return out;
      case 'assistant-thinking':
        thinking(this.#thinking.full(typeof event.text === 'string' ? event.text : ''));
        return out;
      case 'assistant-stream-end':
        this.#text.close();
        this.#thinking.close();
        return out;
      case 'tool-call': {
        this.#closeBlocks();
        const id = typeof event.id === 'string' ? event.id : this.#newToolId();
        const open = this.#openTools.get(event.name) ?? [];
        open.push(id);
        this.#openTools.set(event.name, open);
        out.push({ type: 'tool_started', id, name: event.name, args: event.arguments === undefined ? {} : jsonCopy(event.arguments) });
        return out;
      }
      case 'tool-result': {
        const id = this.#resultId(event.name, event.toolCallId ?? event.id);
        out.push({ type: 'tool_ended', id, isError: event.isError, content: event.result === undefined ? null : jsonCopy(event.result) });
        return out;
      }
      case 'turn-started':
        this.#closeBlocks();
        break;
      case 'info': {
        const retry = retryOf(event.extra?.['retrying']);
        if (retry !== undefined) return [retry];
        const relayed = event.extra?.['agentEvent'];
        // An unknown event of a serveAgent child's agent, relayed unchanged (the seed's MUST 5). A serveAgent child
        // writes every known type as its own Fen event, so a known type here (a terminal above all) is no relay.
        if (isRecord(relayed) && typeof relayed['type'] === 'string' && !isKnownEventType(relayed['type'])) {
          return [jsonCopy(relayed) as OtherAgentEvent];
        }
        break;
      }
      case 'rate-limit': {
        const retry = rateLimitRetryOf(event);
        if (retry !== undefined) out.push(retry);
        break;
      }
      case 'turn-complete':
        if (event.extra?.['data'] !== undefined) this.#turnData = jsonCopy(event.extra['data']);
        break;
      case 'error':
        this.#failure = this.#failureFrom(event.error, event.extra);
        break;
      case 'result': {
        this.#result = {};
        if (typeof event.finalText === 'string') this.#result.finalText = event.finalText;
        if (event.extra?.['data'] !== undefined) this.#result.data = jsonCopy(event.extra['data']);
        break;
      }
      case 'exit':
        if (event.status !== 'done') this.#failure = this.#failureFrom(event.error, event.extra, this.#failure);
        return out; // the terminal stands for it
    }
    if (this.passRunEvents) out.push({ type: 'run_event', event: jsonCopy(event) });
    return out;
  }

  /** The text of the answer (the outcome's whole `finalText`) that text events have not carried yet. */
  answerRemainder(outcome: Outcome): string {
    const answer = outcome.finalText ?? this.#result?.finalText;
    return answer === undefined ? '' : this.#text.remainder(answer);
  }

  #closeBlocks(): void {
    this.#text.close();
    this.#thinking.close();
  }

  #newToolId(): string {
    this.#toolCounter += 1;
    return `tool-${this.#toolCounter}`;
  }

  #resultId(name: string, id: unknown): string {
    const open = this.#openTools.get(name);
    if (typeof id === 'string') {
      const index = open?.indexOf(id) ?? -1;
      if (index >= 0) open!.splice(index, 1);
      return id;
    }
    return open?.shift() ?? this.#newToolId();
  }

  /** The failure an `error` or `exit` reports: its text, and the Agent Handler child's `code`/`retryable` (unknown to Fen, so under `extra`). */
  #failureFrom(details: unknown, extra: RunEventExtra | undefined, previous?: ChildFailure): ChildFailure {
    const failure: ChildFailure = { ...previous };
    if (typeof details === 'string' && details !== '') failure.details = details;
    if (typeof extra?.['code'] === 'string') failure.code = extra['code'];
    if (typeof extra?.['retryable'] === 'boolean') failure.retryable = extra['retryable'];
    return failure;
  }
}
