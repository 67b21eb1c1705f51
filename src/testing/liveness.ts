// Process liveness from /proc (Linux): is a pid alive, what are its descendants, which fake-child processes live.
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { KIT_FLAG } from './child-env.js';

/** The environment variable every fake child and grandchild carries, naming the kit instance that made it. */
export const FAKE_TOKEN_ENV = 'SUBVISOR_FAKE_TOKEN';

interface ProcStat {
  pid: number;
  ppid: number;
  /** One-letter state: R, S, D, Z (zombie), X (dead), T, ... */
  state: string;
}

function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name sits in parentheses and may itself contain spaces or parentheses.
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  return { pid, state: fields[0] ?? '?', ppid: Number(fields[1]) };
}

function allPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (/^\d+$/.test(entry)) pids.push(Number(entry));
  }
  return pids;
}

/** Whether `pid` is a live process (a zombie waiting to be reaped counts as dead). */
export function isAlive(pid: number): boolean {
  const stat = readStat(pid);
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

/**
 * The live descendants of `pid` (children, grandchildren, ...), found by parent pid. Processes that were
 * orphaned (re-parented to init or a subreaper) are no longer found: snapshot while the root lives, or use
 * {@link liveFakeProcesses}.
 */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const candidate of allPids()) {
    const stat = readStat(candidate);
    if (stat === undefined || stat.state === 'Z' || stat.state === 'X') continue;
    const siblings = children.get(stat.ppid);
    if (siblings === undefined) children.set(stat.ppid, [candidate]);
    else siblings.push(candidate);
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift() as number;
    for (const child of children.get(next) ?? []) {
      if (found.includes(child)) continue;
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** `pid` itself (when alive) and its live descendants. */
export function liveTree(pid: number): number[] {
  return [...(isAlive(pid) ? [pid] : []), ...descendantsOf(pid)];
}

/** Reads a NUL-separated /proc file of `pid` (environ, cmdline) as its entries; none when unreadable. */
function procEntries(pid: number, file: 'environ' | 'cmdline'): string[] {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

/**
 * Live processes started by the fake-child kit (the child and every grandchild, wherever they were
 * re-parented), found by the token in their environment, or for the child itself in the kit argument it was
 * started with (see KIT_FLAG: its own environment may be the caller's). With `token`, only that kit instance's.
 */
export function liveFakeProcesses(token?: string): number[] {
  const wanted = token === undefined ? `${FAKE_TOKEN_ENV}=` : `${FAKE_TOKEN_ENV}=${token}`;
  const inKit = token === undefined ? `"${FAKE_TOKEN_ENV}":` : `"${FAKE_TOKEN_ENV}":${JSON.stringify(token)}`;
  const found: number[] = [];
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    const matches =
      procEntries(pid, 'environ').some((entry) => (token === undefined ? entry.startsWith(wanted) : entry === wanted)) ||
      procEntries(pid, 'cmdline').some((arg) => arg.startsWith(KIT_FLAG) && arg.includes(inKit));
    if (matches && isAlive(pid)) found.push(pid);
  }
  return found;
}

/** The subset of `pids` still alive. */
export function alivePids(pids: Iterable<number>): number[] {
  return [...pids].filter(isAlive);
}

/**
 * Waits until none of the processes `pids()` returns is alive, polling every 25 ms, for at most `timeoutMs`
 * (default 10000). Resolves to the survivors (empty when all are gone).
 */
export async function waitUntilGone(
  pids: Iterable<number> | (() => Iterable<number>),
  timeoutMs = 10_000,
): Promise<number[]> {
  const current = () => alivePids(typeof pids === 'function' ? pids() : pids);
  const until = Date.now() + timeoutMs;
  let survivors = current();
  while (survivors.length > 0 && Date.now() < until) {
    await sleep(25);
    survivors = current();
  }
  return survivors;
}
