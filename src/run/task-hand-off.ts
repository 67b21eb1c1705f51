// A task handed to a run that waits in ready without one (a pool's warm child): the per-task terms it takes with it.
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';

/**
 * What a run started without a task takes with its task, resolved as spawnRun resolves them: the options
 * that belong to one task rather than to the child (its start profile). `deadlineMs` counts from the
 * hand-off; the child was started before it and does not know it (the core's timer enforces it).
 */
export type TaskHandOff = Pick<
  ResolvedRunOptions,
  'deadlineMs' | 'stallTimeoutMs' | 'ackTimeoutMs' | 'keepAlive' | 'budget' | 'sharedBudget' | 'outputSchema' | 'signal'
> & {
  /** The prompt, with `outputSchema`'s instructions appended. */
  task: string;
};

/** Why a run cannot take a task now, or undefined when it can. */
export function cannotTakeTask(run: { taskless: boolean; taken: boolean; ended: boolean; state: string; turns: number }): string | undefined {
  if (!run.taskless) return 'it was started with a task';
  if (run.taken) return 'it was already handed a task';
  if (run.ended) return 'it has ended';
  if (run.state !== 'ready' || run.turns > 0) return `it is not waiting for its first task (state ${run.state})`;
  return undefined;
}
