// A run's journal: listens to its public handle and writes what the caller saw, bounded, without its secrets.
import type { Run } from '../run/handle.js';
import type { Outcome } from '../protocol/index.js';
import { utf8Prefix } from '../text/utf8.js';
import { JOURNAL_VERSION } from './entries.js';
import type { JournalEntry, JournalOutcome, JournalStart } from './entries.js';
import type { JournalFile } from './journal-file.js';

/** What the journal's first line says about the run. */
export type JournalRunInfo = Pick<JournalStart, 'runId' | 'protocol' | 'command' | 'attached'>;

/** Room kept for the last lines (the truncation note and the outcome) once the rest is cut. */
const tailRoomOf = (maxBytes: number): number => Math.min(Math.floor(maxBytes / 4), 1024 * 1024);
/** What stands in for a secret. */
const REDACTED = '[redacted]';
/** The outcome's fields cut, in this order, when the outcome line does not fit. */
const CUTTABLE = ['finalText', 'outputTail'] as const;

/**
 * Writes `run`'s journal to `file` until the run's outcome, then closes it (synchronously, in the
 * outcome listener, so the file is whole once `run.outcome` resolves). `secrets` (a daemon's token)
 * are replaced wherever they appear, in any line.
 */
export function recordRun(run: Run, file: JournalFile, info: JournalRunInfo, secrets: readonly string[]): void {
  const started = Date.now();
  const at = () => Date.now() - started;
  const hidden = secrets.filter((secret) => secret !== '').flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]);
  const redact = (line: string) => hidden.reduce((text, secret) => text.split(secret).join(REDACTED), line);
  const room = file.maxBytes - tailRoomOf(file.maxBytes);
  let leftOut = 0;

  const write = (entry: JournalEntry) => {
    if (leftOut > 0) {
      leftOut++;
      return;
    }
    const line = redact(JSON.stringify(entry));
    if (file.bytes + Buffer.byteLength(line) + 1 <= room) return file.append(line);
    leftOut = 1;
    const firstLeftOut = entry.kind === 'event' ? `event ${entry.event.type}` : entry.kind;
    file.append(JSON.stringify({ kind: 'truncated', at: at(), maxBytes: file.maxBytes, firstLeftOut } satisfies JournalEntry));
  };

  write({ kind: 'start', at: 0, journal: JOURNAL_VERSION, startedAt: new Date(started).toISOString(), ...info });
  run.on('event', (event) => write({ kind: 'event', at: at(), event }));
  run.on('control', ({ type, ...sent }) => write({ kind: 'control', at: at(), control: type, ...sent }));
  run.on('ack', ({ delivery: _delivery, ...ack }, control, origin) => write({ kind: 'ack', at: at(), control, origin, ...ack }));
  run.on('delivery', (seq, delivery) => write({ kind: 'delivery', at: at(), seq, delivery }));
  run.on('state', (state, previous) => write({ kind: 'state', at: at(), state, previous }));
  run.on('kill', (step) => write({ kind: 'kill', at: at(), step }));
  run.once('outcome', (outcome) => {
    file.append(outcomeLine(outcome, at(), leftOut, file.maxBytes - file.bytes - 1, redact));
    file.close();
    if (file.failure !== undefined) process.emitWarning(file.failure, { code: 'SUBVISOR_JOURNAL' });
  });
}

/** The outcome line, its answer (then its output tail) cut at a character boundary when it would not fit in `room` bytes. */
function outcomeLine(outcome: Outcome, at: number, leftOut: number, room: number, redact: (line: string) => string): string {
  const entry: JournalOutcome = { kind: 'outcome', at, outcome: { ...outcome }, leftOut };
  let line = redact(JSON.stringify(entry));
  for (const field of CUTTABLE) {
    const text = entry.outcome[field];
    const excess = Buffer.byteLength(line) - room;
    if (excess <= 0 || text === undefined) continue;
    const bytes = Buffer.byteLength(text);
    // JSON escapes can make the text longer in the line than in bytes: cut by the excess, then again if need be.
    let kept = Math.max(0, bytes - excess);
    do {
      entry.outcome[field] = utf8Prefix(text, kept);
      entry.cut = { ...entry.cut, [field]: bytes };
      line = redact(JSON.stringify(entry));
      kept = Math.max(0, kept - (Buffer.byteLength(line) - room));
    } while (Buffer.byteLength(line) > room && kept > 0);
  }
  return line;
}
