// Leak checks for a benchmark run: every process it started carries an environment tag, and every temp
// file lands under one private TMPDIR, so survivors and leftovers can be found exactly.
import { readdirSync, readFileSync } from 'node:fs';

/** Environment variable inherited by every process a benchmark run starts (directly or not). */
export const TAG_VARIABLE = 'SUBVISOR_BENCH_TAG';

function readProc(pid, file) {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return null; // the process ended while we looked, or is not ours to read
  }
}

/** Live (non-zombie) processes, other than this one, whose environment carries `tag` (in `variable`, default the run's tag). */
export function taggedProcesses(tag, variable = TAG_VARIABLE) {
  const needle = `${variable}=${tag}`;
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const environ = readProc(entry, 'environ');
    if (environ === null || !environ.split('\0').includes(needle)) continue;
    const stat = readProc(entry, 'stat');
    if (stat === null) continue;
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z') continue;
    const cmdline = (readProc(entry, 'cmdline') ?? '').split('\0').join(' ').trim();
    found.push({ pid: Number(entry), state, cmdline });
  }
  return found;
}

/** Whether a pid is alive and not a zombie. */
export function isAlive(pid) {
  const stat = readProc(pid, 'stat');
  if (stat === null) return false;
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

/** Waits up to `graceMs` for tagged processes to go, then returns the ones still alive. */
export async function survivorsAfter(tag, graceMs) {
  const deadline = Date.now() + graceMs;
  let alive = taggedProcesses(tag);
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    alive = taggedProcesses(tag);
  }
  return alive;
}
