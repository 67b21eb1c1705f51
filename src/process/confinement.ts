// The command line that starts a child confined: its rlimits set before exec (util-linux prlimit), inside a bubblewrap sandbox, with the sandbox's private tmp.
import { accessSync, constants, existsSync, lstatSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { basename, delimiter, isAbsolute, join, resolve } from 'node:path';

/** The child's own rlimits (each process of the tree inherits them and counts against its own). */
export interface ChildRlimits {
  /** RLIMIT_CPU: soft at this many seconds (SIGXCPU), hard {@link CPU_HARD_GRACE_S} later (SIGKILL). */
  cpuSeconds?: number;
  /** RLIMIT_NOFILE, soft and hard (Node raises its soft limit to the hard one at start: both are set). */
  openFiles?: number;
}

/** The sandbox a child runs in (see docs/api.md#sandbox). */
export interface SandboxSpec {
  /** Paths bound read-write at the same place (the child's cwd and the run's directory among them); the rest of `/` is read-only. */
  writable: readonly string[];
  /** `true`: the host's network; `false`: a network namespace of its own (a private loopback, nothing else). */
  network: boolean;
  /**
   * Paths that stay readable although they are under the host's `/tmp`, which the private tmp hides: subvisor's
   * own package, whose programs (the fake children) a sandboxed run may start. Elsewhere they are readable anyway.
   */
  readable: readonly string[];
  /** Where the sandbox's private tmp directory is made (removed at the end of the run). */
  scratchParent: string;
}

/** Seconds between RLIMIT_CPU's soft limit (SIGXCPU, which a process may handle) and its hard one (SIGKILL). */
export const CPU_HARD_GRACE_S = 5;

/** The prefix of a sandbox's private tmp directory: what the watchdog's reaper may remove whole. */
export const SCRATCH_PREFIX = 'subvisor-sandbox-';

/** The confined command: what to spawn instead of the child's own command, and what it made. */
export interface ConfinedCommand {
  command: string;
  args: string[];
  /** Variables set over the child's environment (the sandbox's TMPDIR). */
  env: Record<string, string>;
  /** The sandbox's private tmp directory, to remove once the run is over ({@link removeScratch}). */
  scratchDir: string | undefined;
  /** Processes between the spawned pid and the child's command (bubblewrap's monitor and its namespace's init: 2). */
  wrappers: 0 | 2;
}

/** An error of the spawn (`spawn-failed`): a program that is missing or a sandbox that cannot be made. */
function confinementError(message: string, code = 'ENOENT'): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

/**
 * The program `name` as a path, found on `PATH` (each directory tried in order, the first executable
 * file wins) or, when it has a slash, taken relative to `cwd`; undefined when there is none. The child is
 * exec'd by prlimit or bubblewrap, not by Node: a missing program must be found missing here, where it
 * can still be a spawn error, instead of becoming the wrapper's exit code 127 or 1.
 */
export function findProgram(name: string, path: string | undefined, cwd: string): string | undefined {
  const candidates = name.includes('/') ? [resolve(cwd, name)] : (path ?? '').split(delimiter).filter((dir) => isAbsolute(dir)).map((dir) => join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not there, or not executable: the next one
    }
  }
  return undefined;
}

/**
 * Wraps `command args` in what confines it: `prlimit --cpu=S:H --nofile=N:N -- ` for the rlimits, then
 * `bwrap ... -- ` for the sandbox (prlimit outermost: the limits bind bubblewrap and everything it
 * starts). Throws a {@link confinementError} when a program is missing or a writable path does not exist.
 */
