// The run options of one supervise command (protocol, command, environment, timers, budget, output schema, limits, sandbox), for one run or a batch, and those of a run on a daemon.
import type { ProtocolName } from '../api/registry.js';
import type { ConnectOptions, JsonSchema, RunOptions } from '../api/types.js';
import { statSync } from 'node:fs';
import type { CliOptions } from './args.js';
import { UsageError } from './usage-error.js';

/**
 * The options given on the command line, as spawnRun options (the task and the per-run parts are the
 * caller's); `outputSchema` is the schema `--output-schema` named, read.
 */
export function sharedRunOptions(options: CliOptions, outputSchema: JsonSchema | undefined): Omit<RunOptions, 'task'> {
  const shared: Omit<RunOptions, 'task'> = {
    // A daemon-only protocol (fuseraft-serve) never gets here: args.ts refuses a command for it.
    protocol: options.protocol as ProtocolName,
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
    latencyBudgetMs: options.latencyBudgetMs,
    journal: options.journal,
    url: options.url,
    mewTagCase: options.mewTagCase,
    budget: options.budget,
    outputSchema,
    limits: options.limits,
    sandbox: options.sandbox,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) Object.assign(shared, { [key]: value });
  }
  return shared;
}

/**
 * The options of a run on a daemon (`--url`/`--socket` with no command): connectRun's. `task` is
 * undefined when re-attaching (fuseraft serve's `--session-id`); `token` was read from `--token-file`.
 */
export function connectOptionsFrom(options: CliOptions, task: string | undefined, token: string | undefined, outputSchema: JsonSchema | undefined): ConnectOptions {
  const serve = options.protocol === 'fuseraft-serve';
  const where = options.socketPath !== undefined ? { socketPath: options.socketPath } : { url: options.url! };
  const connect: ConnectOptions = { protocol: options.protocol as ConnectOptions['protocol'], ...where, keepAlive: options.keepAlive, handleParentSignals: false };
  const optional: Partial<ConnectOptions> = {
    task,
    token,
    clientId: options.clientId,
    // --session-id: mew attaches to that session; fuseraft serve re-attaches to that task.
    ...(serve ? { resume: options.sessionId } : { sessionId: options.sessionId }),
    mewTagCase: options.mewTagCase,
    runId: options.runId,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
    killGraceMs: options.killGraceMs,
    readyTimeoutMs: options.readyTimeoutMs,
    finalizeGraceMs: options.finalizeGraceMs,
    stallTimeoutMs: options.stallTimeoutMs,
    journal: options.journal,
    budget: options.budget,
    outputSchema,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) Object.assign(connect, { [key]: value });
  }
  return connect;
}

/** `--cwd` and `--state-dir` name existing directories (a usage error otherwise, before anything starts). */
export function requireDirectories(options: Pick<CliOptions, 'cwd' | 'stateDir'>): void {
  requireDirectory('cwd', options.cwd);
  requireDirectory('state-dir', options.stateDir);
}

function requireDirectory(option: string, path: string | undefined): void {
  if (path === undefined) return;
  let isDirectory = false;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch (error) {
    throw new UsageError(`--${option} ${path}: ${(error as NodeJS.ErrnoException).code ?? 'cannot stat it'}; give an existing directory.`);
  }
  if (!isDirectory) throw new UsageError(`--${option} ${path} is not a directory; give an existing directory.`);
}
