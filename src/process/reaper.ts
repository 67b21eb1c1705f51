// The watchdog's second stage, run once the parent is gone: the kill ladder over every registered tree (a durable one once its lease runs out), then their run directories.
import { lstatSync, readFileSync, rmdirSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { removeScratch } from './confinement.js';
import { isLiveHolder, readLease } from './lease.js';
import { ProcessTree } from './process-tree.js';
import type { WatchEntry, WatchedFiles } from './watchdog.js';

/** How often a ladder step checks whether the tree is gone. */
const POLL_MS = 25;
/** After SIGKILL, how long to wait for the tree to disappear before removing the files anyway. */
const AFTER_KILL_WAIT_MS = 5000;
/** How often a durable run's lease is read while the reaper waits for it to run out (or be taken). */
const LEASE_POLL_MS = 500;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitGone(tree: ProcessTree, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (tree.isGone()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
}

/**
 * Removes the run's files and then their directory if that left it empty: only when the directory is a
 * real directory (not a link) owned by this user, and only the files listed, each inside it (unlink
 * removes a link itself, never what it points to). Anything else in the directory is not ours: it stays.
 */
function removeWatchedFiles({ dir, files }: WatchedFiles): void {
  try {
    const stat = lstatSync(dir);
    if (!stat.isDirectory() || stat.uid !== process.getuid?.()) return;
  } catch {
    return; // already removed
  }
  for (const file of files) {
    if (dirname(file) !== dir) continue;
    try {
      unlinkSync(file);
    } catch {
      // already removed
    }
  }
  try {
    rmdirSync(dir);
  } catch {
    // not empty: what is left is not ours
  }
}

/**
 * The parent died without ending this run: nobody will send it a cancel. SIGTERM the tree (the group,
 * its descendants by ppid, everything carrying the marker; never a pid whose start time changed), give
 * it the run's grace, SIGKILL what is left, then remove the run directory.
 */
async function reap(entry: WatchEntry): Promise<void> {
  if (entry.lease !== undefined && !(await leaseRunsOut(entry.lease))) return;
  const tree = new ProcessTree(entry.root, entry.marker, entry.rootStart);
  tree.rootExited(); // not our child: without /proc, walk from it only while its group exists
  tree.sweep();
  if (tree.alive().length > 0) {
    tree.signal('SIGTERM');
    if (!(await waitGone(tree, entry.graceMs))) {
      tree.signal('SIGKILL');
      await waitGone(tree, AFTER_KILL_WAIT_MS);
    }
  }
  if (entry.ownFiles !== undefined) removeWatchedFiles(entry.ownFiles);
  if (entry.scratchDir !== undefined) removeScratch(entry.scratchDir);
}

/**
 * A durable run's parent died: it is reaped only once the lease the parent held runs out, and not at
 * all when another live parent took the lease meanwhile (it was re-attached). True: reap it.
 */
async function leaseRunsOut(lease: NonNullable<WatchEntry['lease']>): Promise<boolean> {
  for (;;) {
    const current = readLease(lease.dir);
    // No lease to honour (its directory is gone or the file was mangled): nothing protects the tree.
    if (current === undefined) return true;
    const takenOver = current.holder !== lease.holder || current.holderStart !== lease.holderStart;
    if (takenOver && isLiveHolder(current.holder, current.holderStart)) return false;
    const left = current.until - Date.now();
    if (left <= 0) return true;
    await sleep(Math.min(left + 10, LEASE_POLL_MS));
  }
}

/** One registration per line, as the watchdog kept them: `<id> <json>`. A garbled line is skipped. */
function parse(input: string): WatchEntry[] {
  const entries: WatchEntry[] = [];
  for (const line of input.split('\n')) {
    const space = line.indexOf(' ');
    if (space < 0) continue;
    try {
      const entry = JSON.parse(line.slice(space + 1)) as WatchEntry;
      if (Number.isInteger(entry.root) && entry.root > 1) entries.push(entry);
    } catch {
      // a line cut short when the parent died mid-write: nothing usable in it
    }
  }
  return entries;
}

await Promise.all(parse(readFileSync(0, 'utf8')).map(reap));
