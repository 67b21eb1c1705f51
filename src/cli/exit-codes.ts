// The exit codes of supervise, the mapping from a run's outcome to one of them, and the worst of a batch.

/** Every exit code supervise uses; documented in --help and docs/cli.md. */
export const EXIT = {
  done: 0,
  failed: 1,
  usage: 2,
  notStarted: 3,
  budget: 4,
  timedOut: 124,
  cancelled: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The lines of --help that explain the exit codes, kept next to the codes so they cannot drift apart. */
export const EXIT_CODE_HELP: ReadonlyArray<readonly [ExitCode, string]> = [
  [EXIT.done, 'the run ended done (also when the answer was truncated: a warning says so on stderr)'],
  [EXIT.failed, 'the run failed (the reason is on stderr and in the outcome\'s "error")'],
  [EXIT.usage, 'usage error: bad or missing option, missing task, unreadable task or controls file'],
  [EXIT.notStarted, 'the child command could not be started'],
  [EXIT.budget, 'the run was stopped by its budget (--max-*) and did not end done (one that answered when asked exits 0)'],
  [EXIT.timedOut, 'the run timed out (--timeout)'],
  [EXIT.cancelled, 'the run was cancelled (a cancel control, SIGINT/SIGTERM/SIGHUP, or stdout closed early)'],
];

/** What the exit code of a finished run depends on. */
export interface OutcomeSummary {
  status: 'done' | 'cancelled' | 'failed' | 'timed-out';
  /** True when the child process never started (spawn error such as ENOENT or EACCES). */
  notStarted: boolean;
  /** The outcome's error code. */
  errorCode?: string | undefined;
}

export function exitCodeFor(outcome: OutcomeSummary): ExitCode {
  if (outcome.notStarted) return EXIT.notStarted;
  if (outcome.errorCode === 'budget-exceeded' && outcome.status !== 'done') return EXIT.budget;
  switch (outcome.status) {
    case 'done':
      return EXIT.done;
    case 'failed':
      return EXIT.failed;
    case 'timed-out':
      return EXIT.timedOut;
    case 'cancelled':
      return EXIT.cancelled;
  }
}

/**
 * Batch mode's exit code is the worst of its tasks', in this order (worst first): cancelled (the batch
 * was interrupted), usage (a bad task line), could not start, failed, stopped by the budget, timed out, done.
 */
const SEVERITY: readonly ExitCode[] = [EXIT.done, EXIT.timedOut, EXIT.budget, EXIT.failed, EXIT.notStarted, EXIT.usage, EXIT.cancelled];

/** The worse of two exit codes (see {@link SEVERITY}). */
export function worseExitCode(a: ExitCode, b: ExitCode): ExitCode {
  return SEVERITY.indexOf(b) > SEVERITY.indexOf(a) ? b : a;
}
