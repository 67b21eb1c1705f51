// spawnRun: validates the options, applies the defaults and starts a supervised run with its protocol's driver.
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { PROTOCOLS, protocolHint, protocolNamed } from './registry.js';
import { linkAbortSignal } from '../run/abort-link.js';
import type { Protocol } from '../protocol/driver.js';
import { checkTracing, refuseNul, refuseUnknownKeys } from './option-checks.js';
import { journalRun, openJournal, resolveJournal } from './journal-option.js';
import type { JournalFile } from '../journal/journal-file.js';
import { refuseUnreported, resolveBudget, resolveOutput } from './task-options.js';
import { refuseTreeConflicts, resolveLimits, resolveSandbox } from './tree-options.js';
import { envWithCarrier } from '../observe/carriers.js';
import { startRunTelemetry } from '../observe/run-telemetry.js';
import type { RunTracing } from '../observe/types.js';
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';
import { MAX_TIMER_MS } from '../run/run-timers.js';
import { SupervisedRun } from '../run/supervised-run.js';
import type { Run, RunOptions } from './types.js';

/** Defaults of the optional durations and sizes. */
export const RUN_DEFAULTS = {
  /**
   * The time budget of a run given neither `timeoutMs` nor `deadline`: 2700 s (45 minutes), what Fen's own parent
   * gives its children, so that a hung child never hangs its parent forever. `timeoutMs: Infinity` opts out.
   */
  timeoutMs: 2_700_000,
  killGraceMs: 3000,
  finalizeGraceMs: 120_000,
  readyTimeoutMs: 30_000,
  requestTimeoutMs: 30_000,
  leaseMs: 30_000,
  maxFinalTextBytes: 64 * 1024 * 1024,
  maxFrameBytes: 16 * 1024 * 1024,
  highWaterMark: 1024,
  highWaterBytes: 1024 * 1024,
  outputTailBytes: 64 * 1024,
} as const;

/** Defaults of connectRun's own options (also those of a daemon spawnRun starts: mew's `url`). */
export const CONNECT_DEFAULTS = {
  pingIntervalMs: 15_000,
  pongTimeoutMs: 10_000,
  reconnectGraceMs: 10_000,
} as const;

/**
 * Starts a child agent over its protocol (`options.protocol`, Fen's wire protocol by default) and
 * supervises it until its whole process tree is gone. See {@link RunOptions} and {@link Run}. `T` is the
 * type of `outcome.data` (the answer validated against `outputSchema`).
 *
 * Throws synchronously (a `TypeError` or `RangeError`) only on invalid options, before anything is
 * started. Every later failure, including a command that cannot be spawned (`outcome.spawnFailed`),
 * ends up in `run.outcome`, which never rejects.
 */
export function spawnRun<T = unknown>(options: RunOptions<T>): Run<T> {
  const protocol = protocolOf(options);
  const resolved = resolveOptions(options, protocol);
  validateFor(protocol, resolved);
  return startRun(resolved, protocol, { journal: openJournal(resolved), telemetry: telemetryOf(options) }) as Run<T>;
}

/** The checks a protocol puts on resolved options: the budget's figures it reports, then its own rules. */
export function validateFor(protocol: Protocol, resolved: ResolvedRunOptions): void {
  refuseUnreported(resolved, protocol);
  protocol.validate(resolved);
}

/** What a run's telemetry needs of the caller's options: the `tracing` choice, and the variables the caller set (they win over TRACEPARENT's). */
export interface TelemetryOptions {
  tracing: RunTracing | undefined;
  callerEnv: readonly string[];
}

/** The telemetry options of `options` (spawnRun's, or a test's in-memory run's). */
export function telemetryOf(options: Pick<RunOptions, 'tracing' | 'env'>): TelemetryOptions {
  return { tracing: options.tracing, callerEnv: Object.keys(options.env ?? {}) };
}

/** What a run gets beside its options: its journal file (opened already), and what its telemetry needs. */
export interface RunCompanions {
  journal: JournalFile | undefined;
  telemetry: TelemetryOptions;
}

/**
 * Starts the supervised run of validated options (spawnRun, connectRun, attachRun). Its telemetry starts
 * first, so the child is spawned (or the daemon reached) with the run span's context; its journal listens
 * from the start.
 */
