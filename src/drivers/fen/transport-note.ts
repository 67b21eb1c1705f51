// Fen's in-band note of a transport cut, taken out of the agent's text into the event's `transportNote`.
import type { RunEvent } from '../../protocol/index.js';

/**
 * The note Fen's `normalize` appends to a string it cut to the transport bounds, e.g.
 * `\n\n[fen: tool output truncated: kept 4096 sanitized bytes from 102410 input bytes]` (the real child
 * writes "tool output" for assistant text too). It is Fen's, not the agent's words: it must not reach
 * the text stream or the answer.
 */
const FEN_NOTE = /\n*(\[fen: [^\]\n]*\])$/;

/**
 * A text or thinking event the child cut (`transportTruncated`) loses Fen's note from its text, which
 * moves to `transportNote`; every other event is returned as it is. Only cut events are examined.
 */
export function withoutTransportNote(event: RunEvent): RunEvent {
  switch (event.type) {
    case 'assistant-text-delta':
    case 'assistant-thinking-delta': {
      if (event.transportTruncated !== true) return event;
      const split = splitNote(event.delta);
      return split === undefined ? event : { ...event, delta: split.text, transportNote: split.note };
    }
    case 'assistant-text':
    case 'assistant-thinking': {
      if (event.transportTruncated !== true) return event;
      const split = splitNote(event.text);
      return split === undefined ? event : { ...event, text: split.text, transportNote: split.note };
    }
    default:
      return event;
  }
}

function splitNote(text: string | undefined): { text: string; note: string } | undefined {
  if (text === undefined) return undefined;
  const match = FEN_NOTE.exec(text);
  return match === null ? undefined : { text: text.slice(0, match.index), note: match[1]! };
}
