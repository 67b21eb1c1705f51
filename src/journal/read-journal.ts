// Reading a journal back: its lines checked for the shape every line has, and what the file says about itself.
import { readFileSync } from 'node:fs';
import { JOURNAL_VERSION } from './entries.js';
import type { JournalEntry, JournalOutcome, JournalStart } from './entries.js';

/** A journal read back. */
export interface Journal {
  start: JournalStart;
  /** Every line, the first (`start`) included, in order. */
  entries: JournalEntry[];
  /** The last line, when the run ended while the journal was written (absent: the parent died first). */
  outcome?: JournalOutcome;
  /** True when the journal reached its bound and left lines out. */
  truncated: boolean;
}

const KINDS = new Set(['start', 'event', 'control', 'ack', 'delivery', 'state', 'kill', 'truncated', 'outcome']);

/**
 * Reads the journal at `path` (a file that `journal` wrote). Throws an Error naming the line when a
 * line is not a journal line, or when the file is of another format version. A last line cut short
 * (the parent died in the middle of a write) is left out.
 */
export function readJournal(path: string): Journal {
  const lines = readFileSync(path, 'utf8').split('\n');
  // The text after the last newline is a line still being written (or cut by a crash), not a line.
  lines.pop();
  const entries = lines.map((line, index) => entryOf(line, index + 1, path));
  const start = entries[0];
  if (start?.kind !== 'start') throw new Error(`${path}: not a subvisor journal (its first line is not the start line)`);
  if (start.journal !== JOURNAL_VERSION) throw new Error(`${path}: journal format ${String(start.journal)}, this subvisor reads ${JOURNAL_VERSION}`);
  const last = entries.at(-1);
  return {
    start,
    entries,
    ...(last?.kind === 'outcome' ? { outcome: last } : {}),
    truncated: entries.some((entry) => entry.kind === 'truncated'),
  };
}

function entryOf(line: string, number: number, path: string): JournalEntry {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new Error(`${path}:${number}: not JSON`);
  }
  const entry = parsed as Partial<JournalEntry> | null;
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new Error(`${path}:${number}: not a JSON object`);
  if (typeof entry.kind !== 'string' || !KINDS.has(entry.kind)) throw new Error(`${path}:${number}: no known kind (${JSON.stringify(entry.kind)})`);
  if (typeof entry.at !== 'number' || !Number.isFinite(entry.at)) throw new Error(`${path}:${number}: no time (at)`);
  if (entry.kind === 'event' && (typeof entry.event !== 'object' || entry.event === null || typeof entry.event.type !== 'string')) {
    throw new Error(`${path}:${number}: an event line without an event`);
  }
  return entry as JournalEntry;
}
