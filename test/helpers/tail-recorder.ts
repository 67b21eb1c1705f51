// Collects what a LineTail reports, for the channel tests that drive one by hand.
import type { LineTailHandlers } from '../../src/channel/index.js';

/** The lines a tail handed on, and its other reports as short strings, in order. */
export function tailRecorder() {
  const lines: string[] = [];
  const reports: string[] = [];
  const handlers: LineTailHandlers = {
    line: (text) => lines.push(text),
    oversize: () => reports.push('oversize'),
    incomplete: (bytes) => reports.push(`incomplete ${bytes}`),
    truncated: (size, offset) => reports.push(`truncated ${size} < ${offset}`),
    replaced: (reason) => reports.push(`replaced: ${reason}`),
    failed: (error) => reports.push(`failed ${error.message}`),
  };
  return { lines, reports, handlers };
}
