// Finds and signals a process tree: the child's process group plus every descendant seen while it lived.
import treeKill from 'tree-kill';
import { childrenOf, hasProcFs, indexOf, readRow, scanMarkers, scanProcesses } from './proc-table.js';
import type { ProcessRow, ProcessTable } from './proc-table.js';

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
  /** How many processes from the root down are a sandbox's wrappers (see the constructor). */
  readonly #wrappers: 0 | 2;
  /** The agent below the wrappers, once found (pid and start time). */
  #agent: { pid: number; start: string } | undefined;

  /**
   * `marker` (`NAME=value`, unique to this tree) is an environment entry every descendant inherited.
   * `rootStart` is the root's start time when the caller read it earlier (the watchdog, long after the
   * spawn); otherwise it is read now, right after the spawn, while the pid is surely the root's.
   *
   * `wrappers: 2`: the root is bubblewrap's monitor and its only child the init of the sandbox's pid
   * namespace, with the agent below it (see confinement.ts). Neither forwards a signal: the monitor dies
   * of one and, dying, takes the whole namespace with it (SIGKILL). So every signal but SIGKILL goes to the
   * tree's other processes one by one, never to the group or the wrappers (the agent gets its SIGTERM and
   * its grace; when it exits, bubblewrap exits with its status), and the wrappers count in no figure.
   */
  constructor(root: number, marker?: string, rootStart?: string, wrappers: 0 | 2 = 0) {
    this.root = root;
    this.#marker = marker;
    this.#wrappers = wrappers;
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

  /** The tree's environment marker (`NAME=value`), if it has one: what an environ pass looks for. */
  get marker(): string | undefined {
    return this.#marker;
  }

  /**
   * Adds every process carrying the tree's environment marker (even orphans of a dead parent), then
   * walks the table as `refresh` does. `marked` is an environ pass ({@link scanMarkers}) that asked for
   * this tree's marker, taken with `table`: trees ending together share both (see shared-scans.ts).
   * Costs one read per process: used when the root exited and at each signal, not periodically.
   */
  sweep(table: ProcessTable = scanProcesses(), marked: ReadonlyMap<string, number[]> = this.#scanOwnMarker()): void {
    const marker = this.#marker;
    if (marker !== undefined) {
      for (const pid of marked.get(marker) ?? []) {
        const row = table.get(pid);
        if (row !== undefined && !row.zombie && !this.#known.has(pid) && pid !== process.pid) this.#known.set(pid, row.start);
      }
    }
    this.refresh(table);
  }

  #scanOwnMarker(): Map<string, number[]> {
    return scanMarkers(this.#marker === undefined ? [] : [this.#marker]);
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
    if (!hasProcFs()) return !groupExists(this.root);
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
    if (!hasProcFs()) return groupExists(this.root) ? [this.root] : [];
    const alive = new Set(this.#groupMembers(table));
    for (const row of table.values()) if (this.#isKnown(row)) alive.add(row.pid);
    return [...alive];
  }

  /**
   * Snapshots the tree by ppid links before signalling (while the root may still be alive), signals the
   * group and every live known descendant outside it, then sweeps for the environment marker and
   * signals whatever that found on top. Returns the pids signalled (the group as its leader's pid).
   * Synchronous with /proc; without it, `now` (the process is exiting) signals the group at once and
   * gives up on the walk, which needs `ps` to answer. {@link beginSignal} and {@link finishSignal} are
   * its two halves, for trees signalled together around one shared scan.
   */
  signal(signal: NodeJS.Signals, now = false): number[] {
    if (!hasProcFs()) return this.#signalWithoutProcFs(signal, now);
    const groupSent = this.beginSignal(signal);
    return this.finishSignal(signal, groupSent, scanProcesses(), this.#scanOwnMarker());
  }

  /**
   * The first half of {@link signal} (with /proc): snapshots the tree from the root down, so descendants
   * are known before the signal kills the root and orphans them, and signals the group while the root
   * itself is alive (the group is surely ours then). Returns whether that group signal left.
   */
  beginSignal(signal: NodeJS.Signals): boolean {
    this.#snapshotFromRoot();
    if (!this.#viaGroup(signal)) return false;
    const rootRow = readRow(this.root);
    return rootRow !== undefined && this.#isKnown(rootRow) && send(-this.root, signal);
  }

  /** Whether `signal` may go to the whole group: always without wrappers, only SIGKILL with them. */
  #viaGroup(signal: NodeJS.Signals): boolean {
    return this.#wrappers === 0 || signal === 'SIGKILL';
  }

  /** Whether `row` is one of the sandbox's wrappers: the root (bubblewrap's monitor) or its child (the namespace's init). */
  #isWrapper(row: ProcessRow): boolean {
    return this.#wrappers > 0 && (row.pid === this.root || row.ppid === this.root);
  }

  /**
   * Rows of `table` that are the tree's own processes, zombies included (their CPU time is not yet their
   * parent's), the sandbox's wrappers left out: what a tree's usage is summed over.
   */
  members(table: ProcessTable): ProcessRow[] {
    const rows = new Map<number, ProcessRow>();
    for (const pid of this.#groupMembers(table)) rows.set(pid, table.get(pid)!);
    // Known processes by lookup, not by a pass over the table: a sample serves every tree from one table.
    for (const [pid, start] of this.#known) {
      const row = table.get(pid);
      if (row !== undefined && row.start === start) rows.set(pid, row);
    }
    return [...rows.values()].filter((row) => !this.#isWrapper(row));
  }

  /**
   * The process a signal meant for "the child" goes to (a protocol's own stop signal, such as HEP's
   * SIGINT): the root, or below a sandbox's wrappers the agent (the namespace init's first child);
   * undefined when it is not there (yet, or any more).
   */
  agentPid(): number | undefined {
    if (this.#wrappers === 0) return this.root;
    const agent = this.#agent;
    if (agent !== undefined) return readRow(agent.pid)?.start === agent.start ? agent.pid : undefined;
    const init = childrenOf(this.root)?.[0];
    if (init === undefined) return undefined;
    let first: ProcessRow | undefined;
    for (const pid of childrenOf(init) ?? []) {
      const row = readRow(pid);
      if (row !== undefined && !row.zombie && (first === undefined || Number(row.start) < Number(first.start))) first = row;
    }
    if (first === undefined) return undefined;
    this.#agent = { pid: first.pid, start: first.start };
    return first.pid;
  }

  /**
   * The second half, with a table and an environ pass taken after {@link beginSignal}: sweeps, then
   * signals the group if the table proves it still holds one of ours (when the first half did not),
   * and every known process outside it. Returns the pids signalled (the group as its leader's pid).
   */
  finishSignal(signal: NodeJS.Signals, groupSent: boolean, table: ProcessTable, marked: ReadonlyMap<string, number[]>): number[] {
    const targets: number[] = groupSent ? [this.root] : [];
    this.sweep(table, marked);
    const viaGroup = this.#viaGroup(signal);
    const members = new Set(viaGroup ? this.#groupMembers(table) : []);
    if (!groupSent && members.size > 0 && send(-this.root, signal)) targets.push(this.root);
    for (const row of table.values()) {
      if (!this.#isKnown(row) || members.has(row.pid)) continue; // the group signal reached it
      if (!viaGroup && this.#isWrapper(row)) continue;
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