export function startRun(resolved: ResolvedRunOptions, protocol: Protocol, companions: RunCompanions): Run {
  const telemetry = startRunTelemetry({ protocol: resolved.protocol, runId: resolved.runId, tracing: companions.telemetry.tracing });
  let options = resolved;
  if (telemetry !== undefined) {
    const env = envWithCarrier(resolved.env, telemetry.carrier, new Set(companions.telemetry.callerEnv));
    options = { ...resolved, env, traceHeaders: Object.keys(telemetry.carrier).length === 0 ? undefined : telemetry.carrier };
  }
  // Many runs may share the caller's signal: they hang off one listener on it (see abort-link.ts).
  const link = options.signal === undefined ? undefined : linkAbortSignal(options.signal);
  const run = new SupervisedRun(link === undefined ? options : { ...options, signal: link.signal }, protocol);
  if (link !== undefined) void run.outcome.then(link.release);
  if (companions.journal !== undefined) journalRun(run, companions.journal, resolved);
  telemetry?.listen(run);
  return run;
}

function protocolOf(options: RunOptions): Protocol {
  if (typeof options !== 'object' || options === null) throw new TypeError('spawnRun needs an options object');
  const name = options.protocol ?? 'fen';
  const protocol = typeof name === 'string' ? protocolNamed(name) : undefined;
  if (protocol === undefined) {
    const known = Object.keys(PROTOCOLS);
    const hint = typeof name === 'string' ? protocolHint(name, known) : '';
    throw new TypeError(`options.protocol must be one of ${known.map((each) => `'${each}'`).join(', ')}${hint}`);
  }
  return protocol;
}

/** Checks `options` exactly as {@link spawnRun} does (throwing the same errors) without starting anything. */
export function checkRunOptions(options: RunOptions): void {
  const protocol = protocolOf(options);
  validateFor(protocol, resolveOptions(options, protocol));
}

