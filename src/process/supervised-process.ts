// Spawns one child as a process-group leader and owns its life: exit detection, output tail, kill ladder.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { ProcessTree, unwatchTree, watchTree } from './process-tree.js';
import { readRow } from './proc-table.js';
import type { ProcessTable } from './proc-table.js';
import { refreshTogether, signalTogether, sweepTogether } from './shared-scans.js';
import { confine, removeScratch } from './confinement.js';
import type { ChildRlimits, ConfinedCommand, SandboxSpec } from './confinement.js';
import { sampleTree } from './tree-usage.js';
import type { TreeUsage, UsageWatch } from './tree-usage.js';
import type { WatchEntry, WatchedFiles } from './watchdog.js';

/** The signal a kill step sent and the pids it targeted (the group leader pid stands for its group). */
export interface KillStep {
  signal: 'SIGTERM' | 'SIGKILL';
  pids: number[];
}

export interface SupervisedProcessOptions {
  command: string;
  args: readonly string[];
  cwd?: string;
  /** The complete environment of the child (nothing is merged in). */
  env: Record<string, string>;
  /** `ignore` (default): stdin is /dev/null. `pipe`: {@link SupervisedProcess.stdin} is writable. */
  stdin?: 'ignore' | 'pipe';
  /**
   * `tail` (default): stdout is kept in the tail and passed to `onOutput` like stderr. `driver`: stdout
   * is left to the reader of {@link SupervisedProcess.stdout}; only stderr is tailed.
   */
  stdout?: 'tail' | 'driver';
  /** Grace at each step of the kill ladder. */
  killGraceMs: number;
  /**
   * An environment entry (`NAME=value`) set in `env` and unique to this child: descendants inherit it,
   * which finds them even after they left the group and their parent died.
   */
  marker?: string;
  /** Bytes of combined stdout/stderr (stderr only with `stdout: 'driver'`) kept. */
  outputTailBytes: number;
  /** Each chunk of stdout/stderr as it arrives (raw bytes; the receiver decodes only when it needs text). */
  onOutput?: (chunk: Buffer, stream: 'stdout' | 'stderr') => void;
  onKill?: (step: KillStep) => void;
  /**
   * stdout and stderr go to this file (appended, 0600) instead of pipes: a child whose parent may die
   * must not die of writing to a pipe nobody reads (a durable run). Nothing is passed to `onOutput`; the
   * tail is the file's last bytes. `stdout: 'driver'` does not combine with it.
   */
  outputFile?: string;
  /**
   * Adopt a child that already runs (a durable run re-attached by another parent) instead of spawning
   * one: its pid and its start time (a pid that now names another process is never signalled). Its exit
   * is seen by polling /proc (it is not this process's child: its exit code is unknown).
   */
  adopt?: { pid: number; start: string };
  /** The child's own rlimits, set before exec by util-linux `prlimit` (see confinement.ts). */
  rlimits?: ChildRlimits;
  /**
   * Runs the child in a bubblewrap sandbox (see confinement.ts). Its two wrapper processes are the
   * spawned root: signals other than SIGKILL go to the processes below them (see ProcessTree).
   */
  sandbox?: SandboxSpec;
}

/** How the root process ended. */
export interface ProcessExit {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the command could not be started at all (no exit follows). */
  spawnError?: Error & { code?: string };
}

/** Everything known once the whole tree is gone. */
export interface ProcessReport extends ProcessExit {
  /** The ladder signalled the tree. */
  killed: boolean;
  /** SIGKILL was sent. */
  escalated: boolean;
  outputTail: string;
}

/** How often the ladder checks whether the tree is gone while it waits. */
const GONE_POLL_MS = 50;
/** Faster checks during the first moments of a wait, when a signalled tree is usually already gone. */
const FAST_POLL_MS = 5;
const FAST_POLL_WINDOW_MS = 100;
/** After SIGKILL, how long to wait for the tree to disappear before reporting anyway (never hang). */
const AFTER_KILL_WAIT_MS = 5000;
/**
 * How often an adopted child (not this process's: no exit event) is looked for in /proc. Its exit is
 * also told by its `exit` event, which the driver reads at once; this poll only bounds how long a child
 * that died without one goes unnoticed. The timer keeps the process alive, as a child's handle does.
 */
const ADOPTED_POLL_MS = 250;
/**
 * Once the tree is gone, how long the reap waits for the pipes to deliver what it wrote before it went
 * (their ends come as soon as nothing holds them: usually within a turn of the event loop). Only a process
 * that left the tree and holds them open makes it wait this long.
 */
