// Grandchildren for every fake program: spawned from the program's own script, ignoring SIGTERM, with a capped life.
import { spawn } from 'node:child_process';

/** Grandchildren live at most this long, so no test can leak them for good. */
export const GRANDCHILD_MAX_LIFE_MS = 60_000;
/** How long the child waits for a grandchild to install its SIGTERM handler (a loaded machine starts Node slowly). */
const GRANDCHILD_READY_MS = 30_000;
/** The argument that turns a fake program (each bin checks it first) into a grandchild. */
export const GRANDCHILD_FLAG = '--grandchild';
/** The grandchild argument that makes it ignore SIGINT too (a stubborn tree against a group-wide cancel). */
const IGNORE_SIGINT = 'ignore-sigint';

export interface GrandchildReport extends HelperReport {
  ownSession: boolean;
}

/**
 * Spawns one grandchild running this program with `--grandchild`. It reports `ready` on its stdout once its
 * SIGTERM handler is in place; `settled` is called then (or on failure or after 30 s), so a test's SIGTERM can
 * never land before the handler.
 */
export function spawnGrandchild(
  options: { session: boolean; lifeMs: number; ignoreSigint?: boolean },
  settled: (report: GrandchildReport) => void,
): void {
  const lifeMs = Math.min(Math.max(0, options.lifeMs), GRANDCHILD_MAX_LIFE_MS);
  const args = [GRANDCHILD_FLAG, String(lifeMs), ...(options.ignoreSigint ? [IGNORE_SIGINT] : [])];
  spawnUntilReady(args, options.session, (report) => settled({ ...report, ownSession: options.session }));
}

/** What a helper process of a fake program did: its pid, whether it said ready, why not. */
export interface HelperReport {
  pid?: number;
  ready: boolean;
  error?: string;
}

/**
 * Spawns this program with `args` (a grandchild, a hog) and calls `settled` once it says ready on its stdout
 * (its first output), or fails to start, exits first, or is not ready within 30 s. `detached`: in a session of
 * its own. It is unref'd: it never keeps the fake alive.
 */
export function spawnUntilReady(args: string[], detached: boolean, settled: (report: HelperReport) => void): void {
  const child = spawn(process.execPath, [process.argv[1] ?? '', ...args], { detached, stdio: ['ignore', 'pipe', 'ignore'] });
  let done = false;
  const settle = (ready: boolean, error?: string) => {
    if (done) return;
    done = true;
    clearTimeout(timeout);
    child.stdout?.destroy();
    const report: HelperReport = { ready };
    if (child.pid !== undefined) report.pid = child.pid;
    if (error !== undefined) report.error = error;
    settled(report);
  };
  const timeout = setTimeout(() => settle(false, 'not ready in time'), GRANDCHILD_READY_MS);
  child.stdout?.once('data', () => settle(true));
  child.on('error', (error) => settle(false, error.message));
  child.on('exit', () => settle(false, 'exited before it was ready'));
  child.unref();
}

/**
 * The grandchild program (`argv` after the flag: life in ms, then optionally `ignore-sigint`): ignores SIGTERM
 * (and SIGINT when asked), says ready, and exits on its own after its capped life.
 */
export function runGrandchild(argv: string[]): void {
  const lifeMs = Math.min(Math.max(0, Number(argv[0]) || GRANDCHILD_MAX_LIFE_MS), GRANDCHILD_MAX_LIFE_MS);
  process.on('SIGTERM', () => undefined);
  if (argv[1] === IGNORE_SIGINT) process.on('SIGINT', () => undefined);
  setTimeout(() => process.exit(0), lifeMs);
  // Nobody reads after `ready`, so nothing else is written (and a closed pipe is no error).
  process.stdout.on('error', () => undefined);
  process.stdout.write('ready\n');
}


/**
 * Spawns `count` grandchildren (default 1) and resolves once each one is ready (or failed), with their
 * reports in spawn order: for programs driven by the event loop (fa, fuseraft).
 */
export function spawnGrandchildren(options: { count?: number; session?: boolean; lifeMs?: number; ignoreSigint?: boolean }): Promise<GrandchildReport[]> {
  const spec = {
    session: options.session ?? false,
    lifeMs: options.lifeMs ?? GRANDCHILD_MAX_LIFE_MS,
    ignoreSigint: options.ignoreSigint ?? false,
  };
  const count = Math.max(1, options.count ?? 1);
  return Promise.all(Array.from({ length: count }, () => new Promise<GrandchildReport>((settled) => spawnGrandchild(spec, settled))));
}
