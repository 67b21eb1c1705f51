// supervise --tasks: runs one task per line through a supervisor pool, one JSON outcome line per task on stdout, the usage ledger on stderr at the end.
import { APPROVING_PROTOCOLS } from '../api/registry.js';
import { createReadStream } from 'node:fs';
import { access, constants } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { SupervisorClosedError } from '../pool/errors.js';
import { approveCallbackFor } from './approval-policy.js';
import { sharedRunOptions } from './run-options.js';
import { createSupervisor } from '../pool/supervisor.js';
import type { PoolRun, RateLimitGateState, Supervisor } from '../pool/types.js';
import { checkRunOptions } from '../api/spawn-run.js';
import { sharedBudget } from '../run/shared-budget.js';
import type { JsonSchema, Outcome, RunOptions } from '../api/types.js';
import { usageLines } from './usage-report.js';
import { DEFAULT_PARALLEL, type CliOptions } from './args.js';
import { BatchProgress, type BatchCounts } from './batch-progress.js';
import { EXIT, exitCodeFor, worseExitCode, type ExitCode } from './exit-codes.js';
import { LineSplitter, type SplitLine } from '../text/line-splitter.js';
import type { CliStreams } from './streams.js';
import { Stdout } from './output.js';
import { formatElapsed } from './progress.js';
import { progressDisplay } from './progress-display.js';
import type { ProgressDisplay } from './progress-display.js';
import { handleSignals } from './signals.js';
import { parseTaskLine } from './task-line.js';
import { UsageError } from './usage-error.js';

/** A task line longer than this is reported and skipped (a task must also fit one wire line, 64 KiB). */
const MAX_TASK_LINE_BYTES = 1024 * 1024;
/** Reading the tasks pauses while this many tasks wait for a slot: a huge file does not become a huge queue. */
const QUEUE_AHEAD = 256;

/** Checks that the tasks file can be read before anything starts (a usage error otherwise). */
async function openTasks(path: string, streams: CliStreams): Promise<Readable> {
  if (path === '-') return streams.stdin();
  try {
    await access(path, constants.R_OK);
  } catch (error) {
    throw new UsageError(`--tasks ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)}).`);
  }
  return createReadStream(path);
}

function poolDefaults(options: CliOptions, outputSchema: JsonSchema | undefined): Partial<RunOptions> {
  const defaults: Partial<RunOptions> = sharedRunOptions(options, outputSchema);
  // --approve ask is refused with --tasks (args.ts): no terminal can be shared by many runs at once.
  if (APPROVING_PROTOCOLS.includes(options.protocol)) defaults.approve = approveCallbackFor(options.approve, undefined, () => undefined);
  return defaults;
}

/** The batch: reads task lines, queues them, reports each outcome, and decides the exit code. */
class Batch {
  readonly #sup: Supervisor;
  readonly #stdout: Stdout;
  readonly #progress: BatchProgress;
  readonly #tasks = new Map<PoolRun, { id: string | number; line: number }>();
  readonly #ids = new Set<string>();
  readonly #invalidLines: number[] = [];
  #worst: ExitCode = EXIT.done;
  #stopped = false;
  #wakeReader: (() => void) | undefined;
  /** What was last said of each rate-limit gate (its time, or open), so a change is said once. */
  readonly #gatesSaid = new Map<string, string>();
  /** The last stdout write: awaited before the summary, so every outcome line is out first. */
  #lastWrite: Promise<void> = Promise.resolve();