/** Applies the defaults and checks the options every protocol shares. */
export function resolveOptions(options: RunOptions, protocol?: Protocol): ResolvedRunOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('spawnRun needs an options object');
  refuseUnknownKeys(options);
  const command = options.command ?? protocol?.defaultCommand;
  if (typeof command !== 'string' || command === '') throw new TypeError('options.command must be a non-empty string');
  refuseNul('command', command);
  const args = options.args ?? [];
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) {
    throw new TypeError('options.args must be an array of strings');
  }
  args.forEach((arg, index) => refuseNul(`args[${index}]`, arg));
  const runId = options.runId ?? randomUUID();
  if (typeof runId !== 'string' || runId === '') throw new TypeError('options.runId must be a non-empty string');
  refuseNul('runId', runId);
  for (const name of ['cwd', 'stateDir'] as const) {
    const path = options[name];
    if (path === undefined) continue;
    if (typeof path !== 'string' || path === '') throw new TypeError(`options.${name} must be a non-empty string`);
    refuseNul(name, path);
  }
  const task = options.task;
  if (task !== undefined && typeof task !== 'string') throw new TypeError('options.task must be a string');
  if (task === '') {
    // Like an empty steer: the child would accept it and never start a turn for it.
    throw new TypeError('options.task must not be empty: the child would never start a turn for it (leave task out to start in ready)');
  }
  if (options.timeoutMs !== undefined && options.deadline !== undefined) {
    throw new TypeError('pass either options.timeoutMs or options.deadline, not both');
  }
  let deadlineMs: number | undefined;
  if (options.deadline !== undefined) {
    deadlineMs = options.deadline instanceof Date ? options.deadline.getTime() : options.deadline;
    if (typeof deadlineMs !== 'number' || !Number.isFinite(deadlineMs)) {
      throw new TypeError('options.deadline must be a valid Date or epoch milliseconds');
    }
  } else {
    const timeoutMs = timeout(options.timeoutMs ?? RUN_DEFAULTS.timeoutMs);
    if (timeoutMs !== Infinity) deadlineMs = Date.now() + timeoutMs;
  }
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  if (options.env !== undefined && (typeof options.env !== 'object' || options.env === null)) {
    throw new TypeError('options.env must be an object of strings');
  }
  for (const [key, value] of Object.entries(options.env ?? {})) {
    refuseNul(`env key ${JSON.stringify(key)}`, key);
    if (value === undefined) delete env[key];
    else if (typeof value === 'string') {
      refuseNul(`env.${key}`, value);
      env[key] = value;
    } else throw new TypeError(`options.env.${key} must be a string or undefined`);
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new TypeError('options.signal must be an AbortSignal');
  }
  const output = resolveOutput(options.outputSchema, options.outputInstructions, task);
  checkTracing(options.tracing);
  // Checked in its place among the options below (the first bad option is the one reported).
  let maxFinalTextBytes = 0;
  const resolved: ResolvedRunOptions = {
    protocol: options.protocol ?? 'fen',
    command,
    args,
    task: output.task,
    resume: resumeOf(options, protocol),
    outputSchema: output.outputSchema,
    ...resolveBudget(options.budget),
    runId,
    cwd: options.cwd,
    env,
    deadlineMs,
    killGraceMs: duration('killGraceMs', options.killGraceMs ?? RUN_DEFAULTS.killGraceMs),
    finalizeGraceMs: duration('finalizeGraceMs', options.finalizeGraceMs ?? RUN_DEFAULTS.finalizeGraceMs),
    readyTimeoutMs: duration('readyTimeoutMs', options.readyTimeoutMs ?? RUN_DEFAULTS.readyTimeoutMs),
    ackTimeoutMs: options.ackTimeoutMs === undefined ? undefined : duration('ackTimeoutMs', options.ackTimeoutMs),
    stallTimeoutMs: options.stallTimeoutMs === undefined ? undefined : duration('stallTimeoutMs', options.stallTimeoutMs),
    requestTimeoutMs: duration('requestTimeoutMs', options.requestTimeoutMs ?? RUN_DEFAULTS.requestTimeoutMs),
    keepAlive: options.keepAlive ?? false,
    stateDir: options.stateDir ?? tmpdir(),
    signal: options.signal,
    maxFinalTextBytes: (maxFinalTextBytes = size('maxFinalTextBytes', options.maxFinalTextBytes ?? RUN_DEFAULTS.maxFinalTextBytes)),
    // The same bound, read as what it is for the protocols that assemble their answer from streamed text.
    maxAnswerChars: maxFinalTextBytes,
    maxFrameBytes: Math.max(1, size('maxFrameBytes', options.maxFrameBytes ?? RUN_DEFAULTS.maxFrameBytes)),
    keepFiles: options.keepFiles ?? false,
    retainEvents: options.retainEvents ?? true,
    highWaterMark: Math.max(1, size('highWaterMark', options.highWaterMark ?? RUN_DEFAULTS.highWaterMark)),
    highWaterBytes: Math.max(1, size('highWaterBytes', options.highWaterBytes ?? RUN_DEFAULTS.highWaterBytes)),
    latencyBudgetMs: latencyBudget(options.latencyBudgetMs),
    outputTailBytes: size('outputTailBytes', options.outputTailBytes ?? RUN_DEFAULTS.outputTailBytes),
    handleParentSignals: options.handleParentSignals ?? true,
    approve: callback('approve', options.approve),
    answerQuestion: callback('answerQuestion', options.answerQuestion),
    connection: spawnedDaemon(options, protocol),
    durable: durableOf(options, protocol),
    journal: resolveJournal(options.journal, options.stateDir ?? tmpdir()),
    attach: undefined,
    traceHeaders: undefined,
    limits: resolveLimits(options.limits),
    sandbox: resolveSandbox(options.sandbox),
  };
  refuseTreeConflicts(resolved, protocol);
  return resolved;
}

/** A protocol that starts a daemon (mew): where the daemon the command starts will listen (the URL is checked by the protocol). */
function spawnedDaemon(options: RunOptions, protocol: Protocol | undefined): ResolvedRunOptions['connection'] {
  const { url, mewTagCase } = options;
  if (url === undefined && mewTagCase === undefined) return undefined;
  if (protocol?.spawnsDaemon !== true) {
    const daemons = Object.entries(PROTOCOLS).filter(([, known]) => (known as Protocol).spawnsDaemon === true).map(([name]) => `'${name}'`);
    // The protocols whose command starts a daemon, from the registry (today 'mew' alone).
    throw new TypeError(`options.${url === undefined ? 'mewTagCase' : 'url'} applies to protocol ${daemons.join(' or ')} only`);
  }
  if (url !== undefined && (typeof url !== 'string' || url === '')) throw new TypeError('options.url must be a non-empty ws:// URL');
  if (url !== undefined) refuseNul('url', url);
  return {
    url,
    socketPath: undefined,
    token: undefined,
    clientId: undefined,
    resume: undefined,
    sessionId: undefined,
    mewTagCase: tagCase(mewTagCase),
    ...CONNECT_DEFAULTS,
  };
}

