// Finds and signals a process tree: the child's process group plus every descendant seen while it lived.
import { readdirSync } from 'node:fs';
import treeKill from 'tree-kill';
import { readProcText, withProcFile } from './proc-files.js';

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

/** A table's rows by parent and by process group, for walks that would otherwise scan it whole. */
interface ProcessIndex {
  children: Map<number, number[]>;
  groups: Map<number, ProcessRow[]>;
}

/**
 * Each table's index, built on first use: the periodic rescan refreshes every live tree against one
 * table, and a whole-table pass per tree made that quadratic (1000 runs: 1000 passes over 2000 rows).
 */
const indexes = new WeakMap<ProcessTable, ProcessIndex>();

function indexOf(table: ProcessTable): ProcessIndex {
  let index = indexes.get(table);
  if (index === undefined) {
    index = { children: new Map(), groups: new Map() };
    for (const row of table.values()) {
      const siblings = index.children.get(row.ppid);
      if (siblings === undefined) index.children.set(row.ppid, [row.pid]);
      else siblings.push(row.pid);
      const group = index.groups.get(row.pgrp);
      if (group === undefined) index.groups.set(row.pgrp, [row]);
      else group.push(row);
    }
    indexes.set(table, index);
  }
  return index;
}

/**
 * Whether /proc can be read (Linux). Where it cannot (macOS, Windows) the tree is only what the OS
 * offers without it: the process group, and descendants that `tree-kill` finds from the root while
 * the root is alive (see docs/reliability.md).
 */
let hasProcFs = readableProcFs();

/**
 * @internal Makes this process behave as if there were no /proc (`false`), so the path taken on
 * macOS and Windows can be tested on Linux; `true` goes back. Returns the previous value.
 */
export function useProcFs(available: boolean): boolean {
  const previous = hasProcFs;
  hasProcFs = available && readableProcFs();
  return previous;
}

function readableProcFs(): boolean {
  try {
    readProcText('/proc/self/stat');
    return true;
  } catch {
    return false;
  }
}

/** Reads /proc/<pid>/stat of every process; empty where there is no /proc. Never throws. */
function scanProcesses(): ProcessTable {
  const table: ProcessTable = new Map();
  if (!hasProcFs) return table;
  for (const entry of procPidEntries()) {
    const row = readRow(Number(entry));
    if (row !== undefined) table.set(row.pid, row); // undefined: it ended while we looked
  }
  return table;
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
  const carries = (environ: Buffer) => environ.indexOf(needle) !== -1 || environ.subarray(0, first.length).equals(first);
  for (const entry of procPidEntries()) {
    try {
      if (withProcFile(`/proc/${entry}/environ`, carries)) found.push(Number(entry));
    } catch {
      // not ours, or gone
    }
  }
  return found;
}

