// The assistant's text as one stream of chunks: deltas as they arrive, plus whatever a whole text block adds.
import type { RunEvent } from './types/index.js';

/**
 * Turns run events into the assistant's text, never doubled and never missing. A child may stream a text
 * block as `assistant-text-delta` events and then send the whole block as `assistant-text` (Fen does for
 * streamed turns), or send only the whole `assistant-text`. The rule, per text block (a turn and a
 * `contentIndex`): every delta is yielded as it arrives; when the whole text arrives, only the part the deltas
 * did not already give is yielded (all of it when no delta came). If the whole text does not begin with what
 * the deltas gave (a child that cut or changed its deltas), the deltas cannot be taken back: nothing more is
 * yielded for that block. A block ends with its whole text, its `assistant-stream-end`, or its turn.
 */
export class TextAssembler {
  /** What the deltas of each open block gave so far, by content index. */
  readonly #streamed = new Map<number, string>();

  /** The text chunks `event` adds (none for most events). */
  push(event: RunEvent): string[] {
    switch (event.type) {
      case 'assistant-text-delta': {
        if (event.delta === undefined || event.delta === '') return [];
        const index = event.contentIndex ?? 0;
        this.#streamed.set(index, (this.#streamed.get(index) ?? '') + event.delta);
        return [event.delta];
      }
      case 'assistant-text': {
        const index = event.contentIndex ?? 0;
        const streamed = this.#streamed.get(index) ?? '';
        this.#streamed.delete(index);
        const text = event.text ?? '';
        if (!text.startsWith(streamed)) return [];
        const rest = text.slice(streamed.length);
        return rest === '' ? [] : [rest];
      }
      case 'assistant-stream-end':
      case 'turn-started':
      case 'turn-complete':
        this.#streamed.clear();
        return [];
      default:
        return [];
    }
  }
}
