// The assistant's text as one stream of chunks: deltas as they arrive, plus whatever a whole text block or the final answer adds.
import type { Outcome, RunEvent } from '../protocol/index.js';

/**
 * Turns run events into the assistant's text, never doubled. A child may stream a text block as
 * `assistant-text-delta` events and then send the whole block as `assistant-text` (Fen does for streamed
 * turns), or send only the whole `assistant-text`. The rule, per text block (a turn and a `contentIndex`):
 * every delta is yielded as it arrives; when the whole text arrives, only the part the deltas did not
 * already give is yielded (all of it when no delta came). If the whole text does not begin with what the
 * deltas gave (a child that cut or changed its deltas), the deltas cannot be taken back: nothing more is
 * yielded for that block. A block ends with its whole text, its `assistant-stream-end`, or its turn.
 * Once the run ended, {@link TextAssembler.remainder} gives what the final answer adds: a block the
 * child's transport cut (Fen's long answers) is completed from the answer read whole.
 */
export class TextAssembler {
  /** What the deltas of each open block gave so far, by content index. */
  readonly #streamed = new Map<number, string>();
  /** What was yielded of the latest block (open or closed): the answer, when it is the last one, begins with it. */
  #latest = '';
  #yielded = false;

  /** The text chunks `event` adds (none for most events). */
  push(event: RunEvent): string[] {
    switch (event.type) {
      case 'assistant-text-delta': {
        if (event.delta === undefined || event.delta === '') return [];
        const index = event.contentIndex ?? 0;
        const block = (this.#streamed.get(index) ?? '') + event.delta;
        this.#streamed.set(index, block);
        return this.#yield(block, event.delta);
      }
      case 'assistant-text': {
        const index = event.contentIndex ?? 0;
        const streamed = this.#streamed.get(index) ?? '';
        this.#streamed.delete(index);
        const text = event.text ?? '';
        if (!text.startsWith(streamed)) return [];
        const rest = text.slice(streamed.length);
        return rest === '' ? [] : this.#yield(text, rest);
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

  /**
   * What the final answer adds to the chunks yielded so far: all of it when no text came at all, the
   * tail when the latest block is a prefix of it (a block cut to the transport bounds), else nothing
   * (the answer is not a continuation of what was streamed: it cannot be added without doubling).
   */
  remainder(answer: string | undefined): string {
    if (answer === undefined) return '';
    if (!this.#yielded) return answer;
    return answer.startsWith(this.#latest) ? answer.slice(this.#latest.length) : '';
  }

  #yield(block: string, chunk: string): string[] {
    this.#latest = block;
    this.#yielded = true;
    return [chunk];
  }
}

/**
 * `run.text()` of any run handle: the chunks of its events, then, once its outcome is in, what the
 * final answer adds ({@link TextAssembler.remainder}).
 */
export async function* textOf(events: AsyncIterable<RunEvent>, outcome: Promise<Outcome>): AsyncGenerator<string, undefined, undefined> {
  const assembler = new TextAssembler();
  for await (const event of events) {
    for (const chunk of assembler.push(event)) yield chunk;
  }
  const rest = assembler.remainder((await outcome).finalText);
  if (rest !== '') yield rest;
  return undefined;
}