/** One process's row from /proc/<pid>/stat; undefined when it is gone (or there is no /proc). */
function readRow(pid: number): ProcessRow | undefined {
  let stat: string;
  try {
    stat = readProcText(`/proc/${pid}/stat`);
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
      list = readProcText(`/proc/${pid}/task/${tid}/children`);
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
 *
 * Nothing outside the tree is ever signalled: a pid counts only with the start time it had when first
 * seen, and the process group only while it still holds a process known to be ours (the root with its
 * start time, a known descendant, or one carrying the marker), since a group id is free for reuse once
 * its last member is gone.
 *
 * Without /proc (macOS, Windows) there is no table to remember anything from: the tree is the process
 * group plus whatever `tree-kill` finds below the root at each signal while the root is alive.
 */
export class ProcessTree {
  readonly root: number;
  /** Pid -> start time when first seen ('' only where there is no /proc to read it from). */
  readonly #known = new Map<number, string>();
  readonly #marker: string | undefined;
  /** Where there is no /proc: the root exited, so its pid may be reused and must not be walked from. */
  #rootExited = false;
  /** When `isGone()` last paid for a whole-table check. */
  #lastFullCheck = 0;

  /**
   * `marker` (`NAME=value`, unique to this tree) is an environment entry every descendant inherited.
   * `rootStart` is the root's start time when the caller read it earlier (the watchdog, long after the
   * spawn); otherwise it is read now, right after the spawn, while the pid is surely the root's.
   */
  constructor(root: number, marker?: string, rootStart?: string) {
    this.root = root;
    this.#marker = marker;
    this.#known.set(root, rootStart ?? readRow(root)?.start ?? '');
  }

  /** The root's start time as recorded ('' where there is no /proc): what the watchdog is told. */
  get rootStart(): string {
    return this.#known.get(this.root) ?? '';
  }

  /** The root exited: from now on its pid may belong to another process. */
  rootExited(): void {
    this.#rootExited = true;
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

  /** Walks the process table from every known member still alive and every group member; remembers what it finds. */
  refresh(table: ProcessTable = scanProcesses()): void {
    const { children } = indexOf(table);
    const queue: number[] = [];
    for (const [pid, start] of this.#known) {
      const row = table.get(pid);
      if (row !== undefined && !row.zombie && start === row.start) queue.push(pid);
    }
    queue.push(...this.#groupMembers(table));
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
   * group is empty. A group that still exists may hold only zombies (or, once every member of ours is
   * gone, be someone else's): that is settled by a whole-table check at most every `FULL_CHECK_MS`.
   */
  isGone(): boolean {
    if (!hasProcFs) return !groupExists(this.root);
    for (const [pid, start] of this.#known) {
      const row = readRow(pid);
      if (row !== undefined && !row.zombie && start === row.start && row.pgrp !== this.root) return false;
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
   * Only from the root itself (same start time): a reused pid's children are not ours.
   */
  #snapshotFromRoot(): void {
    const rootRow = readRow(this.root);
    if (rootRow === undefined || rootRow.start !== this.rootStart) return;
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

  /** Whether `row` is a live process this tree knows (same pid, same start time). */
  #isKnown(row: ProcessRow): boolean {
    return !row.zombie && this.#known.get(row.pid) === row.start;
  }

  /**
   * Live members of the process group, or none when the group no longer holds any process known to be
   * ours: then its id may have been reused by an unrelated group.
   */
  #groupMembers(table: ProcessTable): number[] {
    const members = (indexOf(table).groups.get(this.root) ?? []).filter((row) => !row.zombie);
    return members.some((row) => this.#isKnown(row)) ? members.map((row) => row.pid) : [];
  }

  /** Pids of the tree that are still alive (not zombies): group members and known descendants. */
  alive(table: ProcessTable = scanProcesses()): number[] {
    if (!hasProcFs) return groupExists(this.root) ? [this.root] : [];
    const alive = new Set(this.#groupMembers(table));
    for (const row of table.values()) if (this.#isKnown(row)) alive.add(row.pid);
    return [...alive];
  }

  /**
   * Snapshots the tree by ppid links before signalling (while the root may still be alive), signals the
   * group and every live known descendant outside it, then sweeps for the environment marker and
   * signals whatever that found on top. Returns the pids signalled (the group as its leader's pid).
   * Synchronous with /proc; without it, `now` (the process is exiting) signals the group at once and
   * gives up on the walk, which needs `ps` to answer.
   */
  signal(signal: NodeJS.Signals, now = false): number[] {
    if (!hasProcFs) return this.#signalWithoutProcFs(signal, now);
    // Snapshot first (cheaply, from the root down) so descendants are known before the signal kills
    // the root and orphans them. While the root itself is alive the group is surely ours and its signal
    // leaves at once; otherwise only after a table scan proved the group still holds one of ours.
    this.#snapshotFromRoot();
    const targets: number[] = [];
    const rootRow = readRow(this.root);
    const groupSent = rootRow !== undefined && this.#isKnown(rootRow) && send(-this.root, signal);
    if (groupSent) targets.push(this.root);
    const table = scanProcesses();
    this.sweep(table);
    const members = new Set(this.#groupMembers(table));
    if (!groupSent && members.size > 0 && send(-this.root, signal)) targets.push(this.root);
    for (const row of table.values()) {
      if (!this.#isKnown(row) || members.has(row.pid)) continue; // the group signal reached it
      if (send(row.pid, signal)) targets.push(row.pid);
    }
    return targets;
  }

  /**
   * No /proc: `tree-kill` walks the descendants from the root (`ps` on Linux, `pgrep` on macOS,
   * `taskkill /T /F` on Windows) and signals them, then the group is signalled. The walk comes first:
   * once the root is dead, its children hang off PID 1 and no walk finds them. It is used only while
   * the root's pid is surely still the root's: it has not exited, or its group still exists (a pid is
   * not reused while a group carries its number).
   */
  #signalWithoutProcFs(signal: NodeJS.Signals, now: boolean): number[] {
    const rootIsOurs = !this.#rootExited || groupExists(this.root);
    if (now || !rootIsOurs) return send(-this.root, signal) ? [this.root] : [];
    treeKill(this.root, signal, () => send(-this.root, signal));
    return [this.root];
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
