// The private run directory: a 0700 directory holding the 0600 control and event files, its removal, and
// the sweep of directories left behind by parents that were killed before they could clean up.
import { closeSync, constants, lstatSync, mkdtempSync, openSync, readdirSync, readlinkSync, rmdirSync, rmSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

/** Where one run's channel files live. */
export interface RunDirectory {
  /** The private directory (mode 0700). */
  readonly dir: string;
  /** The control file the parent appends to (mode 0600). */
  readonly controlPath: string;
  /** The event file the child appends to (mode 0600). */
  readonly eventPath: string;
}

/** Flags for a file that must not exist yet: a stale or planted file is an error, never reused. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;

const CONTROL_FILE = 'control.jsonl';
const EVENT_FILE = 'events.jsonl';

/**
 * `subvisor-run-<pid namespace>-<parent pid>-XXXXXX`: the owner is named in the directory, so a later
 * parent can tell a directory whose owner died (SIGKILL leaves no chance to clean up) from a live one.
 * The pid namespace keeps containers that share a temp directory from judging each other's pids.
 */
const OWNED_DIRECTORY = /^subvisor-run-(\d+)-(\d+)-[A-Za-z0-9]{6}$/;

let pidNamespace: string | null | undefined;

/** This process's pid namespace id (Linux), or null where it cannot be known (then nothing is swept). */
function currentPidNamespace(): string | null {
  if (pidNamespace === undefined) {
    try {
      pidNamespace = /^pid:\[(\d+)\]$/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? null;
    } catch {
      pidNamespace = null;
    }
  }
  return pidNamespace;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const sweptStateDirs = new Set<string>();

/**
 * Removes the run directories under `stateDir` whose owning parent (same pid namespace) is no longer
 * alive, once per `stateDir` per process. Only a real directory (not a link) owned by this user is
 * touched, and only the two channel files in it; a directory holding anything else is left alone.
 * Returns how many directories were removed. Never throws.
 */
export function sweepOrphanedRunDirectories(stateDir: string): number {
  const namespace = currentPidNamespace();
  if (namespace === null || sweptStateDirs.has(stateDir)) return 0;
  sweptStateDirs.add(stateDir);
  let removed = 0;
  let entries: string[];
  try {
    entries = readdirSync(stateDir);
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const owner = OWNED_DIRECTORY.exec(entry);
    if (owner === null || owner[1] !== namespace) continue;
    const pid = Number(owner[2]);
    if (pid === process.pid || isAlive(pid)) continue;
    const dir = join(stateDir, entry);
    try {
      const stat = lstatSync(dir);
      if (!stat.isDirectory() || stat.uid !== process.getuid?.()) continue;
      for (const file of readdirSync(dir)) {
        if (file === CONTROL_FILE || file === EVENT_FILE) unlinkSync(join(dir, file));
      }
      rmdirSync(dir);
      removed += 1;
    } catch {
      // Another parent swept it first, or it holds something that is not ours: leave it.
    }
  }
  return removed;
}

/**
 * Creates a fresh private directory under `stateDir` with empty control and event files. mkdtemp gives
 * 0700 whatever the umask; O_EXCL with 0600 makes both files new and private. A directory kept for
 * debugging (`keep`) gets a name the orphan sweep never matches. Throws on I/O errors after removing
 * whatever it created.
 */
export function createRunDirectory(stateDir: string, options: { keep?: boolean } = {}): RunDirectory {
  sweepOrphanedRunDirectories(stateDir);
  const namespace = currentPidNamespace();
  const prefix =
    options.keep === true || namespace === null ? 'subvisor-kept-' : `subvisor-run-${namespace}-${process.pid}-`;
  const dir = mkdtempSync(join(stateDir, prefix));
  const controlPath = join(dir, CONTROL_FILE);
  const eventPath = join(dir, EVENT_FILE);
  try {
    closeSync(openSync(controlPath, CREATE_NEW, 0o600));
    closeSync(openSync(eventPath, CREATE_NEW, 0o600));
  } catch (error) {
    removeRunDirectory(dir);
    throw error;
  }
  return { dir, controlPath, eventPath };
}

/** Removes the run directory and everything in it; never throws (an already removed directory is fine). */
export function removeRunDirectory(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // Nothing useful to do: the directory is private and the caller is shutting down.
  }
}