const PIPE_DRAIN_MS = 1000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function ignorePipeError(): void {
  // See the pipes' listeners in the constructor.
}

function noWalk(): void {
  // A walk that failed leaves the tree as it was: the exit's sweep and the ladder's passes come after it.
}

/**
 * One child process, started with no shell, stdin closed (or a pipe), as the leader of its own process
 * group, with unbuffered pipes of which only a bounded tail is kept (stdout may go to a driver instead).
 * Knows nothing about any protocol.
 *
 * `reaped` resolves once the root exited and no process of its tree is left: when something of the
 * tree survives the root (or `startKillLadder()` is called), the kill ladder runs: wait `killGraceMs`,
 * SIGTERM the group and every known descendant, wait again, SIGKILL them all.
 */
export class SupervisedProcess {
  readonly pid: number | undefined;
  /** Resolves when the root exited or failed to spawn. */
  readonly exited: Promise<ProcessExit>;
  /** Resolves once the whole tree is gone (or SIGKILL was sent and the wait ran out). Never rejects. */
  readonly reaped: Promise<ProcessReport>;
  /** The child's stdin, with `stdin: 'pipe'` (write errors such as EPIPE are the writer's to handle). */
  readonly stdin: Writable | undefined;
  /** The child's stdout, with `stdout: 'driver'`. */
  readonly stdout: Readable | undefined;

  /** What the ladder and the tail need later: not the environment and arguments, only the spawn reads them. */
  readonly #options: Omit<SupervisedProcessOptions, 'env' | 'args'>;
  readonly #tree: ProcessTree | undefined;
  readonly #subprocess: ChildProcess | undefined;
  readonly #output: Buffer[] = [];
  #outputBytes = 0;
  /** The root exited (or never spawned): its pid may belong to another process from now on. */
  #rootGone = false;
  /** Set once the exit's sweep found the root's orphans: only then may anyone conclude the tree is gone. */
  #exit: ProcessExit | undefined;
  /** The table that sweep read, after the exit: what `#reap` checks for survivors (then dropped). */
  #exitTable: ProcessTable | undefined;
  /** The ladder started by `startKillLadder()`; `hurry()` may run a faster one beside it. */
  #ladder: Promise<void> | undefined;
  #hurried = false;
  readonly #ladders = new Set<Promise<void>>();
  #killed = false;
  #escalated = false;
  /** Every pipe from the child reached its end ('close' of the child process: exited, and its stdout and stderr ended). */
  #pipesEnded: Promise<void> | undefined;
  #resolveExited!: (exit: ProcessExit) => void;
  /** The sandbox's private tmp directory, removed by {@link release}. */
  #scratchDir: string | undefined;
  /** Usage samplings of the tree, stopped once it is reaped. */
  readonly #usageWatches = new Set<UsageWatch>();
  /** The tree was reaped: nothing is sampled any more. */
  #treeReaped = false;

