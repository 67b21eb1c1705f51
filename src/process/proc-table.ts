// Reads the machine's process table from /proc: rows by pid, children by thread, and which processes carry an environment marker.
import { readdirSync } from 'node:fs';
import { readProcText, withProcFile } from './proc-files.js';

/** One row of the process table. */
export interface ProcessRow {
  pid: number;
  ppid: number;
  pgrp: number;
  /** Start time (clock ticks since boot; empty when unknown): tells a pid from a later reuse of it. */
  start: string;
  zombie: boolean;
  /**
   * CPU time in clock ticks: its own (user + system) and that of its children it has waited for (cutime +
   * cstime): what a tree's CPU use is summed from (see tree-usage.ts).
   */
  cpuTicks: number;
}

export type ProcessTable = Map<number, ProcessRow>;

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

/** The table's rows indexed by parent pid and by process group (built once per table). */
export function indexOf(table: ProcessTable): ProcessIndex {
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
 * Whether /proc can be read (Linux). Where it cannot (macOS, Windows) a tree is only what the OS
 * offers without it: the process group, and descendants that `tree-kill` finds from the root while
 * the root is alive (see docs/reliability.md).
 */
let procFs = readableProcFs();

/** Whether this process reads /proc (see {@link useProcFs}). */
export function hasProcFs(): boolean {
  return procFs;
}

/**
 * @internal Makes this process behave as if there were no /proc (`false`), so the path taken on
 * macOS and Windows can be tested on Linux; `true` goes back. Returns the previous value.
 */
export function useProcFs(available: boolean): boolean {
  const previous = procFs;
  procFs = available && readableProcFs();
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

/** How many whole-table passes this process made (stat scans, environ passes): what batching saves. */
const passes = { table: 0, environ: 0 };

/** @internal The whole-table passes made so far (tests check that trees ending together share them). */
export function procPasses(): { table: number; environ: number } {
  return { ...passes };
}

/** Reads /proc/<pid>/stat of every process; empty where there is no /proc. Never throws. */
export function scanProcesses(): ProcessTable {
  const table: ProcessTable = new Map();
  if (!procFs) return table;
  passes.table++;
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

const NUL = 0;

/**
 * Pids of live processes by the environment markers (`NAME=value`) among `markers` that they carry,
 * from one pass that reads each process's environ once, however many markers are asked for. Every
 * descendant inherits the environment unless it scrubs it, so this finds orphans that hang off PID 1
 * as well. Only our own processes' environ files are readable, which is exactly the set we may
 * signal. A marker nobody carries is absent from the map. Linux only; never throws.
 */
export function scanMarkers(markers: Iterable<string>): Map<string, number[]> {
  const found = new Map<string, number[]>();
  const wanted = new Set(markers);
  if (!procFs || wanted.size === 0) return found;
  passes.environ++;
  // Each distinct name is looked for once per environ, then its value compared whole.
  const names = [...new Set([...wanted].map((marker) => marker.slice(0, marker.indexOf('=') + 1)))].map((name) => ({
    atStart: Buffer.from(name),
    inside: Buffer.from(`\0${name}`),
  }));
  const collect = (pid: number) => (environ: Buffer) => {
    for (const { atStart, inside } of names) {
      let at = environ.subarray(0, atStart.length).equals(atStart) ? 0 : -1;
      if (at === -1) at = entryAfter(environ, inside, 0);
      while (at !== -1) {
        let end = environ.indexOf(NUL, at);
        if (end === -1) end = environ.length;
        const entry = environ.toString('utf8', at, end);
        if (wanted.has(entry)) {
          const pids = found.get(entry);
          if (pids === undefined) found.set(entry, [pid]);
          else if (pids[pids.length - 1] !== pid) pids.push(pid);
        }
        at = entryAfter(environ, inside, end);
      }
    }
  };
  for (const entry of procPidEntries()) {
    try {
      withProcFile(`/proc/${entry}/environ`, collect(Number(entry)));
    } catch {
      // not ours, or gone
    }
  }
  return found;
}

/** Where the next entry that `inside` (`\0NAME=`) starts at or after `from` begins; -1 when none. */
function entryAfter(environ: Buffer, inside: Buffer, from: number): number {
  const at = environ.indexOf(inside, Math.max(0, from));
  return at === -1 ? -1 : at + 1;
}

/** One process's row from /proc/<pid>/stat; undefined when it is gone (or there is no /proc). */
export function readRow(pid: number): ProcessRow | undefined {
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
    // utime, stime, cutime, cstime: fields 14-17 of stat(5), counted from the state (field 3) at 0.
    cpuTicks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]),
  };
}

/**
 * Direct children of `pid` from /proc/<pid>/task/<tid>/children (one small read per thread instead of
 * a scan of the whole machine); undefined where the kernel does not offer that file.
 */
export function childrenOf(pid: number): number[] | undefined {
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
