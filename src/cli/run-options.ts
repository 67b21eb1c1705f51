// The run options every run of one supervise command shares (protocol, command, environment, timers), for one run or a batch.
import type { RunOptions } from '../run/types/index.js';
import type { CliOptions } from './args.js';

/** The options given on the command line, as spawnRun options (the task and the per-run parts are the caller's). */
export function sharedRunOptions(options: CliOptions): Omit<RunOptions, 'task'> {
  const shared: Omit<RunOptions, 'task'> = {
    protocol: options.protocol,
    command: options.command,
    args: options.args,
    env: options.env,
    keepFiles: options.keepFiles,
  };
  const optional: Partial<RunOptions> = {
    cwd: options.cwd,
    stateDir: options.stateDir,
    timeoutMs: options.timeoutMs,
    killGraceMs: options.killGraceMs,
    readyTimeoutMs: options.readyTimeoutMs,
    finalizeGraceMs: options.finalizeGraceMs,
    stallTimeoutMs: options.stallTimeoutMs,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) Object.assign(shared, { [key]: value });
  }
  return shared;
}
