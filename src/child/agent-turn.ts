// One turn of a served agent: runs invoke, writes its events as Fen events, and stops it through the iterator's return().
import type { Agent, AgentEvent, Json } from '../agent/types.js';
import { within } from '../agent/stop-run.js';
import { TRANSPORT_BOUNDS } from '../wire/index.js';
import type { EventWriter } from './event-writer.js';
import { utf8Prefix } from '../text/utf8.js';

/** How a turn ended. */
export interface TurnReport {
  /** The turn was interrupted (cancel, finalize, deadline, shutdown). */
  aborted: boolean;
  /** Every text delta of the turn: the answer. */
  answer: string;
  /** `completed.data`. */
  data?: Json;
  /** The agent's `failed` (or a broken stream, reported as one). */
  failure?: { details: string; retryable: boolean; code?: string };
}

const INTERRUPTED = Symbol('interrupted');

/** Cuts text into pieces of at most `maxBytes` UTF-8 bytes, never inside a character: nothing is lost. */
function pieces(text: string, maxBytes: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (Buffer.byteLength(rest) > maxBytes) {
    const head = utf8Prefix(rest, maxBytes);
    if (head === '') break; // cannot happen for maxBytes >= 4
    out.push(head);
    rest = rest.slice(head.length);
  }
  if (rest !== '') out.push(rest);
  return out;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What is wrong with a `failed` event's fields (none when it has `details`, `retryable` and an optional `code` as the seed types them). */
function failedEventProblems(fields: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const expect = (name: string, kind: 'string' | 'boolean', optional: boolean) => {
    const value = fields[name];
    if (value === undefined) {
      if (!optional) problems.push(`${name} is missing (a ${kind} is required)`);
    } else if (typeof value !== kind) {
      problems.push(`${name} is ${shown(value)} (it must be a ${kind})`);
    }
  };
  expect('details', 'string', false);
  expect('retryable', 'boolean', false);
  expect('code', 'string', true);
  return problems;
}

/** The longest rendering of a malformed event shown in its report. */
const SHOWN_CHARS = 500;

/** A value as JSON (cut at {@link SHOWN_CHARS}), for a report of what the agent yielded. */
function shown(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = isRecord(value) ? `an object with the fields ${Object.keys(value).join(', ')}` : String(value);
  }
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}...` : text;
}

export class AgentTurn {
  readonly done: Promise<TurnReport>;
  #interrupt!: (value: typeof INTERRUPTED) => void;
  readonly #interrupted = new Promise<typeof INTERRUPTED>((resolve) => (this.#interrupt = resolve));
  /** Open tool calls' names by id: Fen's tool-result names its tool. */
  readonly #tools = new Map<string, string>();

  constructor(
    agent: Agent,
    scope: { session: string },
    text: string,
    private readonly events: EventWriter,
    private readonly returnGraceMs: number,
  ) {
    this.done = this.#run(agent, scope, text);
  }

  /** Stops the turn: the pending `next()` is abandoned and the iterator's `return()` is called. */
  interrupt(): void {
    this.#interrupt(INTERRUPTED);
  }

  async #run(agent: Agent, scope: { session: string }, text: string): Promise<TurnReport> {
    const report: TurnReport = { aborted: false, answer: '' };
    let iterator: AsyncIterator<AgentEvent> | undefined;
    try {
      iterator = agent.invoke(scope, { text })[Symbol.asyncIterator]();
      for (;;) {
        const next = await Promise.race([iterator.next(), this.#interrupted]);
        if (next === INTERRUPTED) {
          report.aborted = true;
          break;
        }
        if (next.done === true) {
          this.#fail(report, { details: 'the agent stream ended without a terminal event', retryable: false, code: 'no_terminal' });
          break;
        }
        if (this.#write(next.value, report)) break;
      }
    } catch (error) {
      // MUST 2 says iteration never throws; an agent that does fails its turn, it does not crash the child.
      this.#fail(report, { details: `the agent threw: ${(error as Error)?.message ?? String(error)}`, retryable: false, code: 'agent_threw' });
    }
    // Release the agent's resources; a generator stuck in a pending next() settles its return() only later.
    if (iterator?.return !== undefined) {
      const stop = iterator.return.bind(iterator);
      await within(Promise.resolve().then(() => stop()).catch(() => undefined), this.returnGraceMs);
    }
    return report;
  }

  /** Writes one agent event as Fen events; true at the terminal. */
  #write(event: AgentEvent, report: TurnReport): boolean {
    if (!isRecord(event) || typeof event.type !== 'string') {
      this.events.emit('info', { summary: 'the agent yielded something that is not an event; ignored' });
      return false;
    }
    const fields = event as Record<string, unknown>;
    switch (event.type) {
      case 'text':
      case 'thinking': {
        const delta = typeof fields['delta'] === 'string' ? fields['delta'] : String(fields['delta'] ?? '');
        if (event.type === 'text') report.answer += delta;
        const type = event.type === 'text' ? 'assistant-text-delta' : 'assistant-thinking-delta';
        for (const piece of pieces(delta, TRANSPORT_BOUNDS.stringBytes)) this.events.emit(type, { 'content-index': 0, delta: piece });
        return false;
      }
      case 'tool_started': {
        const id = String(fields['id'] ?? '');
        const name = String(fields['name'] ?? 'tool');
        this.#tools.set(id, name);
        this.events.emit('tool-call', { name, id, arguments: (fields['args'] ?? null) as Json });
        return false;
      }
      case 'tool_ended': {
        const id = String(fields['id'] ?? '');
        const name = this.#tools.get(id) ?? 'tool';
        this.#tools.delete(id);
        this.events.emit('tool-result', { name, 'is-error?': fields['isError'] === true, id, 'tool-call-id': id, result: (fields['content'] ?? null) as Json });
        return false;
      }
      case 'retrying': {
        const retrying = {
          attempt: Number(fields['attempt']),
          maxAttempts: Number(fields['maxAttempts']),
          delayMs: Number(fields['delayMs']),
          reason: String(fields['reason'] ?? ''),
        };
        const summary = `retrying (attempt ${retrying.attempt} of ${retrying.maxAttempts}) in ${retrying.delayMs} ms: ${retrying.reason}`;
        this.events.emit('info', { summary, retrying });
        return false;
      }
      case 'completed':
        if (fields['data'] !== undefined) report.data = fields['data'] as Json;
        return true;
      case 'failed': {
        const problems = failedEventProblems(fields);
        if (problems.length > 0) {
          // Reported as what it is, with what it had: a bare "the agent failed" would lose the agent's own words.
          this.#fail(report, { details: `the agent yielded a malformed failed event: ${problems.join('; ')}; it had ${shown(fields)}`, retryable: false, code: 'malformed_event' });
          return true;
        }
        this.#fail(report, {
          details: fields['details'] as string,
          retryable: fields['retryable'] as boolean,
          ...(typeof fields['code'] === 'string' ? { code: fields['code'] } : {}),
        });
        return true;
      }
      default:
        // An event type this version does not know: relayed unchanged (the seed's MUST 5), never bounded.
        if (!this.events.emit('info', { summary: `agent event ${event.type}`, 'agent-event': event }, true)) {
          this.events.emit('info', { summary: `agent event ${event.type} dropped: it does not fit one wire line` });
        }
        return false;
    }
  }

  #fail(report: TurnReport, failure: NonNullable<TurnReport['failure']>): void {
    report.failure = failure;
    this.events.emit('error', { error: failure.details, source: 'agent', retryable: failure.retryable, ...(failure.code === undefined ? {} : { code: failure.code }) });
  }
}