/** `resume`: the agent's own conversation id, only for a protocol that resumes one. */
function resumeOf(options: RunOptions, protocol: Protocol | undefined): string | undefined {
  const { resume } = options;
  if (resume === undefined) return undefined;
  if (typeof resume !== 'string' || resume === '') throw new TypeError('options.resume must be a non-empty string');
  refuseNul('resume', resume);
  if (protocol !== undefined && protocol.resumes !== true) {
    const resuming = Object.entries(PROTOCOLS).filter(([, known]) => (known as Protocol).resumes === true).map(([name]) => `'${name}'`);
    const named = resuming.length > 1 ? `${resuming.slice(0, -1).join(', ')} or ${resuming.at(-1)}` : resuming.join('');
    throw new TypeError(`options.resume applies to protocol ${named} only (a daemon's: connectRun({ resume }))`);
  }
  return resume;
}

/** `durable`: only for a protocol whose channel outlives the parent (which checks the rest, the run id among it). */
function durableOf(options: RunOptions, protocol: Protocol | undefined): ResolvedRunOptions['durable'] {
  const durable: unknown = options.durable;
  if (durable === undefined) return undefined;
  if (typeof durable !== 'object' || durable === null) throw new TypeError('options.durable must be an object ({ leaseMs })');
  if (protocol !== undefined && protocol.durable !== true) {
    throw new TypeError(
      `protocol '${options.protocol ?? 'fen'}' cannot run durable: its channel is a pipe to the parent (or a daemon's connection), which dies with it; ` +
        'only a Fen run (files) can be re-attached (a daemon session is re-attached through connectRun({ resume }))',
    );
  }
  if (options.keepFiles === true) throw new TypeError('options.keepFiles does not apply to a durable run (its directory is kept while a parent may re-attach)');
  const { leaseMs } = durable as { leaseMs?: unknown };
  const lease = leaseMs ?? RUN_DEFAULTS.leaseMs;
  // Renewed every third of it: below 100 ms the renewals would be all the parent does.
  if (typeof lease !== 'number' || !Number.isFinite(lease) || lease < 100) {
    throw new RangeError('options.durable.leaseMs must be a finite number of milliseconds >= 100');
  }
  return { leaseMs: Math.min(lease, MAX_TIMER_MS) };
}

/** Checks `mewTagCase` (default `snake_case`). */
export function tagCase(value: unknown): 'snake_case' | 'PascalCase' {
  if (value === undefined) return 'snake_case';
  if (value !== 'snake_case' && value !== 'PascalCase') throw new TypeError("options.mewTagCase must be 'snake_case' or 'PascalCase'");
  return value;
}

function callback<T>(name: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw new TypeError(`options.${name} must be a function`);
  return value;
}

/** `timeoutMs`: a duration, or `Infinity` for a run without a deadline. */
function timeout(value: unknown): number {
  if (value === Infinity) return value;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RangeError('options.timeoutMs must be a number of milliseconds >= 0, or Infinity for a run without a deadline');
  }
  return Math.min(value, MAX_TIMER_MS);
}

export function duration(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RangeError(`options.${name} must be a finite number of milliseconds >= 0`);
  }
  return Math.min(value, MAX_TIMER_MS);
}

/** Longer budgets would read busy runs no sooner than the tail's safety poll does anyway. */
const MAX_LATENCY_BUDGET_MS = 1000;

function latencyBudget(value: unknown): number | 'auto' {
  if (value === undefined) return 'auto';
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_LATENCY_BUDGET_MS) {
    throw new RangeError(`options.latencyBudgetMs must be a number of milliseconds from 0 to ${MAX_LATENCY_BUDGET_MS}`);
  }
  return value;
}

function size(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new RangeError(`options.${name} must be an integer >= 0`);
  }
  return value;
}
