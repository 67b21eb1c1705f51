// The `journal` option: checked with the other options, its file opened before a run starts, and the run recorded into it.
import { join } from 'node:path';
import { JournalFile } from '../journal/journal-file.js';
import { recordRun } from '../journal/run-journal.js';
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';
import type { Run } from '../run/handle.js';
import { refuseNul } from './option-checks.js';
import type { JournalOptions } from './options.js';

/** The journal's directory under `stateDir` when `journal: true`. */
export const JOURNAL_DIR_NAME = 'subvisor-journals';
/** Default and least `maxBytes` of a journal. */
export const JOURNAL_DEFAULTS = { maxBytes: 16 * 1024 * 1024, minBytes: 64 * 1024 } as const;

/** `journal: true | string | { dir, maxBytes }` after its checks; undefined when there is none. */
export function resolveJournal(value: unknown, stateDir: string): ResolvedRunOptions['journal'] {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { dir: join(stateDir, JOURNAL_DIR_NAME), maxBytes: JOURNAL_DEFAULTS.maxBytes };
  const options: JournalOptions = typeof value === 'string' ? { dir: value } : (value as JournalOptions);
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('options.journal must be true, a directory, or { dir?, maxBytes? }');
  }
  for (const key of Object.keys(options)) {
    if (key !== 'dir' && key !== 'maxBytes') throw new TypeError(`options.journal.${key} is not an option of the journal (dir, maxBytes)`);
  }
  const { dir = join(stateDir, JOURNAL_DIR_NAME), maxBytes = JOURNAL_DEFAULTS.maxBytes } = options;
  if (typeof dir !== 'string' || dir === '') throw new TypeError('options.journal.dir must be a non-empty string');
  refuseNul('journal.dir', dir);
  if (typeof maxBytes !== 'number' || !Number.isSafeInteger(maxBytes) || maxBytes < JOURNAL_DEFAULTS.minBytes) {
    throw new RangeError(`options.journal.maxBytes must be an integer >= ${JOURNAL_DEFAULTS.minBytes}`);
  }
  return { dir, maxBytes };
}

/** Opens the run's journal file (throwing a JournalError when it cannot), or undefined without a journal. */
export function openJournal(resolved: ResolvedRunOptions): JournalFile | undefined {
  return resolved.journal === undefined ? undefined : new JournalFile(resolved.journal.dir, resolved.runId, resolved.journal.maxBytes);
}

/** Records `run` into `file`: the first line names the run (never its arguments or environment), the token is redacted. */
export function journalRun(run: Run, file: JournalFile, resolved: ResolvedRunOptions): void {
  const info = { runId: resolved.runId, protocol: resolved.protocol, command: resolved.command };
  const secrets = resolved.connection?.token === undefined ? [] : [resolved.connection.token];
  recordRun(run, file, resolved.attach === undefined ? info : { ...info, attached: true }, secrets);
}
