// A durable run's lease: which live process holds the run (a 0600 file in its directory), taken once, renewed while held, free once the holder is gone.
import { closeSync, constants, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readRow } from './proc-table.js';
import { writeWholeFile } from './whole-file.js';

/** The lease file's name, in the run's directory. */
export const LEASE_FILE = 'lease.json';
/** Held while a parent takes the lease: two parents attaching at once cannot both take it. */
const LOCK_FILE = 'lease.lock';
/** A lock older than this was left by a parent that died while taking the lease: it is broken. */
const STALE_LOCK_MS = 10_000;

/** What the lease file says. */
export interface LeaseRecord {
  /** The holding parent's pid and its start time (a later process with the same pid is not the holder). */
  holder: number;
  holderStart: string;
  /** Epoch ms until which the lease holds without a renewal. */
  until: number;
}

/** Why a lease could not be taken. */
export class LeaseHeldError extends Error {
  readonly holder: number;
  constructor(holder: number, message: string) {
    super(message);
    this.name = 'LeaseHeldError';
    this.holder = holder;
  }
}

/** The start time of this process, as /proc tells it ('' where there is no /proc). */
export function ownStart(): string {
  return readRow(process.pid)?.start ?? '';
}

/** Whether `pid` with that start time is still a live process (a zombie is not). */
export function isLiveHolder(pid: number, start: string): boolean {
  const row = readRow(pid);
  if (row === undefined) {
    // No /proc (or the process is gone): a signal 0 tells whether some process has the pid.
    if (start !== '') return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  return !row.zombie && (start === '' || row.start === start);
}

/** The lease of the run in `dir`, or undefined when there is none (or it cannot be read). */
export function readLease(dir: string): LeaseRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(join(dir, LEASE_FILE), 'utf8')) as Partial<LeaseRecord>;
    if (typeof record.holder !== 'number' || typeof record.holderStart !== 'string' || typeof record.until !== 'number') return undefined;
    return { holder: record.holder, holderStart: record.holderStart, until: record.until };
  } catch {
    return undefined;
  }
}

/** Writes the lease whole (a reader never sees half of it). */
function writeLease(dir: string, record: LeaseRecord): void {
  writeWholeFile(dir, LEASE_FILE, JSON.stringify(record));
}

/**
 * Takes the lease of the run in `dir` for this process, for `leaseMs`: refused (LeaseHeldError) while a
 * live process holds it, this one included (one handle per run), whether or not its lease has run out
 * (a holder whose event loop was stuck has not let go). A holder that is gone frees it at once.
 */
export function takeLease(dir: string, leaseMs: number): LeaseRecord {
  const lock = join(dir, LOCK_FILE);
  let fd: number;
  try {
    fd = openSync(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    if (!lockIsStale(lock)) throw new LeaseHeldError(0, 'another parent is taking this run\'s lease right now');
    rmSync(lock, { force: true });
    fd = openSync(lock, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  }
  try {
    const current = readLease(dir);
    if (current !== undefined && isLiveHolder(current.holder, current.holderStart)) {
      const who = current.holder === process.pid ? 'this process' : `process ${current.holder}`;
      throw new LeaseHeldError(current.holder, `${who} holds this run's lease (it is attached to it)`);
    }
    const record = { holder: process.pid, holderStart: ownStart(), until: Date.now() + leaseMs };
    writeLease(dir, record);
    return record;
  } finally {
    closeSync(fd);
    rmSync(lock, { force: true });
  }
}

function lockIsStale(lock: string): boolean {
  try {
    return Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS;
  } catch {
    return true; // gone meanwhile: nothing holds it
  }
}

/**
 * Keeps a lease this process took: renewed every third of `leaseMs` on an unref'd timer (it never keeps
 * the process alive: a parent that exits lets the lease run out, and the watchdog's reaper waits for
 * that before it reaps the run).
 */
export class LeaseKeeper {
  readonly #dir: string;
  readonly #leaseMs: number;
  readonly #timer: NodeJS.Timeout;

  constructor(dir: string, leaseMs: number, held: LeaseRecord) {
    this.#dir = dir;
    this.#leaseMs = leaseMs;
    this.#timer = setInterval(() => this.#renew(held), Math.max(50, Math.floor(leaseMs / 3)));
    this.#timer.unref();
  }

  /** Stops renewing (the run ended: its files, the lease among them, are removed by whoever removes its directory). */
  stop(): void {
    clearInterval(this.#timer);
  }

  #renew(held: LeaseRecord): void {
    try {
      writeLease(this.#dir, { ...held, until: Date.now() + this.#leaseMs });
    } catch {
      // The directory is gone (the run ended) or the disk refuses: the lease simply runs out.
    }
  }
}
