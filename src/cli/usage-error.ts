// The error type for everything the user must fix on the command line (exit code 2).

/** A mistake in how supervise was called; its message names the option and says how to fix it. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
