// A hog for every fake program: a grandchild that allocates memory, burns CPU and starts processes on cue, so a test can push a tree over its limits.
import { spawn } from 'node:child_process';
import { spawnUntilReady } from './grandchild.js';
import type { HelperReport } from './grandchild.js';

/** What a hog does, in this order: start its processes, allocate, say ready, then spin. */
export interface HogSpec {
  /** Bytes it allocates and writes (so they are resident). */
  allocateBytes?: number;
  /** Milliseconds of its own CPU time it burns in a busy loop after it said ready. */
  spinMs?: number;
  /** How many extra processes it starts (`sleep`s in its process group, carrying the tree's marker). */
  processes?: number;
  /** How long it (and its processes) live before exiting on their own. Default and maximum 60000. */
  lifeMs?: number;
}

/** The argument that turns a fake program (each bin checks it first) into a hog. */
export const HOG_FLAG = '--hog';
/** A hog lives at most this long, so no test can leak one for good. */
export const HOG_MAX_LIFE_MS = 60_000;
/** Starts a hog running this program with `--hog SPEC`; `settled` is called once it did its allocating and starting (or failed). */
export function spawnHog(spec: HogSpec, settled: (report: HelperReport) => void): void {
  spawnUntilReady([HOG_FLAG, JSON.stringify(spec)], false, settled);
}

/** {@link spawnHog} as a promise, for programs driven by the event loop (fa, fuseraft, mew). */
export function startHog(spec: HogSpec): Promise<HelperReport> {
  return new Promise((resolve) => spawnHog(spec, resolve));
}

/** The hog program (`argv` after the flag: its spec as JSON). */
export function runHog(argv: string[]): void {
  const spec = JSON.parse(argv[0] ?? '{}') as HogSpec;
  const lifeMs = Math.min(Math.max(0, spec.lifeMs ?? HOG_MAX_LIFE_MS), HOG_MAX_LIFE_MS);
  setTimeout(() => process.exit(0), lifeMs);
  for (let index = 0; index < (spec.processes ?? 0); index++) {
    spawn('sleep', [String(Math.ceil(lifeMs / 1000))], { stdio: 'ignore' }).on('error', () => undefined);
  }
  const held: Buffer[] = [];
  for (let left = spec.allocateBytes ?? 0; left > 0; left -= CHUNK_BYTES) held.push(Buffer.alloc(Math.min(left, CHUNK_BYTES), 1));
  (globalThis as { hogHeld?: Buffer[] }).hogHeld = held; // kept reachable: the memory stays resident
  process.stdout.on('error', () => undefined);
  process.stdout.write('ready\n', () => spin(spec.spinMs ?? 0));
}

const CHUNK_BYTES = 16 * 1024 * 1024;

/** Burns `ms` of this process's own CPU time, in slices that let its timers (its end of life) run. */
function spin(ms: number): void {
  const until = process.cpuUsage().user / 1000 + ms;
  const slice = () => {
    const sliceEnd = Date.now() + 50;
    while (Date.now() < sliceEnd) if (process.cpuUsage().user / 1000 >= until) return;
    setImmediate(slice);
  };
  if (ms > 0) slice();
}
