// What process trees use (resident memory, CPU time, processes), sampled from /proc: one process-table pass per tick serves every tree sampled at that interval.
import { readProcText, withProcFile } from './proc-files.js';
import { hasProcFs, scanProcesses } from './proc-table.js';
import type { ProcessRow, ProcessTable } from './proc-table.js';
import type { ProcessTree } from './process-tree.js';

/** A tree's use at one sample. */
export interface TreeUsage {
  /** Resident anonymous memory of its processes, summed (RssAnon: file-backed and shared memory pages left out). */
  memoryBytes: number;
  /** CPU seconds (user + system) of its processes since they started, those of its exited processes kept. */
  cpuSeconds: number;
  /** Its live processes (not zombies). */
  processes: number;
}

/** A tree being sampled; `stop()` ends it (the shared timer stops with the last tree of its interval). */
export interface UsageWatch {
  stop(): void;
}

/**
 * Clock ticks per second of stat(5)'s CPU fields: USER_HZ, 100 on every architecture Node runs on
 * (sysconf(_SC_CLK_TCK) has no binding in Node, and the kernel fixes USER_HZ per architecture).
 */
const TICKS_PER_SECOND = 100;

/** One tree's CPU accounting across samples: what its processes had used when last seen. */
class TreeMeter {
  readonly tree: ProcessTree;
  readonly onSample: (usage: TreeUsage) => void;
  /** `pid:start` -> ticks and parent when last seen. */
  #seen = new Map<string, { ticks: number; ppid: number }>();
  /** Ticks of processes that left and whose time went to no process of the tree (reaped by init, or by us). */
  #departedTicks = 0;
  #cpuTicks = 0;

  constructor(tree: ProcessTree, onSample: (usage: TreeUsage) => void) {
    this.tree = tree;
    this.onSample = onSample;
  }

  sample(table: ProcessTable): TreeUsage {
    this.tree.refresh(table);
    const rows = this.tree.members(table);
    const now = new Map<string, { ticks: number; ppid: number }>();
    const present = new Set<number>();
    let ticks = 0;
    let processes = 0;
    let memoryBytes = 0;
    for (const row of rows) {
      now.set(`${row.pid}:${row.start}`, { ticks: row.cpuTicks, ppid: row.ppid });
      present.add(row.pid);
      ticks += row.cpuTicks;
      if (row.zombie) continue;
      processes++;
      memoryBytes += residentAnonBytes(row);
    }
    // A process that left: a parent of the tree that waited for it has its time in its own cutime now;
    // otherwise (orphaned and reaped by init, or the root reaped by us) its last figure is kept.
    for (const [key, last] of this.#seen) {
      if (!now.has(key) && !present.has(last.ppid)) this.#departedTicks += last.ticks;
    }
    this.#seen = now;
    // Never backwards: a process that left between two samples takes its unseen time with it.
    this.#cpuTicks = Math.max(this.#cpuTicks, ticks + this.#departedTicks);
    return { memoryBytes, cpuSeconds: this.#cpuTicks / TICKS_PER_SECOND, processes };
  }
}

/**
 * RssAnon in bytes from /proc/<pid>/statm (resident minus shared, in pages: the shared ones are RssFile and
 * RssShmem), a third of the kernel's work of /proc/<pid>/status; 0 when it cannot be read (gone).
 */
function residentAnonBytes(row: ProcessRow): number {
  try {
    return withProcFile(`/proc/${row.pid}/statm`, (bytes) => {
      const [, resident, shared] = bytes.toString('latin1').split(' ');
      return Math.max(0, Number(resident) - Number(shared)) * pageBytes() || 0;
    });
  } catch {
    return 0;
  }
}

let pageSize: number | undefined;

/**
 * The page size statm counts in: this process's VmRSS (kB, /proc/self/status) over its resident pages (statm),
 * read back to back and rounded to the nearest page size Linux has (4, 16 or 64 KiB). Node has no sysconf.
 */
function pageBytes(): number {
  if (pageSize !== undefined) return pageSize;
  pageSize = 4096;
  try {
    const pages = Number(readProcText('/proc/self/statm').split(' ')[1]);
    const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readProcText('/proc/self/status'))?.[1]);
    const measured = (kb * 1024) / pages;
    if (Number.isFinite(measured)) pageSize = [4096, 16384, 65536].reduce((best, size) => (Math.abs(size - measured) < Math.abs(best - measured) ? size : best));
  } catch {
    // no /proc: nothing is sampled anyway
  }
  return pageSize;
}

/** The trees sampled at each interval, with the one timer that samples them. */
const groups = new Map<number, { timer: NodeJS.Timeout; meters: Set<TreeMeter> }>();

/**
 * Samples `tree` every `intervalMs` and hands each sample to `onSample`. Every tree with the same interval
 * shares one timer and one process-table pass per tick; each tree's memory costs one small read per
 * process of that tree. The timer is unref'd. Where there is no /proc nothing is sampled.
 */
export function sampleTree(tree: ProcessTree, intervalMs: number, onSample: (usage: TreeUsage) => void): UsageWatch {
  if (!hasProcFs()) return { stop: () => undefined };
  const meter = new TreeMeter(tree, onSample);
  let group = groups.get(intervalMs);
  if (group === undefined) {
    const meters = new Set<TreeMeter>();
    const timer = setInterval(() => sampleAll(meters), intervalMs).unref();
    group = { timer, meters };
    groups.set(intervalMs, group);
  }
  group.meters.add(meter);
  const joined = group;
  return {
    stop: () => {
      if (!joined.meters.delete(meter) || joined.meters.size > 0) return;
      clearInterval(joined.timer);
      groups.delete(intervalMs);
    },
  };
}

function sampleAll(meters: Set<TreeMeter>): void {
  const table = scanProcesses();
  // A listener may stop its own watch (or another's) while this loop runs: iterate a copy.
  for (const meter of [...meters]) {
    if (meters.has(meter)) meter.onSample(meter.sample(table));
  }
}
