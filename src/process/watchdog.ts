// The parent's watchdog: one small process that outlives the parent and reaps the live runs if the parent dies unannounced.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Files of one run the watchdog removes once its tree is gone: only these paths, then `dir` if that left it empty. */
export interface WatchedFiles {
  dir: string;
  files: string[];
}

/** What the watchdog must know of one live run to reap it after the parent is gone. */
export interface WatchEntry {
  /** The root's pid, also its process group id. */
  root: number;
  /** The root's start time (clock ticks since boot, from /proc): tells the root from a reuse of its pid. */
  rootStart: string;
  /** The tree's environment marker (`NAME=value`). */
  marker: string | undefined;
  /** Grace between SIGTERM and SIGKILL. */
  graceMs: number;
  /** The files the run made, removed once the tree is gone (then their directory if that left it empty). */
  ownFiles?: WatchedFiles;
  /** A sandboxed run's private tmp directory, removed whole once the tree is gone (see confinement.ts). */
  scratchDir?: string;
  /**
   * A durable run: the parent held its lease in `dir`. Its death does not reap the run at once: the
   * reaper waits until the lease runs out, and leaves the run alone if another parent took it meanwhile.
   */
  lease?: { dir: string; holder: number; holderStart: string };
}

/**
 * The watchdog itself: a `/bin/sh` loop that holds the read end of a pipe from the parent and keeps the
 * registered runs in a variable, one line each. It costs a shell blocked in read(2): no timer, no CPU
 * while idle, under 2 MB resident. At end of file (the parent is gone, however it died: the kernel
 * closes its end) with runs still registered, it execs Node on the reaper (reaper.ts), which runs the
 * kill ladder with the same process-tree code as the parent and removes the runs' files. A parent
 * that lets go (no run left for `LINGER_MS`) closes the pipe first, and the shell exits.
 *
 * Lines: `+<id> <json>` registers a run, `-<id>` forgets it. Ids are decimal; JSON has no raw newline.
 */
const WATCHDOG_SCRIPT = `trap '' HUP INT
runs='
'
while IFS= read -r line; do
  case $line in
    +*) runs="$runs\${line#+}
" ;;
    -*) id=\${line#-}
      case $runs in
        *"
$id "*)
          before=\${runs%%"
$id "*}
          after=\${runs#*"
$id "}
          after=\${after#*"
"}
          runs="$before
$after" ;;
      esac ;;
  esac
done
[ "$runs" = '
' ] && exit 0
exec "$1" "$2" <<RUNS
$runs
RUNS
`;

const SCRIPT_ENV = 'SUBVISOR_WATCHDOG_SCRIPT';

/**
 * How long the watchdog outlives the last run before the parent lets it go: runs started one after the
 * other (a loop, a queue) reuse it instead of paying a fork of /bin/sh each. The timer is unref'd: a
 * parent that has nothing else to do exits at once (and the watchdog with it, at end of file).
 */
const LINGER_MS = 2000;

/** The live registrations, replayed to a new watchdog if the current one went away. */
const entries = new Map<number, WatchEntry>();
let nextId = 1;
let watchdog: ChildProcess | undefined;
let lingerTimer: NodeJS.Timeout | undefined;
/** Set when the watchdog cannot run here (no /bin/sh, no built reaper): said once, never retried. */
let unavailable: string | undefined;

/** The built reaper script: dist/process/reaper.js of the package this module belongs to (built or sources). */
function reaperScript(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; ) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'subvisor') {
          return join(dir, 'dist', 'process', 'reaper.js');
        }
      } catch {
        // not a manifest we can read: keep walking up
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return join(here, 'process', 'reaper.js');
    dir = parent;
  }
}

function giveUp(reason: string): void {
  if (unavailable !== undefined) return;
  unavailable = reason;
  process.emitWarning(`no watchdog (${reason}): runs alive when this process is SIGKILLed may outlive it`, {
    code: 'SUBVISOR_NO_WATCHDOG',
  });
}

function registration(id: number, entry: WatchEntry): string {
  return `+${id} ${JSON.stringify(entry)}\n`;
}

/**
 * Starts the watchdog and tells it every live run. Detached (its own session): the signals a terminal
 * sends the parent's group (Ctrl-C, hang-up) do not reach it.
 */
function start(): ChildProcess | undefined {
  if (unavailable !== undefined) return undefined;
  if (process.platform === 'win32') {
    unavailable = 'no /bin/sh on Windows';
    return undefined;
  }
  const reaper = reaperScript();
  if (!existsSync(reaper)) {
    giveUp(`${reaper} is missing`);
    return undefined;
  }
  // The script travels in the environment so that `ps` shows a short command line.
  const child = spawn('/bin/sh', ['-c', `eval "$${SCRIPT_ENV}"`, 'subvisor-watchdog', process.execPath, reaper], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
    // Nothing of the parent's environment: no NODE_OPTIONS for the reaper, and no tree marker of an
    // enclosing run (an outer supervisor's marker sweep must not kill the process that reaps ours).
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', [SCRIPT_ENV]: WATCHDOG_SCRIPT },
  });
  child.on('error', (error) => {
    if (watchdog === child) watchdog = undefined;
    giveUp(error.message);
  });
  child.on('exit', () => {
    if (watchdog !== child) return;
    // Killed from outside while runs are live: a new one takes over at once.
    watchdog = undefined;
    if (entries.size > 0) start();
  });
  child.stdin?.on('error', () => undefined); // EPIPE once it died: 'exit' deals with that
  // Neither the process nor its pipe keeps the parent's event loop alive.
  child.unref();
  (child.stdin as { unref?: () => void } | null)?.unref?.();
  watchdog = child;
  for (const [id, entry] of entries) child.stdin?.write(registration(id, entry));
  return child;
}

/**
 * Registers a live run with the watchdog (started with the first one); returns the function that
 * forgets it. When the last run is forgotten the pipe is closed and the watchdog exits.
 */
export function watchRun(entry: WatchEntry): () => void {
  const id = nextId++;
  entries.set(id, entry);
  if (lingerTimer !== undefined) clearTimeout(lingerTimer);
  lingerTimer = undefined;
  if (watchdog === undefined) start();
  else watchdog.stdin?.write(registration(id, entry));
  return () => {
    if (!entries.delete(id)) return;
    watchdog?.stdin?.write(`-${id}\n`);
    if (entries.size === 0 && watchdog !== undefined) {
      lingerTimer = setTimeout(letGo, LINGER_MS);
      lingerTimer.unref();
    }
  };
}

/** No run left after the linger: close the pipe, and the watchdog exits. */
function letGo(): void {
  lingerTimer = undefined;
  const current = watchdog;
  watchdog = undefined;
  current?.stdin?.end();
}

/** @internal The current watchdog's pid (tests and measurements). */
export function watchdogPid(): number | undefined {
  return watchdog?.pid;
}
