// Claude Code's `result` lines as turn ends: how each turn ended, its usage and cost, and what the past turns add up to (the last status, the answer, the run's usage).
import type { JsonObject, Usage } from '../../wire/index.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import type { TypedFrame } from '../shared/json-line.js';
import { boundedAnswer } from '../shared/session.js';
import type { SessionAnswer } from '../shared/session.js';
import { readUsage } from '../shared/usage-reader.js';
import { TOKEN_COUNTS } from './message-map.js';

/** How a turn ended, as its `result` said. */
export type TurnStatus = 'completed' | 'failed' | 'aborted';

/** One turn's end. */
export interface TurnEnd {
  status: TurnStatus;
  /** `end_turn`, `aborted` (a `terminal_reason` `aborted_*`) or `error`. */
  stopReason: string;
  /** A failed turn's message: the result's text (the model's own words), else its `errors`. */
  error?: string;
  /** The turn's tokens, and its cost: the growth of the process's cumulative `total_cost_usd`. */
  usage?: Usage;
  /** A completed turn's answer (the result's text), bounded. */
  answer?: SessionAnswer;
  /** The result's own facts, for the turn-complete's `extra`. */
  extra: JsonObject;
}

/** The result's members a turn-complete keeps under `extra` (its answer and usage are fields already). */
const EXTRA = ['subtype', 'terminal_reason', 'is_error', 'api_error_status', 'num_turns', 'duration_ms', 'total_cost_usd', 'session_id'];

/** Reads each `result` of one process, in order. */
export class TurnResults {
  readonly #maxAnswerChars: number;
  #costSoFar = 0;
  #costSeen = false;
  #tokens: Usage | undefined;
  #lastStatus: TurnStatus | undefined;
  #lastError: string | undefined;
  #answer: SessionAnswer | undefined;

  constructor(maxAnswerChars: number) {
    this.#maxAnswerChars = maxAnswerChars;
  }

  /** How the latest turn ended (undefined before the first result), with its error when it failed. */
  get last(): { status: TurnStatus | undefined; error: string | undefined } {
    return { status: this.#lastStatus, error: this.#lastError };
  }

  /** The latest completed turn's answer. */
  get answer(): SessionAnswer | undefined {
    return this.#answer;
  }

  /** The run's usage: every turn's tokens, and the latest cost figure (not a sum). */
  get usage(): Usage | undefined {
    if (this.#tokens === undefined && !this.#costSeen) return undefined;
    return { ...this.#tokens, ...(this.#costSeen ? { costUsd: this.#costSoFar } : {}) };
  }

  read(frame: TypedFrame): TurnEnd {
    const terminal = stringField(frame, 'terminal_reason') ?? '';
    const subtype = stringField(frame, 'subtype') ?? '';
    const text = stringField(frame, 'result');
    const status: TurnStatus = terminal.startsWith('aborted') ? 'aborted' : frame['is_error'] === true || subtype.startsWith('error') ? 'failed' : 'completed';
    const end: TurnEnd = { status, stopReason: status === 'completed' ? 'end_turn' : status === 'aborted' ? 'aborted' : 'error', extra: pick(frame) };
    if (status === 'failed') end.error = text ?? errorsOf(frame) ?? `claude ended the turn with ${subtype || 'an error'}`;
    if (status === 'completed' && text !== undefined) end.answer = this.#answer = boundedAnswer(text, this.#maxAnswerChars);
    const usage = this.#usageOf(frame);
    if (usage !== undefined) end.usage = usage;
    this.#lastStatus = status;
    this.#lastError = end.error;
    return end;
  }

  #usageOf(frame: TypedFrame): Usage | undefined {
    const tokens = isObject(frame['usage']) ? readUsage(frame['usage'], { counts: TOKEN_COUNTS }) : undefined;
    if (tokens !== undefined) this.#tokens = addTokens(this.#tokens, tokens);
    const total = frame['total_cost_usd'];
    if (typeof total !== 'number' || !Number.isFinite(total) || total < this.#costSoFar) return tokens;
    const cost = costDifference(total, this.#costSoFar);
    this.#costSoFar = total;
    this.#costSeen = true;
    return { ...tokens, costUsd: cost };
  }
}

/** `total - before` without binary floating point's noise (15 significant digits, as the core sums costs): the turns' costs add up to the latest total. */
function costDifference(total: number, before: number): number {
  return Number((total - before).toPrecision(15));
}

function addTokens(total: Usage | undefined, usage: Usage): Usage {
  const sum: Usage = { ...total };
  for (const field of ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens'] as const) {
    const value = usage[field];
    if (value !== undefined) sum[field] = (sum[field] ?? 0) + value;
  }
  return sum;
}

/** A failed result's `errors` list (an error subtype without result text), joined. */
function errorsOf(frame: TypedFrame): string | undefined {
  const errors = frame['errors'];
  if (!Array.isArray(errors)) return undefined;
  const texts = errors.filter((entry): entry is string => typeof entry === 'string');
  return texts.length === 0 ? undefined : texts.join('; ');
}

function pick(frame: TypedFrame): JsonObject {
  const picked: JsonObject = {};
  for (const name of EXTRA) if (frame[name] !== undefined) picked[name] = frame[name]!;
  return picked;
}
