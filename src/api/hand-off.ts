// Warm runs: a child started with no task that waits in ready, and the later hand-off of its task with the task's own terms (a pool's warm children).
import type { Context } from '@opentelemetry/api';
import { linkAbortSignal } from '../run/abort-link.js';
import { SupervisedRun } from '../run/supervised-run.js';
import { startRunTelemetry } from '../observe/run-telemetry.js';
import { journalRun, openJournal } from './journal-option.js';
import { resolveOptions, validateFor } from './spawn-run.js';
import type { Run, RunOptions } from './types.js';

/**
 * The options that belong to one task and apply from its hand-off. Every other option (command, args, env,
 * cwd, protocol, stateDir, approvals, bounds of the channel...) shapes the child itself: its start profile.
 */
export const TASK_OPTION_KEYS = [
  'task',
  'runId',
  'timeoutMs',
  'deadline',
  'budget',
  'outputSchema',
  'outputInstructions',
  'keepAlive',
  'stallTimeoutMs',
  'ackTimeoutMs',
  'signal',
  'journal',
  'tracing',
] as const satisfies ReadonlyArray<keyof RunOptions>;

/** `options` without the per-task ones ({@link TASK_OPTION_KEYS}): what shapes the child. */
export function profileOptions(options: RunOptions): RunOptions {
  const profile: Record<string, unknown> = { ...options };
  for (const key of TASK_OPTION_KEYS) delete profile[key];
  return profile as unknown as RunOptions;
}

/**
 * The options a warm child is started with: its profile's, no task, kept alive while it waits (no automatic
 * close), no deadline, and no span of its own (a task's span starts at its hand-off).
 */
export function warmStartOptions(profile: RunOptions): RunOptions {
  return { ...profileOptions(profile), keepAlive: true, timeoutMs: Infinity, tracing: false };
}

/** Whether `run` can be handed a task once it waits in ready: a run of spawnRun (or createInMemoryRun), not another handle. */
export function isWarmable(run: Run): boolean {
  return run instanceof SupervisedRun;
}

/** Why `run` cannot be handed a task now, or undefined when it can (a run of spawnRun started without one, waiting in ready). */
export function cannotHandOff(run: Run): string | undefined {
  if (!(run instanceof SupervisedRun)) return 'it is not a run of spawnRun (or createInMemoryRun)';
  return run.cannotTakeTask;
}

/**
 * Hands a task to `run`, a child started with {@link warmStartOptions} and waiting in ready. `options` are
 * the task's whole options (its profile's and its own), checked as spawnRun checks them; the per-task ones
 * apply from now: the deadline (`timeoutMs` counts from now), budget, output schema, keepAlive, the stall
 * and ack bounds, the abort signal; the journal and the run's span (under `parent`) start now. Throws a
 * TypeError or RangeError (like spawnRun) and changes nothing when the options are invalid or the run
 * cannot take a task.
 */
export function handOff(run: Run, options: RunOptions, parent?: Context): void {
  const refusal = cannotHandOff(run);
  if (refusal !== undefined) throw new TypeError(`cannot hand a task to run ${run.id}: ${refusal}`);
  const warm = run as SupervisedRun;
  if (options.task === undefined) throw new TypeError('a hand-off needs options.task');
  const resolved = resolveOptions({ ...options, runId: run.id }, warm.protocol);
  validateFor(warm.protocol, resolved);
  const journal = openJournal(resolved);
  // The run's own protocol name (a test's in-memory run has none of the registry's).
  const protocol = warm.protocolName;
  const telemetry = startRunTelemetry({ protocol, runId: run.id, tracing: options.tracing, ...(parent === undefined ? {} : { parent }) });
  const link = resolved.signal === undefined ? undefined : linkAbortSignal(resolved.signal);
  if (link !== undefined) void run.outcome.then(link.release);
  if (journal !== undefined) journalRun(run, journal, { ...resolved, protocol });
  telemetry?.listen(run);
  warm.takeTask({
    task: resolved.task!,
    deadlineMs: resolved.deadlineMs,
    stallTimeoutMs: resolved.stallTimeoutMs,
    ackTimeoutMs: resolved.ackTimeoutMs,
    keepAlive: resolved.keepAlive,
    budget: resolved.budget,
    sharedBudget: resolved.sharedBudget,
    outputSchema: resolved.outputSchema,
    signal: link?.signal,
  });
}