export function confine(command: string, args: readonly string[], env: Record<string, string>, cwd: string, rlimits: ChildRlimits | undefined, sandbox: SandboxSpec | undefined): ConfinedCommand {
  const program = findProgram(command, env['PATH'], cwd);
  if (program === undefined) throw confinementError(`${command}: not found (looked on the child's PATH)`);
  let argv = [program, ...args];
  const extraEnv: Record<string, string> = {};
  let scratchDir: string | undefined;
  if (sandbox !== undefined) {
    const bwrap = findProgram('bwrap', env['PATH'], cwd);
    if (bwrap === undefined) {
      throw confinementError('the sandbox needs bubblewrap (bwrap) on the PATH, and it is not there (Debian and Ubuntu: apt-get install bubblewrap); the child was not started unsandboxed');
    }
    const writable = sandbox.writable.map((path) => existingPath(resolve(cwd, path)));
    scratchDir = mkdtempSync(join(sandbox.scratchParent, SCRATCH_PREFIX));
    extraEnv['TMPDIR'] = scratchDir;
    const readable = sandbox.readable.filter((path) => existsSync(path)).map((path) => realpathSync(path));
    argv = [bwrap, ...bwrapArgs(existingPath(cwd), readable, writable, scratchDir, sandbox.network), '--', ...argv];
  }
  const limits = rlimitArgs(rlimits);
  if (limits.length > 0) {
    const prlimit = findProgram('prlimit', env['PATH'], cwd);
    if (prlimit === undefined) {
      if (scratchDir !== undefined) removeScratch(scratchDir);
      throw confinementError("cpuSeconds and openFiles need util-linux's prlimit on the PATH, and it is not there (Debian and Ubuntu: apt-get install util-linux); the child was not started without its limits");
    }
    argv = [prlimit, ...limits, '--', ...argv];
  }
  return { command: argv[0]!, args: argv.slice(1), env: extraEnv, scratchDir, wrappers: sandbox === undefined ? 0 : 2 };
}

/** prlimit's options for `rlimits` (none for none). */
function rlimitArgs(rlimits: ChildRlimits | undefined): string[] {
  const args: string[] = [];
  if (rlimits?.cpuSeconds !== undefined) args.push(`--cpu=${rlimits.cpuSeconds}:${rlimits.cpuSeconds + CPU_HARD_GRACE_S}`);
  if (rlimits?.openFiles !== undefined) args.push(`--nofile=${rlimits.openFiles}:${rlimits.openFiles}`);
  return args;
}

/**
 * bubblewrap's options: `/` read-only; a fresh `/dev` and a `/proc` of the sandbox's own pid namespace;
 * the private tmp at `/tmp` and at its own path (TMPDIR names it, so a file the child names there, such as
 * Fen's `final-text-path`, is the same file for the parent); the readable paths under the host's `/tmp`
 * read-only again at their own place (before the writable ones, which may lie inside them); the writable
 * paths read-write at their own place; the child killed with its parent; a pid namespace (when its init dies the kernel kills every
 * process in it, so nothing of the tree outlives bubblewrap); a network namespace unless `network`.
 */
function bwrapArgs(cwd: string, readable: readonly string[], writable: readonly string[], scratchDir: string, network: boolean): string[] {
  const args = ['--die-with-parent', '--unshare-pid'];
  if (!network) args.push('--unshare-net');
  args.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--bind', scratchDir, '/tmp', '--bind', scratchDir, scratchDir);
  for (const path of readable) if (path === '/tmp' || path.startsWith('/tmp/')) args.push('--ro-bind', path, path);
  for (const path of writable) args.push('--bind', path, path);
  args.push('--chdir', cwd);
  return args;
}

/** `path` with its links resolved; a confinement error when it does not exist. */
function existingPath(path: string): string {
  try {
    return realpathSync(path);
  } catch (error) {
    throw confinementError(`the sandbox's writable path ${JSON.stringify(path)} cannot be used: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/**
 * Removes a sandbox's private tmp directory and everything the child left in it: only a real directory
 * (not a link) owned by this user and named as {@link confine} names them. Never throws.
 */
export function removeScratch(dir: string): void {
  try {
    const stat = lstatSync(dir);
    if (!stat.isDirectory() || stat.uid !== process.getuid?.() || !basename(dir).startsWith(SCRATCH_PREFIX)) return;
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // already removed, or not removable: nothing more to do
  }
}