  constructor(options: CliOptions, streams: CliStreams, defaults: Partial<RunOptions>, display: ProgressDisplay) {
    this.#sup = createSupervisor({
      concurrency: options.parallel ?? DEFAULT_PARALLEL,
      defaults,
      ...(options.totalBudget === undefined ? {} : { budget: { total: options.totalBudget } }),
      ...(options.warm === undefined ? {} : { warm: options.warm }),
      // supervise owns SIGINT/SIGTERM/SIGHUP: first = stop and cancel, second = kill now.
      handleParentSignals: false,
    });
    this.#stdout = new Stdout(streams.stdout);
    this.#progress = new BatchProgress(display, streams.stderr, () => this.counts);
    this.#sup.on('outcome', (outcome, run) => this.#onOutcome(outcome, run));
    for (const event of ['start', 'outcome'] as const) this.#sup.on(event, () => this.#wake());
    this.#sup.on('rate-limit', (gate) => this.#onGate(gate));
    this.#stdout.onGone(() => this.stop('stdout was closed by its reader', 'cancel'));
  }

  get pool(): Supervisor {
    return this.#sup;
  }

  get counts(): BatchCounts {
    const counts: BatchCounts = { ...this.#sup.counts, invalid: this.#invalidLines.length };
    const gates = Object.values(this.#sup.rateLimited);
    const shut = gates.filter((gate) => gate.state === 'shut').map((gate) => gate.until ?? 0);
    if (shut.length > 0) counts.rateLimited = `rate-limited until ${clockTime(Math.max(...shut))}`;
    else if (gates.length > 0) counts.rateLimited = 'rate-limited: reopening';
    return counts;
  }

  /** A gate shut (or its time moved) or opened: said once, in every mode but --quiet (the live line shows the rest). */
  #onGate(gate: RateLimitGateState): void {
    const said = gate.state === 'shut' ? `until ${gate.until ?? 0}` : gate.state === 'open' ? 'open' : undefined;
    if (said === undefined || this.#gatesSaid.get(gate.key) === said) return;
    this.#gatesSaid.set(gate.key, said);
    const report = gate.cause?.report;
    const why = report === undefined ? '' : ` (${[report.httpStatus === undefined ? '' : `HTTP ${report.httpStatus}`, report.nativeType].filter((part) => part !== '').join(' ')} from run ${gate.cause!.runId})`;
    const key = gate.key === 'default' ? '' : ` [${gate.key}]`;
    if (gate.state === 'shut') this.#progress.inform(`rate-limited${key}${why}: no task starts before ${clockTime(gate.until ?? 0)}`);
    else this.#progress.inform(`rate limit over${key}: tasks start again, one, then twice as many at each step`);
  }

  /** Stops reading tasks and stops the pool (`cancel`: the runs' kill ladder; `kill`: SIGKILL now). */
  stop(why: string, mode: 'cancel' | 'kill'): void {
    this.#progress.say(why);
    this.#stopped = true;
    this.#worst = worseExitCode(this.#worst, EXIT.cancelled);
    this.#wake();
    void this.#sup.shutdown({ mode });
  }

  async run(input: Readable, options: CliOptions): Promise<ExitCode> {
    const splitter = new LineSplitter(MAX_TASK_LINE_BYTES);
    try {
      for await (const chunk of input) {
        for (const line of splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer))) await this.#take(line, options);
        if (this.#stopped) break;
      }
      if (!this.#stopped) for (const line of splitter.end()) await this.#take(line, options);
    } catch (error) {
      this.#progress.say(`reading the tasks stopped: ${(error as Error).message}`);
      this.#worst = worseExitCode(this.#worst, EXIT.usage);
    } finally {
      input.destroy();
    }
    await this.#sup.onIdle();
    await this.#sup.shutdown();
    await this.#lastWrite;
    this.#progress.stop();
    this.#summarize();
    for (const line of usageLines(this.#sup.usage())) this.#progress.inform(line);
    return this.#worst;
  }

  async #take(line: SplitLine, options: CliOptions): Promise<void> {
    if (this.#stopped) return;
    if (line.kind === 'too-long') return this.#invalid(line.lineNumber, `longer than ${line.limit} bytes`);
    const parsed = parseTaskLine(line.text, line.lineNumber);
    if (parsed.kind === 'skip') return;
    if (parsed.kind === 'invalid') return this.#invalid(line.lineNumber, parsed.reason, parsed.id);
    const { task } = parsed;
    const key = JSON.stringify(task.id);
    if (this.#ids.has(key)) return this.#invalid(line.lineNumber, `duplicate id ${key}`, task.id);
    let run: PoolRun;
    try {
      run = this.#sup.spawn({
        task: task.task,
        env: { ...options.env, ...task.env },
        ...(task.timeoutMs === undefined ? {} : { timeoutMs: task.timeoutMs }),
      });
    } catch (error) {
      if (error instanceof SupervisorClosedError) return;
      return this.#invalid(line.lineNumber, (error as Error).message, task.id);
    }
    this.#ids.add(key);
    this.#tasks.set(run, { id: task.id, line: line.lineNumber });
    this.#progress.draw();
    while (!this.#stopped && this.#sup.queued >= QUEUE_AHEAD) await new Promise<void>((resolve) => (this.#wakeReader = resolve));
  }

  #invalid(line: number, reason: string, id?: string | number): void {
    this.#invalidLines.push(line);
    this.#worst = worseExitCode(this.#worst, EXIT.usage);
    this.#lastWrite = this.#stdout.write(`${JSON.stringify({ ...(id === undefined ? {} : { id }), line, status: 'invalid', error: reason })}\n`);
    this.#progress.draw();
  }

  #onOutcome(outcome: Outcome, run: PoolRun): void {
    const task = this.#tasks.get(run);
    if (task === undefined) return;
    this.#worst = worseExitCode(this.#worst, exitCodeFor({ status: outcome.status, notStarted: outcome.spawnFailed, errorCode: outcome.errorCode }));
    this.#lastWrite = this.#stdout.write(`${JSON.stringify({ id: task.id, line: task.line, ...outcome })}\n`);
    this.#progress.draw();
  }

  #wake(): void {
    const wake = this.#wakeReader;
    this.#wakeReader = undefined;
    wake?.();
  }

  #summarize(): void {
    const counts = this.counts;
    const total = counts.done + counts.failed + counts.timedOut + counts.cancelled + counts.invalid;
    const parts = [`${counts.done} done`, `${counts.failed} failed`, `${counts.timedOut} timed out`, `${counts.cancelled} cancelled`];
    if (counts.invalid > 0) parts.push(`${counts.invalid} invalid (line${counts.invalid > 1 ? 's' : ''} ${this.#invalidLines.join(', ')})`);
    const summary = `${total} task${total === 1 ? '' : 's'}: ${parts.join(', ')} (${formatElapsed(this.#progress.elapsedMs)})`;
    // --quiet keeps it for a batch with something to report, as the exit code does.
    if (this.#worst === EXIT.done) this.#progress.inform(summary);
    else this.#progress.say(summary);
  }
}

