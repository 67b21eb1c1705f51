// The run options of one supervise command (protocol, command, environment, timers), for one run or a batch, and those of a run on a daemon.
import type { ConnectOptions, RunOptions } from '../run/types/index.js';
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
    url: options.url,
    mewTagCase: options.mewTagCase,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) Object.assign(shared, { [key]: value });
  }
  return shared;
}

/** The options of a run on a daemon (`--url` with no command): connectRun's. */
export function connectOptionsFrom(options: CliOptions, task: string): ConnectOptions {
  const connect: ConnectOptions = { protocol: options.protocol as ConnectOptions['protocol'], url: options.url!, task, keepAlive: options.keepAlive, handleParentSignals: false };
  const optional: Partial<ConnectOptions> = {
    sessionId: options.sessionId,
    mewTagCase: options.mewTagCase,
    runId: options.runId,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
    killGraceMs: options.killGraceMs,
    readyTimeoutMs: options.readyTimeoutMs,
    finalizeGraceMs: options.finalizeGraceMs,
    stallTimeoutMs: options.stallTimeoutMs,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) Object.assign(connect, { [key]: value });
  }
  return connect;
}
