// One Codex turn as the session follows it: its id, who started it, its items (text blocks, tools, file changes), its answer, usage, error and the steers waiting to reach it.
import type { JsonObject, JsonValue, Usage } from '../../wire/index.js';
import { addUsage, toUsage } from '../../wire/index.js';
import { isObject, stringField } from '../shared/json-kinds.js';

/** Who asked for a turn: the control (its ref) and what it was, or nobody (Codex began it). */
export interface TurnOrigin {
  ref: number | undefined;
  kind: 'task' | 'prompt' | 'steer' | 'follow-up' | 'final';
  text: string;
  /** A follow-up that waited for the turn before it: accepted already, so its turn only delivers it. */
  held?: true;
}

/** A steer or follow-up and its ref, while it waits to reach the agent. */
export interface HeldInput {
  ref: number;
  text: string;
}

/** How a turn ended, in Codex's words. */
export type TurnStatus = 'completed' | 'interrupted' | 'failed';

export class TurnRecord {
  /** Codex's turn id: undefined while `turn/start`'s answer is awaited. */
  id: string | undefined;
  /** subvisor's number of the turn (from 1), given once it is open. */
  number = 0;
  readonly origin: TurnOrigin | undefined;
  /** Steers sent while the turn's id was not known yet: `turn/steer` needs it. */
  readonly heldSteers: HeldInput[] = [];
  /** Steers Codex accepted (`turn/steer` answered), until their user message shows in the turn. */
  readonly acceptedSteers: HeldInput[] = [];
  /** An interrupt asked before the turn's id was known. */
  interruptWhenOpen = false;
  /** The text of the latest completed agent message (the turn's answer, when it completes). */
  lastMessage: string | undefined;
  /** The error Codex reported for the turn (`error` without `willRetry`), the model's own words. */
  error: string | undefined;
  #usage: Usage | undefined;
  /** Text and reasoning items by id: their block index in the turn (a streamed block's deltas name it). */
  readonly #blocks = new Map<string, number>();
  /** Tool items whose tool-call was published. */
  readonly #toolsStarted = new Set<string>();
  /** The files each `fileChange` item announced (its approval request names the item only). */
  readonly #fileChanges = new Map<string, JsonValue>();
  /** Whether the user message that started the turn was seen (a later one is a steer). */
  promptSeen = false;

  constructor(origin: TurnOrigin | undefined) {
    this.origin = origin;
  }

  /** The block index of a text or reasoning item (a new one for an item not seen before). */
  blockOf(itemId: string): number {
    let index = this.#blocks.get(itemId);
    if (index === undefined) {
      index = this.#blocks.size;
      this.#blocks.set(itemId, index);
    }
    return index;
  }

  /** A tool item started (true) or was already announced (false). */
  toolStarted(itemId: string): boolean {
    if (this.#toolsStarted.has(itemId)) return false;
    this.#toolsStarted.add(itemId);
    return true;
  }

  rememberFileChanges(itemId: string, changes: JsonValue | undefined): void {
    if (changes !== undefined) this.#fileChanges.set(itemId, changes);
  }

  fileChanges(itemId: string): JsonValue | undefined {
    return this.#fileChanges.get(itemId);
  }

  /** A model call's usage, counted into the turn's. */
  addUsage(usage: Usage): void {
    this.#usage = addUsage(this.#usage ?? {}, usage);
  }

  get usage(): Usage | undefined {
    return this.#usage;
  }

  /**
   * The accepted steer a user message is, by its text (Codex adds a steer to the turn as a user message),
   * taken off the list; undefined when it is none of them.
   */
  takeSteer(text: string | undefined): HeldInput | undefined {
    if (text === undefined) return undefined;
    const index = this.acceptedSteers.findIndex((steer) => steer.text === text);
    return index < 0 ? undefined : this.acceptedSteers.splice(index, 1)[0];
  }

  /** The answer of a completed turn: its latest agent message, or the one `turn/completed` lists (`turn.items`). */
  answerFrom(turn: JsonObject): string | undefined {
    if (this.lastMessage !== undefined) return this.lastMessage;
    const items = turn['items'];
    if (!Array.isArray(items)) return undefined;
    for (let index = items.length - 1; index >= 0; index--) {
      const item = items[index];
      if (isObject(item) && item['type'] === 'agentMessage') return stringField(item, 'text');
    }
    return undefined;
  }
}

/**
 * The usage of one `thread/tokenUsage/updated`: its `last` (the last model request's counts), or undefined when
 * its `total` is the one already counted (0.169.0 sends the same figures again, after a steer cut a response
 * short). `total` is the thread's since it began, resumed threads included, so it is only compared, not summed.
 */
export class UsageReader {
  #lastTotal: string | undefined;

  read(tokenUsage: JsonObject): Usage | undefined {
    const total = tokenUsage['total'];
    const last = tokenUsage['last'];
    if (!isObject(total) || !isObject(last)) return undefined;
    const signature = ['totalTokens', 'inputTokens', 'outputTokens', 'cachedInputTokens'].map((name) => String(total[name])).join('/');
    if (signature === this.#lastTotal) return undefined;
    this.#lastTotal = signature;
    return toUsage(last);
  }
}
