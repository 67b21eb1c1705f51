// One mew turn at a time: its streamed messages to events, its answer text, usage and stop reason.
import type { JsonObject, JsonValue, Usage } from '../../wire/index.js';
import { addUsage } from '../../wire/index.js';
import { passthrough } from '../shared/event-drafts.js';
import type { EventDraft } from '../shared/event-drafts.js';
import { BoundedText } from '../shared/session.js';
import type { SessionAnswer } from '../shared/session.js';
import { deltaKind, providerDraft, subagentDraft, toolEndDraft, toolNameOf, toolStartDraft, usageOf } from './event-map.js';
import { snakeTag } from './messages.js';
import { isObject, stringField } from '../shared/json-kinds.js';
import type { MewMessage } from './messages.js';

/** Streaming messages: they belong to a turn (one opens if none is). */
export const TURN_MESSAGES: ReadonlySet<string> = new Set([
  'provider', 'tool_start', 'tool_progress', 'tool_end', 'part_updated', 'subagent_start', 'subagent_status', 'subagent_end',
]);

export interface TurnFacts {
  event(draft: EventDraft): void;
  turnStarted(turn: number): void;
  turnCompleted(turn: number, stopReason: string, usage: Usage | undefined, answer?: string): void;
}

/** How a turn ended, as far as the stream tells. */
export type StreamEnd = 'completed' | 'failed' | 'cancelled';

/** What an ended turn leaves: its answer (completed turns only) and its usage. */
export interface EndedTurn {
  answer: SessionAnswer | undefined;
  usage: Usage | undefined;
}

/**
 * mew has no "turn started" message: a turn opens when its submission is accepted (or, for a turn
 * another client started, with its first streamed message) and ends on `session_alert`,
 * `session_activity_changed {idle}` or `error_event`. The deltas of text parts make the answer: each
 * `part_start` says its part's type, and a delta counts by the type of the part it names (see
 * {@link deltaKind}); every `message_end` (one per LLM response) adds its usage and cost.
 */
export class TurnStream {
  readonly #facts: TurnFacts;
  readonly #maxAnswerChars: number;
  #turn = 0;
  #open = false;
  #text: BoundedText;
  #usage: Usage | undefined;
  #finish: string | undefined;
  readonly #toolNames = new Map<string, string>();
  /** The type (snake_case) of every part announced by `part_start` in this turn, by part id. */
  readonly #partTypes = new Map<string, string>();

  constructor(facts: TurnFacts, maxAnswerChars: number) {
    this.#facts = facts;
    this.#maxAnswerChars = maxAnswerChars;
    this.#text = new BoundedText(maxAnswerChars);
  }

  get open(): boolean {
    return this.#open;
  }

  /** The current (or last) turn's number; turns count from 1. */
  get turn(): number {
    return this.#turn;
  }

  begin(): void {
    this.#turn++;
    this.#open = true;
    this.#text = new BoundedText(this.#maxAnswerChars);
    this.#usage = undefined;
    this.#finish = undefined;
    this.#toolNames.clear();
    this.#partTypes.clear();
    this.#facts.turnStarted(this.#turn);
    this.#facts.event({ type: 'turn-started', turn: this.#turn });
  }

  /** One streaming message (see {@link TURN_MESSAGES}) of the open turn. */
  take(message: MewMessage): void {
    switch (message.type) {
      case 'provider': {
        const event = message['event'] as JsonObject;
        if (event['type'] === 'part_start') this.#notePart(event['part']);
        const delta = event['type'] === 'part_delta' ? deltaKind(event, this.#partTypes.get(event['part_id'] as string)) : undefined;
        if (delta === 'answer') this.#text.append(event['delta'] as string);
        if (event['type'] === 'message_end') {
          this.#finish = stringField(event, 'finish') ?? this.#finish;
          const usage = usageOf(event);
          if (usage !== undefined) addUsage((this.#usage ??= {}), usage);
        }
        return this.#facts.event(providerDraft(event, delta));
      }
      case 'tool_start':
        this.#toolNames.set(message['call_id'] as string, toolNameOf(message));
        return this.#facts.event(toolStartDraft(message));
      case 'tool_end':
        return this.#facts.event(toolEndDraft(message, this.#toolNames.get(message['call_id'] as string) ?? 'tool'));
      case 'tool_progress':
        return this.#facts.event(passthrough(message, stringField(message, 'chunk')));
      case 'part_updated':
        return this.#facts.event(passthrough(message));
      default:
        return this.#facts.event(subagentDraft(message));
    }
  }

  /** Remembers a `part_start`'s part type (either tag spelling) by its id. */
  #notePart(part: JsonValue | undefined): void {
    if (!isObject(part) || typeof part['id'] !== 'string') return;
    const type = snakeTag(part['type']);
    if (type !== undefined) this.#partTypes.set(part['id'], type);
  }

  /** Ends the open turn: reports it (stop reason: mew's last `finish`, `aborted`, `error`) and hands back what it left. */
  end(how: StreamEnd, error?: string): EndedTurn {
    this.#open = false;
    const usage = this.#usage;
    const stopReason = how === 'completed' ? (this.#finish ?? 'end_turn') : how === 'cancelled' ? 'aborted' : 'error';
    const answer = how === 'completed' ? this.#text.take() : undefined;
    this.#facts.turnCompleted(this.#turn, stopReason, usage, answer?.truncated === false ? answer.text : undefined);
    this.#facts.event({ type: 'turn-complete', turn: this.#turn, stopReason, ...(usage === undefined ? {} : { usage }), ...(error === undefined ? {} : { error }) });
    return { answer, usage };
  }
}