  constructor(options: SupervisedProcessOptions) {
    const { env: _env, args: _args, ...kept } = options;
    this.#options = kept;
    this.exited = new Promise((resolve) => (this.#resolveExited = resolve));
    if (options.adopt !== undefined) {
      this.pid = options.adopt.pid;
      this.#tree = new ProcessTree(options.adopt.pid, options.marker, options.adopt.start);
      watchTree(this.#tree);
      this.#watchAdopted(this.#tree);
      this.reaped = this.exited.then((exit) => this.#reap(exit));
      return;
    }
    let subprocess: ChildProcess | undefined;
    let outputFd: number | undefined;
    let confined: ConfinedCommand | undefined;
    try {
      if (options.rlimits !== undefined || options.sandbox !== undefined) {
        confined = confine(options.command, options.args, options.env, options.cwd ?? process.cwd(), options.rlimits, options.sandbox);
        this.#scratchDir = confined.scratchDir;
      }
      if (options.outputFile !== undefined) outputFd = openSync(options.outputFile, 'a', 0o600);
      // Node's own spawn, not execa: every execa option that adds something (buffering, the result
      // promise, cleanup, the forced kill) would be turned off here, and its promise layer alone kept
      // about 23 KB of heap per child (docs/architecture.md, Dependencies).
      subprocess = spawn(confined?.command ?? options.command, confined?.args ?? [...options.args], {
        cwd: options.cwd,
        env: confined === undefined ? options.env : { ...options.env, ...confined.env },
        shell: false,
        detached: true,
        stdio: [options.stdin ?? 'ignore', outputFd ?? 'pipe', outputFd ?? 'pipe'],
        windowsHide: true,
      });
    } catch (error) {
      // Refused synchronously: E2BIG, an invalid argument (a NUL byte), a file that cannot be opened...
      this.#settleExit({ exitCode: null, signal: null, spawnError: spawnError(error, options) });
    } finally {
      // The child holds its own copy of the descriptor: the parent's is not needed.
      if (outputFd !== undefined) closeSync(outputFd);
    }
    this.#subprocess = subprocess;
    this.pid = subprocess?.pid;
    if (subprocess !== undefined) {
      let spawned = false;
      subprocess.once('spawn', () => (spawned = true));
      // ENOENT, EACCES, EMFILE... come as 'error' instead of 'exit'. One after the spawn (a failed
      // kill) changes nothing here, but without a listener it would throw in the parent.
      subprocess.on('error', (error) => {
        if (!spawned) this.#settleExit({ exitCode: null, signal: null, spawnError: spawnError(error, this.#options) });
      });
      // 'exit' comes as soon as the root is gone ('close' also waits for the pipes, which a surviving
      // grandchild may hold open for as long as it lives).
      subprocess.once('exit', (exitCode, signal) => this.#settleExit({ exitCode, signal }));
      this.#pipesEnded = new Promise((resolve) => subprocess.once('close', () => resolve()));
      if (options.stdout !== 'driver') subprocess.stdout?.on('data', (chunk: Buffer) => this.#keep(chunk, 'stdout'));
      subprocess.stderr?.on('data', (chunk: Buffer) => this.#keep(chunk, 'stderr'));
      // A pipe that fails (the child exits while we write: EPIPE) must not crash the parent: the writer
      // sees the failed write, the readers see the end.
      for (const pipe of [subprocess.stdin, subprocess.stdout, subprocess.stderr]) pipe?.on('error', ignorePipeError);
    }
    this.stdin = options.stdin === 'pipe' ? (subprocess?.stdin ?? undefined) : undefined;
    this.stdout = options.stdout === 'driver' ? (subprocess?.stdout ?? undefined) : undefined;
    this.#tree = this.pid === undefined ? undefined : new ProcessTree(this.pid, options.marker, undefined, confined?.wrappers ?? 0);
    if (this.#tree !== undefined) watchTree(this.#tree);
    this.reaped = this.exited.then((exit) => this.#reap(exit));
  }

  /** True while the root process has not exited (and did spawn). */
  get running(): boolean {
    return this.pid !== undefined && !this.#rootGone;
  }

  /**
   * Starts the kill ladder unless it runs already: wait `killGraceMs` for the tree to go by itself
   * (skipped when `immediate`), SIGTERM, wait again, SIGKILL. Idempotent.
   */
  startKillLadder(immediate = false): void {
    if (this.#tree === undefined || this.#ladder !== undefined) return;
    this.#ladder = this.#startLadder(this.#tree, immediate ? 0 : this.#options.killGraceMs, this.#options.killGraceMs);
  }

  /** Runs a ladder with a shorter grace beside any running one (parent shutdown). Once. */
  hurry(graceMs: number): void {
    if (this.#tree === undefined || this.#hurried) return;
    this.#hurried = true;
    this.#startLadder(this.#tree, graceMs, graceMs);
  }

  /** Sends `signal` to the root process only (a protocol's own stop signal, e.g. SIGINT); false when it is not running. */
  signal(signal: NodeJS.Signals): boolean {
    // In a sandbox the root is bubblewrap's monitor, which would die of the signal: the agent below gets it.
    const target = this.running ? this.#tree?.agentPid() : undefined;
    if (target === undefined) return false;
    try {
      return process.kill(target, signal);
    } catch {
      return false;
    }
  }

  /**
   * Samples what the tree uses every `intervalMs` (one process-table pass shared by every tree sampled
   * at that interval), until the tree is reaped or the returned watch is stopped.
   */
  sampleUsage(intervalMs: number, onSample: (usage: TreeUsage) => void): UsageWatch {
    const tree = this.#tree;
    if (tree === undefined || this.#treeReaped) return { stop: () => undefined };
    const watch = sampleTree(tree, intervalMs, onSample);
    this.#usageWatches.add(watch);
    return {
      stop: () => {
        this.#usageWatches.delete(watch);
        watch.stop();
      },
    };
  }

  /**
   * Releases what the child's confinement left once the run no longer needs it: the sandbox's private
   * tmp directory (a file the child named there, such as Fen's answer, has been read by then). Idempotent.
   */
  release(): void {
    if (this.#scratchDir === undefined) return;
    removeScratch(this.#scratchDir);
    this.#scratchDir = undefined;
  }

  /** Synchronously SIGKILLs the group and every known descendant (for the parent's 'exit' handler). */
  killNow(): void {
    if (this.#tree === undefined) return;
    const pids = this.#tree.signal('SIGKILL', true);
    if (pids.length === 0) return;
    this.#killed = true;
    this.#escalated = true;
    this.#options.onKill?.({ signal: 'SIGKILL', pids });
  }

  /**
   * What the watchdog needs to reap this tree if the parent dies, with the run's files it should
   * remove then; undefined when nothing was spawned.
   */
  watchEntry(ownFiles: WatchedFiles | undefined): WatchEntry | undefined {
    if (this.#tree === undefined) return undefined;
    const tree: WatchEntry = { root: this.#tree.root, rootStart: this.#tree.rootStart, marker: this.#options.marker, graceMs: this.#options.killGraceMs };
    if (this.#scratchDir !== undefined) tree.scratchDir = this.#scratchDir;
    return ownFiles === undefined ? tree : { ...tree, ownFiles };
  }

  /**
   * Snapshot of descendants while the root still lives (called when the child says it is exiting), in
   * one table with every other run doing the same in this turn. Nothing waits for it: the exit's marker
   * sweep still finds an orphan whose parent died before the walk.
   */
  snapshot(): void {
    if (this.running && this.#tree !== undefined) refreshTogether(this.#tree).catch(noWalk);
  }

  #settleExit(exit: ProcessExit): void {
    if (this.#rootGone) return;
    this.#rootGone = true;
    const tree = this.#tree;
    if (tree === undefined || exit.spawnError !== undefined) {
      this.#exitSwept(exit, undefined);
      return;
    }
    tree.rootExited();
    // Before anyone can conclude the tree is gone: find descendants orphaned by the root's death, in
    // one pass with every other tree that lost its root (or is signalled) in this turn.
    sweepTogether(tree).then(
      (table) => this.#exitSwept(exit, table),
      () => this.#exitSwept(exit, undefined),
    );
  }

  #exitSwept(exit: ProcessExit, table: ProcessTable | undefined): void {
    this.#exit = exit;
    this.#exitTable = table;
    this.#resolveExited(exit);
  }

  #keep(chunk: Buffer, stream: 'stdout' | 'stderr'): void {
    const limit = this.#options.outputTailBytes;
    if (limit > 0) {
      const kept = chunk.length > limit ? chunk.subarray(chunk.length - limit) : chunk;
      this.#output.push(kept);
      this.#outputBytes += kept.length;
      while (this.#outputBytes - this.#output[0]!.length >= limit) this.#outputBytes -= this.#output.shift()!.length;
    }
    this.#options.onOutput?.(chunk, stream);
  }

  /** A child that polls as adopted: gone, a zombie, or a pid that now names another process. */
  #watchAdopted(tree: ProcessTree): void {
    const poll = setInterval(() => {
      const row = readRow(tree.root);
      if (row !== undefined && !row.zombie && row.start === tree.rootStart) return;
      clearInterval(poll);
      this.#settleExit({ exitCode: null, signal: null });
    }, ADOPTED_POLL_MS);
  }

  #outputTail(): string {
    if (this.#options.outputFile !== undefined) return tailOfFile(this.#options.outputFile, this.#options.outputTailBytes);
    let tail = Buffer.concat(this.#output);
    if (tail.length > this.#options.outputTailBytes) tail = tail.subarray(tail.length - this.#options.outputTailBytes);
    // Skip UTF-8 continuation bytes cut at the front, so the tail starts on a whole character.
    let start = 0;
    while (start < tail.length && start < 3 && (tail[start]! & 0xc0) === 0x80) start++;
    return tail.toString('utf8', start);
  }

  async #reap(exit: ProcessExit): Promise<ProcessReport> {
    if (this.#tree !== undefined) {
      // A grandchild may survive the root (lingering, ignoring signals, or in its own session).
      const table = this.#exitTable;
      this.#exitTable = undefined;
      if (this.#ladder === undefined && this.#tree.alive(table).length > 0) this.startKillLadder();
      while (this.#ladders.size > 0) await Promise.all(this.#ladders);
      unwatchTree(this.#tree);
      this.#treeReaped = true;
      for (const watch of this.#usageWatches) watch.stop();
      this.#usageWatches.clear();
    }
    // The child's 'exit' can come before the last of its output was read from the pipes: read it all
    // (a driver reading stdout has resumed it by now), then drop the pipes, so that a holder outside the
    // tree can neither keep this process alive nor feed the tail.
    await this.#drained();
    this.#subprocess?.stdin?.destroy();
    this.#subprocess?.stdout?.destroy();
    this.#subprocess?.stderr?.destroy();
    return {
      ...exit,
      killed: this.#killed,
      escalated: this.#escalated,
      outputTail: this.#outputTail(),
    };
  }

  /** The pipes ended, or PIPE_DRAIN_MS passed (the timer cleared either way). */
  async #drained(): Promise<void> {
    const ended = this.#pipesEnded;
    if (ended === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, PIPE_DRAIN_MS)))]);
    clearTimeout(timer);
  }

  #startLadder(tree: ProcessTree, firstWaitMs: number, graceMs: number): Promise<void> {
    const ladder = this.#runLadder(tree, firstWaitMs, graceMs).finally(() => this.#ladders.delete(ladder));
    this.#ladders.add(ladder);
    return ladder;
  }

  async #runLadder(tree: ProcessTree, firstWaitMs: number, grace: number): Promise<void> {
    if (firstWaitMs > 0 && (await this.#waitGone(tree, firstWaitMs))) return;
    if (this.#exit !== undefined && tree.isGone()) return;
    this.#killed = true;
    // The signal is sent whether or not anyone listens: never inside an optional call's arguments.
    const termed = await signalTogether(tree, 'SIGTERM');
    this.#options.onKill?.({ signal: 'SIGTERM', pids: termed });
    if (await this.#waitGone(tree, grace)) return;
    this.#escalated = true;
    const killed = await signalTogether(tree, 'SIGKILL');
    this.#options.onKill?.({ signal: 'SIGKILL', pids: killed });
    await this.#waitGone(tree, AFTER_KILL_WAIT_MS);
  }

  /**
   * Waits until the root exited and nothing of the tree is alive; false when `ms` passed first. Wakes at
   * once when the root exits, and polls fast right after a signal (a killed tree goes within milliseconds).
   */
  async #waitGone(tree: ProcessTree, ms: number): Promise<boolean> {
    const start = Date.now();
    const deadline = start + ms;
    for (;;) {
      if (this.#exit !== undefined && tree.isGone()) return true;
      const now = Date.now();
      const left = deadline - now;
      if (left <= 0) return false;
      const poll = now - start < FAST_POLL_WINDOW_MS ? FAST_POLL_MS : GONE_POLL_MS;
      const nap = sleep(Math.min(poll, left));
      await (this.#exit === undefined ? Promise.race([nap, this.exited]) : nap);
    }
  }
}

/**
 * The spawn error, made clear where Node's is misleading: a missing cwd is reported as ENOENT of the
 * command, and a command line in `command` (`'node --version'`) as a program that does not exist.
 */
function spawnError(error: unknown, options: Pick<SupervisedProcessOptions, 'command' | 'cwd'>): Error & { code?: string } {
  const base: Error & { code?: string } = error instanceof Error ? error : new Error(String(error));
  if (base.code !== 'ENOENT') return base;
  let message: string | undefined;
  if (options.cwd !== undefined && !existsSync(options.cwd)) {
    message = `the working directory ${JSON.stringify(options.cwd)} does not exist`;
  } else if (/\s/.test(options.command) && !existsSync(options.command)) {
    message =
      `${base.message}; no program is named ${JSON.stringify(options.command)}: the command is run without a shell, ` +
      `so its arguments go in args (command: ${JSON.stringify(options.command.trim().split(/\s+/)[0])}, args: [...])`;
  }
  if (message === undefined) return base;
  const clear: Error & { code?: string } = new Error(message);
  clear.code = 'ENOENT';
  return clear;
}

/** The last `bytes` of a file as text starting on a whole character; '' when it cannot be read. */
function tailOfFile(path: string, bytes: number): string {
  if (bytes <= 0) return '';
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = statSync(path).size;
    const length = Math.min(size, bytes);
    const tail = Buffer.alloc(length);
    readSync(fd, tail, 0, length, size - length);
    let start = 0;
    while (start < tail.length && start < 3 && (tail[start]! & 0xc0) === 0x80) start++;
    return tail.toString('utf8', start);
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
