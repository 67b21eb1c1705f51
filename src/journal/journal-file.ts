// A journal's file: a private directory and an exclusive 0600 file in it, written in batches, bounded, closed synchronously at the end.
import { createHash } from 'node:crypto';
import { closeSync, constants, lstatSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Why a journal could not be opened: thrown by spawnRun/connectRun/attachRun before anything starts. */
export class JournalError extends Error {
  /** The directory the journal was to be written in. */
  readonly dir: string;
  constructor(dir: string, message: string) {
    super(message);
    this.name = 'JournalError';
    this.dir = dir;
  }
}

/** Flags of a file that must not exist yet and must not be reached through a link. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/** A run id that can name a file as it is. */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** How many `<name>.<n>.jsonl` a run id may have (a run re-attached, or an id used again). */
const MAX_SUFFIX = 1000;

/** The file name a run id gets: itself when it can name a file, else a digest (the id is in the file's first line). */
export function journalNameOf(runId: string): string {
  return SAFE_NAME.test(runId) ? runId : `run-${createHash('sha256').update(runId).digest('hex').slice(0, 20)}`;
}

/**
 * Makes `dir` (0700) when missing, and checks that it is private: a real directory (not a link) of this
 * user that nobody else can read or write. A journal holds the agent's whole conversation.
 */
function privateDirectory(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new JournalError(dir, `cannot create the journal directory ${dir}: ${(error as Error).message}`);
  }
  const stat = lstatSync(dir);
  if (!stat.isDirectory()) throw new JournalError(dir, `the journal directory ${dir} is not a directory (a link or a file)`);
  if (process.getuid !== undefined && stat.uid !== process.getuid()) throw new JournalError(dir, `the journal directory ${dir} belongs to another user`);
  if ((stat.mode & 0o077) !== 0) {
    throw new JournalError(dir, `the journal directory ${dir} is open to other users (mode ${(stat.mode & 0o777).toString(8)}): make it private (chmod 700) or name another`);
  }
}

/**
 * An append-only JSONL file of at most `maxBytes`. Lines are gathered and written once per turn of the
 * event loop (one write for a flood of events); `close()` writes what is left and closes the file
 * synchronously, so the file is whole by the time the run's outcome resolves. A write that fails
 * (the disk is full) stops the journal: `failure` says why, and nothing more is written.
 */
export class JournalFile {
  readonly path: string;
  readonly maxBytes: number;
  #fd: number | undefined;
  #pending: string[] = [];
  #flush: NodeJS.Immediate | undefined;
  /** Bytes written or pending. */
  #bytes = 0;
  #failure: string | undefined;

  constructor(dir: string, runId: string, maxBytes: number) {
    privateDirectory(dir);
    const name = journalNameOf(runId);
    for (let n = 1; n <= MAX_SUFFIX; n++) {
      const path = join(dir, n === 1 ? `${name}.jsonl` : `${name}.${n}.jsonl`);
      try {
        this.#fd = openSync(path, CREATE_NEW, 0o600);
        this.path = path;
        this.maxBytes = maxBytes;
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw new JournalError(dir, `cannot create the journal file ${path}: ${(error as Error).message}`);
      }
    }
    throw new JournalError(dir, `${dir} holds ${MAX_SUFFIX} journals of run ${JSON.stringify(runId)} already`);
  }

  /** Bytes the journal holds (written and pending). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Why writing stopped, when a write failed. */
  get failure(): string | undefined {
    return this.#failure;
  }

  /** Queues one line (its newline added); the caller keeps within `maxBytes` (see RunJournal). */
  append(line: string): void {
    if (this.#fd === undefined) return;
    this.#pending.push(line + '\n');
    this.#bytes += Buffer.byteLength(line) + 1;
    this.#flush ??= setImmediate(() => {
      this.#flush = undefined;
      this.#write();
    });
  }

  /** Writes what is pending and closes the file; idempotent. */
  close(): void {
    if (this.#flush !== undefined) clearImmediate(this.#flush);
    this.#flush = undefined;
    this.#write();
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  /** Closes and removes the file, for a run that never started. */
  discard(): void {
    this.close();
    rmSync(this.path, { force: true });
  }

  #write(): void {
    if (this.#fd === undefined || this.#pending.length === 0) return;
    const data = Buffer.from(this.#pending.join(''));
    this.#pending = [];
    try {
      let offset = 0;
      while (offset < data.length) offset += writeSync(this.#fd, data, offset);
    } catch (error) {
      this.#failure = `writing the journal ${this.path} failed: ${(error as Error).message}`;
      closeSync(this.#fd);
      this.#fd = undefined;
    }
  }
}
