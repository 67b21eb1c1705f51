// /proc stat fields the spawnRun matrix needs beyond the kit's liveness helpers: process group and session.
import { readFileSync } from 'node:fs';

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** One-letter state: R, S, D, Z (zombie), ... */
  state: string;
}

/** Reads /proc/<pid>/stat; undefined when the process is gone. */
export function procInfo(pid: number): ProcInfo | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may itself contain spaces or parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pid, state: fields[0] ?? '?', ppid: Number(fields[1]), pgid: Number(fields[2]), sid: Number(fields[3]) };
}
