// Finds and signals a process tree: the child's process group plus every descendant seen while it lived.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** One row of the process table. */
interface ProcessRow {
  pid: number;
  ppid: number;
  pgrp: number;
  /** Start time (clock ticks since boot; empty when unknown): tells a pid from a later reuse of it. */
  start: string;
  zombie: boolean;
}

type ProcessTable = Map<number, ProcessRow>;

let hasProcFs: boolean | undefined;

/** Reads /proc/<pid>/stat of every process (Linux), or asks `ps` where there is no /proc. Never throws. */
function scanProcesses(): ProcessTable {
  hasProcFs ??= (() => {
    try {
      readFileSync('/proc/self/stat');
      return true;
    } catch {
      return false;
    }
  })();
  return hasProcFs ? scanProcFs() : scanPs();
}

/** The /proc entries that are processes (their names start with a digit); none when /proc cannot be read. */
function procPidEntries(): string[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries.filter((entry) => {
    const first = entry.charCodeAt(0);
    return first >= 48 && first <= 57;
  });
}

function scanProcFs(): ProcessTable {
  const table: ProcessTable = new Map();
  for (const entry of procPidEntries()) {
    const row = readRow(Number(entry));
    if (row !== undefined) table.set(row.pid, row); // undefined: it ended while we looked
  }
  return table;
}

function scanPs(): ProcessTable {
  const table: ProcessTable = new Map();
  let output: string;
  try {
    output = execFileSync('ps', ['-A', '-o', 'pid=', '-o', 'ppid=', '-o', 'pgid=', '-o', 'stat='], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return table;
  }
  for (const line of output.split('\n')) {
    const [pid, ppid, pgrp, state] = line.trim().split(/\s+/);
    if (pid === undefined || ppid === undefined || pgrp === undefined) continue;
    table.set(Number(pid), {
      pid: Number(pid),
      ppid: Number(ppid),
      pgrp: Number(pgrp),
      start: '',
      zombie: (state ?? '').startsWith('Z'),
    });
  }
  return table;
}

/**
 * Pids of live processes whose environment contains `marker` (`NAME=value`). Every descendant inherits
 * the environment unless it scrubs it, so this finds orphans that hang off PID 1 as well. Only our own
 * processes' environ files are readable, which is exactly the set we may signal. Linux only; never throws.
 */
function scanMarked(marker: string): number[] {
  if (!hasProcFs) return [];
  const needle = Buffer.from(`\0${marker}\0`);
  const first = Buffer.from(`${marker}\0`);
  const found: number[] = [];
  for (const entry of procPidEntries()) {
    let environ: Buffer;
    try {
      environ = readFileSync(`/proc/${entry}/environ`);
    } catch {
      continue; // not ours, or gone
    }
    if (environ.indexOf(needle) !== -1 || environ.subarray(0, first.length).equals(first)) found.push(Number(entry));
  }
  return found;
}

/** One process's row from /proc/<pid>/stat; undefined when it is gone (or there is no /proc). */
function readRow(pid: number): ProcessRow | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // The command name may contain spaces and parentheses: fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    pid,
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    start: fields[19] ?? '',
    zombie: fields[0] === 'Z' || fields[0] === 'X',
  };
}

/**
 * Direct children of `pid` from /proc/<pid>/task/<tid>/children (one small read per thread instead of
 * a scan of the whole machine); undefined where the kernel does not offer that file.
 */
function childrenOf(pid: number): number[] | undefined {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const children: number[] = [];
  for (const tid of tasks) {
    let list: string;
    try {
      list = readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && tid === String(pid)) return undefined;
      continue;
    }
    for (const child of list.split(' ')) if (child !== '' && child !== '\n') children.push(Number(child));
  }
  return children;
}

/** Whether any process (zombies included) is still in process group `pgid`. */
function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Sends `signal` to a pid or (negative) group; true when it reached something. Never throws. */
function send(target: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(target, signal);
    return true;
  } catch {
    return false; // ESRCH (already gone) or EPERM (not ours any more)
  }
}

/**
 * The tree of a child started as a process-group leader. It remembers every descendant it has seen
 * (with its start time, so a reused pid is never signalled): a descendant that called setsid leaves
 * the group, and once its parent died it hangs off PID 1 where no walk from the root finds it.
 */
export class ProcessTree {
  readonly root: number;
  readonly #known = new Map<number, string>();
  readonly #marker: string | undefined;
  /** When `isGone()` last paid for a whole-table check. */
  #lastFullCheck = 0;

  /** `marker` (`NAME=value`, unique to this tree) is an environment entry every descendant inherited. */
  constructor(root: number, marker?: string) {
    this.root = root;
    this.#marker = marker;
    this.#known.set(root, '');
  }

