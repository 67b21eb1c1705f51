// Fen's in-band note of a transport cut leaves the agent's text for the event's transportNote; nothing else changes.
import { describe, expect, it } from 'vitest';
import { withoutTransportNote } from '../../../../src/drivers/fen/transport-note.js';
import type { RunEvent } from '../../../../src/index.js';

const envelope = { v: 1 as const, seq: 1, run: 'r' };
const NOTE = '[fen: tool output truncated: kept 4096 sanitized bytes from 102410 input bytes]';

describe('withoutTransportNote', () => {
  it('takes the note out of a cut delta, whole text and thinking', () => {
    const cases: RunEvent[] = [
      { ...envelope, type: 'assistant-text-delta', delta: `abc\n\n${NOTE}`, transportTruncated: true },
      { ...envelope, type: 'assistant-thinking-delta', delta: `abc\n\n${NOTE}`, transportTruncated: true },
      { ...envelope, type: 'assistant-text', final: true, text: `abc\n\n${NOTE}`, transportTruncated: true },
      { ...envelope, type: 'assistant-thinking', final: true, text: `abc${NOTE}`, transportTruncated: true },
    ];
    for (const event of cases) {
      const clean = withoutTransportNote(event) as unknown as Record<string, unknown>;
      expect(clean['delta'] ?? clean['text']).toBe('abc');
      expect(clean['transportNote']).toBe(NOTE);
    }
  });

  it('leaves alone an event that was not cut, a cut one without the note, and tool results (the note is tool output there)', () => {
    const uncut: RunEvent = { ...envelope, type: 'assistant-text-delta', delta: `quoting ${NOTE}` };
    const noNote: RunEvent = { ...envelope, type: 'assistant-text-delta', delta: 'abc', transportTruncated: true };
    const tool: RunEvent = { ...envelope, type: 'tool-result', name: 'read', isError: false, result: `x\n\n${NOTE}`, transportTruncated: true };
    for (const event of [uncut, noNote, tool]) expect(withoutTransportNote(event)).toBe(event);
  });
});