/**
/** An epoch-ms time as the machine's clock shows it (`14:03:07`). */
function clockTime(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 8);
}

/**
 * The run options every task shares, checked once (a budget on a figure the protocol does not report, say):
 * a usage error before any task starts, rather than the same error on every line.
 */
function checkedDefaults(options: CliOptions, outputSchema: JsonSchema | undefined): Partial<RunOptions> {
  const defaults = poolDefaults(options, outputSchema);
  const checked = { ...defaults, task: 'a task' } as RunOptions;
  if (options.totalBudget !== undefined) checked.budget = { ...defaults.budget, shared: sharedBudget(options.totalBudget) };
  try {
    checkRunOptions(checked);
  } catch (error) {
    throw new UsageError(`cannot start the tasks: ${(error as Error).message}`);
  }
  return defaults;
}

/**
 * Batch mode of supervise (`--tasks`). Resolves with the exit code once every tree is gone and stdout is flushed.
 * `withPool` (supervise dashboard) gets the batch's pool before the first task is read.
 */
export async function runBatch(
  options: CliOptions,
  tasksPath: string,
  streams: CliStreams,
  outputSchema: JsonSchema | undefined,
  withPool?: (pool: Supervisor) => Promise<void>,
): Promise<ExitCode> {
  const defaults = checkedDefaults(options, outputSchema);
  const display = await progressDisplay(streams.stderr.isTTY === true, options.quiet);
  const input = await openTasks(tasksPath, streams);
  const batch = new Batch(options, streams, defaults, display);
  if (withPool !== undefined) {
    try {
      await withPool(batch.pool);
    } catch (error) {
      input.destroy();
      await batch.pool.shutdown();
      throw error;
    }
  }
  const removeSignalHandlers = handleSignals({
    cancel: (signal) => batch.stop(`${signal}: starting no more tasks, cancelling the running ones (send it again to kill them at once)`, 'cancel'),
    killNow: (signal) => batch.stop(`${signal} again: killing every running task's process tree now`, 'kill'),
  });
  try {
    return await batch.run(input, options);
  } finally {
    removeSignalHandlers();
  }
}