  /**
   * Adds every process carrying the tree's environment marker (even orphans of a dead parent), then
   * walks the table as `refresh` does. Costs one read per process: used when the root exited and at
   * each signal, not periodically.
   */
  sweep(table: ProcessTable = scanProcesses()): void {
    if (this.#marker !== undefined) {
      for (const pid of scanMarked(this.#marker)) {
        const row = table.get(pid);
        if (row !== undefined && !row.zombie && !this.#known.has(pid) && pid !== process.pid) this.#known.set(pid, row.start);
      }
    }
    this.refresh(table);
  }

  /** Walks the process table from the root, every known member still alive and every group member; remembers what it finds. */
  refresh(table: ProcessTable = scanProcesses()): void {
    const children = new Map<number, number[]>();
    for (const row of table.values()) {
      const list = children.get(row.ppid);
      if (list === undefined) children.set(row.ppid, [row.pid]);
      else list.push(row.pid);
    }
    const queue: number[] = [];
    for (const [pid, start] of this.#known) {
      const row = table.get(pid);
      if (row !== undefined && !row.zombie && (start === '' || start === row.start)) {
        if (start === '') this.#known.set(pid, row.start);
        queue.push(pid);
      }
    }
    for (const row of table.values()) if (row.pgrp === this.root && !row.zombie) queue.push(row.pid);
    const seen = new Set<number>();
    while (queue.length > 0) {
      const pid = queue.pop()!;
      if (seen.has(pid)) continue;
      seen.add(pid);
      const row = table.get(pid);
      if (row !== undefined && !this.#known.has(pid)) this.#known.set(pid, row.start);
      for (const child of children.get(pid) ?? []) queue.push(child);
    }
  }

  /**
   * Cheap check for the kill ladder's polling: no known descendant outside the group is alive and the
   * group is empty. A group that still exists may hold only zombies: that is settled by a whole-table
   * check at most every `FULL_CHECK_MS`.
   */
  isGone(): boolean {
    if (!hasProcFs) return !groupExists(this.root) && this.alive().length === 0;
    for (const [pid, start] of this.#known) {
      const row = readRow(pid);
      if (row !== undefined && !row.zombie && (start === '' || start === row.start) && row.pgrp !== this.root) return false;
    }
    if (!groupExists(this.root)) return true;
    const now = Date.now();
    if (now - this.#lastFullCheck < FULL_CHECK_MS) return false;
    this.#lastFullCheck = now;
    return this.alive().length === 0;
  }

  /**
   * Walks down from the root through /proc/<pid>/task/<tid>/children: the snapshot taken right before
   * signalling while the root may still be alive, in O(tree) reads. Falls back to the whole table.
   */
  #snapshotFromRoot(): void {
    const queue = [this.root];
    const seen = new Set<number>();
    while (queue.length > 0) {
      const pid = queue.pop()!;
      if (seen.has(pid)) continue;
      seen.add(pid);
      const children = childrenOf(pid);
      if (children === undefined) {
        this.refresh();
        return;
      }
      for (const child of children) {
        if (!this.#known.has(child)) {
          const row = readRow(child);
          if (row === undefined || row.zombie) continue;
          this.#known.set(child, row.start);
        }
        queue.push(child);
      }
    }
  }

  /** Pids of the tree that are still alive (not zombies): group members and known descendants. */
  alive(table: ProcessTable = scanProcesses()): number[] {
    const alive = new Set<number>();
    for (const row of table.values()) {
      if (row.zombie) continue;
      if (row.pgrp === this.root) alive.add(row.pid);
      const start = this.#known.get(row.pid);
      if (start !== undefined && (start === '' || start === row.start)) alive.add(row.pid);
    }
    return [...alive];
  }

  /**
   * Snapshots the tree by ppid links before signalling (while the root may still be alive), signals the
   * group and every live known descendant outside it, then sweeps for the environment marker and
   * signals whatever that found on top. Returns the pids signalled (the group as its leader's pid).
   */
  signal(signal: NodeJS.Signals): number[] {
    // Snapshot first (cheaply, from the root down) so descendants are known before the signal kills
    // the root and orphans them; then the group signal leaves without waiting for a whole-table scan.
    if (hasProcFs) this.#snapshotFromRoot();
    const targets: number[] = [];
    if (send(-this.root, signal)) targets.push(this.root);
    const table = scanProcesses();
    this.sweep(table);
    for (const pid of this.alive(table)) {
      const row = table.get(pid);
      if (row !== undefined && row.pgrp === this.root) continue; // the group signal reached it
      if (send(pid, signal)) targets.push(pid);
    }
    return targets;
  }
}

/** How often `isGone()` may pay for a whole-table check while the group still exists (zombies only?). */
const FULL_CHECK_MS = 250;

/** Trees refreshed together by one periodic scan of the process table, while any is registered. */
const watched = new Set<ProcessTree>();
let watchTimer: NodeJS.Timeout | undefined;

/**
 * How often live trees are re-walked, so descendants that leave the group and scrub the environment
 * marker are still remembered before their parent dies. Slow on purpose: one walk reads every process's
 * stat file, and the marker sweep at the end covers the common case.
 */
const WATCH_PERIOD_MS = 10_000;

/** Starts refreshing `tree` periodically (one shared /proc scan for all trees; the timer is unref'd). */
export function watchTree(tree: ProcessTree): void {
  watched.add(tree);
  if (watchTimer === undefined) {
    watchTimer = setInterval(() => {
      const table = scanProcesses();
      for (const each of watched) each.refresh(table);
    }, WATCH_PERIOD_MS);
    watchTimer.unref();
  }
}

/** Stops refreshing `tree`; the shared timer stops with the last one. */
export function unwatchTree(tree: ProcessTree): void {
  watched.delete(tree);
  if (watched.size === 0 && watchTimer !== undefined) {
    clearInterval(watchTimer);
    watchTimer = undefined;
  }
}
