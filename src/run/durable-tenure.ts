// A parent's tenure of a durable run: its record written, its lease taken and renewed, and what the watchdog needs to honour the lease.
import { join } from 'node:path';
import { isLiveHolder, LEASE_FILE, LeaseHeldError, LeaseKeeper, ownStart, readLease, takeLease } from '../process/lease.js';
import { readRow } from '../process/proc-table.js';
import type { WatchEntry } from '../process/watchdog.js';
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';
import { durableOptionsOf, OUTPUT_FILE, RECORD_FILE, writeDurableRecord } from './durable-record.js';
import type { DurableRecord } from './durable-record.js';

/** The child a durable run started, as its record keeps it. */
export type DurableChild = Omit<DurableRecord, 'version' | 'options'>;

/**
 * While this parent holds a durable run: the lease is renewed (unref'd), and the watchdog's entry for
 * the run names the lease, so the parent's death leaves the run to the lease instead of reaping it.
 */
export class DurableTenure {
  readonly #dir: string;
  readonly #keeper: LeaseKeeper;
  readonly #holderStart: string;

  private constructor(dir: string, leaseMs: number, holderStart: string) {
    this.#dir = dir;
    this.#holderStart = holderStart;
    this.#keeper = new LeaseKeeper(dir, leaseMs, { holder: process.pid, holderStart, until: Date.now() + leaseMs });
  }

  /** A durable run just started: its lease is taken and its record written (in that order: a record means a holder). */
  static begin(dir: string, child: DurableChild, options: ResolvedRunOptions, leaseMs: number): DurableTenure {
    const held = takeLease(dir, leaseMs);
    writeDurableRecord(dir, { version: 1, ...child, options: durableOptionsOf(options, leaseMs) });
    return new DurableTenure(dir, leaseMs, held.holderStart);
  }

  /** A durable run re-attached: attachRun took the lease already; it is renewed from now on. */
  static resume(dir: string, leaseMs: number): DurableTenure {
    return new DurableTenure(dir, leaseMs, ownStart());
  }

  /** The path of the child's output (stdout and stderr) in the run's directory. */
  static outputOf(dir: string): string {
    return join(dir, OUTPUT_FILE);
  }

  /** The watchdog's entry with the lease it must honour and the files it must remove besides the channel's. */
  watchEntry(entry: WatchEntry): WatchEntry {
    const files = [RECORD_FILE, LEASE_FILE, OUTPUT_FILE].map((file) => join(this.#dir, file));
    const ownFiles = entry.ownFiles === undefined ? undefined : { dir: entry.ownFiles.dir, files: [...entry.ownFiles.files, ...files] };
    return { ...entry, ...(ownFiles === undefined ? {} : { ownFiles }), lease: { dir: this.#dir, holder: process.pid, holderStart: this.#holderStart } };
  }

  /** The run ended (its directory is removed with it): no more renewals. */
  end(): void {
    this.#keeper.stop();
  }
}

/** Whether a durable run's child is still the one its record names. */
export type ChildState = 'alive' | 'gone' | 'pid-reused';

/** The recorded child's state: gone (or a zombie), alive, or its pid now names another process. */
export function childStateOf(record: DurableRecord): ChildState {
  const row = readRow(record.pid);
  if (row === undefined || row.zombie) return 'gone';
  return record.pidStart !== '' && row.start !== record.pidStart ? 'pid-reused' : 'alive';
}

/**
 * Takes a durable run's lease for this process (attachRun), or says which live process holds it.
 * Returns undefined when taken.
 */
export function takeOver(dir: string, leaseMs: number): { holder: number; reason: string } | undefined {
  try {
    takeLease(dir, leaseMs);
    return undefined;
  } catch (error) {
    if (error instanceof LeaseHeldError) return { holder: error.holder, reason: error.message };
    throw error;
  }
}

/** The live process holding the run's lease, or undefined when nobody does (it is free to take). */
export function leaseHolderOf(dir: string): number | undefined {
  const lease = readLease(dir);
  return lease !== undefined && isLiveHolder(lease.holder, lease.holderStart) ? lease.holder : undefined;
}
