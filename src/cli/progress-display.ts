// How supervise shows progress on stderr (a live line on a terminal, plain notes otherwise, nothing with --quiet), with the live line's renderer loaded only when a terminal gets one.
import type { Writable } from 'node:stream';
import type { createLogUpdate } from 'log-update';

export type ProgressMode = 'live' | 'plain' | 'quiet';

/** One block of text drawn and redrawn in place (log-update's). */
export type LiveLine = ReturnType<typeof createLogUpdate>;

/** The mode, and in `live` mode what draws the line. */
export interface ProgressDisplay {
  mode: ProgressMode;
  liveLine?: (stream: Writable) => LiveLine;
}

/**
 * A terminal and no --quiet: a live line; no terminal: notes; --quiet: no progress (messages still show).
 * log-update and its terminal-width tables are loaded for the live line only: they take about a fifth of
 * supervise's start-up, which a pipeline or a --quiet run does not pay.
 */
export async function progressDisplay(stderrIsTTY: boolean, quiet: boolean): Promise<ProgressDisplay> {
  if (quiet) return { mode: 'quiet' };
  if (!stderrIsTTY) return { mode: 'plain' };
  const { createLogUpdate } = await import('log-update');
  return { mode: 'live', liveLine: (stream) => createLogUpdate(stream as NodeJS.WriteStream, { showCursor: true }) };
}
