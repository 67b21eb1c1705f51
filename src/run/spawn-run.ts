// spawnRun: validates the options, applies the defaults and starts a supervised run.
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { createSender } from '../wire/index.js';
import { linkAbortSignal } from './abort-link.js';
import { SupervisedRun } from './run.js';
import type { ResolvedRunOptions } from './run.js';
import type { Run, RunOptions } from './types.js';

/** Defaults of the optional durations and sizes. */
export const RUN_DEFAULTS = {
  killGraceMs: 3000,
  finalizeGraceMs: 120_000,
  readyTimeoutMs: 30_000,
  maxFinalTextBytes: 64 * 1024 * 1024,
  highWaterMark: 1024,
  outputTailBytes: 64 * 1024,
} as const;

/**
 * Starts a child agent over Fen's wire protocol and supervises it until its whole process tree is
 * gone. See {@link RunOptions} and {@link Run}.
 *
 * Throws synchronously (a `TypeError` or `RangeError`) only on invalid options, before anything is
 * started. Every later failure, including a command that cannot be spawned (`outcome.spawnFailed`),
 * ends up in `run.outcome`, which never rejects.
 */
export function spawnRun(options: RunOptions): Run {
  const resolved = resolveOptions(options);
  // Many runs may share the caller's signal: they hang off one listener on it (see abort-link.ts).
  const link = resolved.signal === undefined ? undefined : linkAbortSignal(resolved.signal);
  const run = new SupervisedRun(link === undefined ? resolved : { ...resolved, signal: link.signal });
  if (link !== undefined) void run.outcome.then(link.release);
  return run;
}

/** Every key of {@link RunOptions}: the compiler checks that this list and the interface agree. */
const OPTION_KEYS = Object.keys({
  command: true,
  args: true,
  task: true,
  runId: true,
  cwd: true,
  env: true,
  timeoutMs: true,
  deadline: true,
  killGraceMs: true,
  finalizeGraceMs: true,
  readyTimeoutMs: true,
  ackTimeoutMs: true,
  keepAlive: true,
  stateDir: true,
  signal: true,
  maxFinalTextBytes: true,
  keepFiles: true,
  retainEvents: true,
  highWaterMark: true,
  outputTailBytes: true,
  handleParentSignals: true,
} satisfies Record<keyof RunOptions, true>);

/** A misspelt option would otherwise be ignored in silence (a run without the timeout its author wrote). */
function refuseUnknownKeys(options: object): void {
  for (const key of Object.keys(options)) {
    if (OPTION_KEYS.includes(key)) continue;
    throw new TypeError(`options.${key} is not an option of spawnRun; did you mean ${closestOption(key)}?`);
  }
}

/** The known option nearest to `key`: fewest edits, ignoring case; ties go to the one that contains it. */
function closestOption(key: string): string {
  const lower = key.toLowerCase();
  let best = OPTION_KEYS[0]!;
  let bestScore = Infinity;
  for (const candidate of OPTION_KEYS) {
    const name = candidate.toLowerCase();
    const score = editDistance(lower, name) - (name.includes(lower) || lower.includes(name) ? 0.5 : 0);
    if (score < bestScore) {
      best = candidate;
      bestScore = score;
    }
  }
  return best;
}

/** Levenshtein distance (insertions, deletions, substitutions), one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The OS cannot pass a NUL byte in an argument, an environment entry or a path: Node's spawn would
 * throw (or the string would be cut). Refused here, naming the option, before anything is started.
 */
function refuseNul(name: string, value: string): void {
  if (value.includes('\0')) throw new TypeError(`options.${name} must not contain a NUL byte ("\\0")`);
}

function resolveOptions(options: RunOptions): ResolvedRunOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('spawnRun needs an options object');
  refuseUnknownKeys(options);
  const { command } = options;
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
  if (options.cwd !== undefined) {
    if (typeof options.cwd !== 'string' || options.cwd === '') throw new TypeError('options.cwd must be a non-empty string');
    refuseNul('cwd', options.cwd);
  }
  if (options.stateDir !== undefined) {
    if (typeof options.stateDir !== 'string' || options.stateDir === '') {
      throw new TypeError('options.stateDir must be a non-empty string');
    }
    refuseNul('stateDir', options.stateDir);
  }
  const task = options.task;
  if (task !== undefined) {
    if (typeof task !== 'string') throw new TypeError('options.task must be a string');
    if (task === '') {
      throw new TypeError('options.task must not be empty: the child would never start a turn for it (leave task out to start in ready)');
    }
    const encoded = createSender('control', runId).next('prompt', { text: task });
    if (!encoded.ok) throw new RangeError(`options.task cannot be sent as a prompt: ${encoded.rejection.reason}`);
  }
  if (options.timeoutMs !== undefined && options.deadline !== undefined) {
    throw new TypeError('pass either options.timeoutMs or options.deadline, not both');
  }
  let deadlineMs: number | undefined;
  if (options.timeoutMs !== undefined) deadlineMs = Date.now() + duration('timeoutMs', options.timeoutMs);
  if (options.deadline !== undefined) {
    deadlineMs = options.deadline instanceof Date ? options.deadline.getTime() : options.deadline;
    if (typeof deadlineMs !== 'number' || !Number.isFinite(deadlineMs)) {
      throw new TypeError('options.deadline must be a valid Date or epoch milliseconds');
    }
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
  return {
    command,
    args,
    task,
    runId,
    cwd: options.cwd,
    env,
    deadlineMs,
    killGraceMs: duration('killGraceMs', options.killGraceMs ?? RUN_DEFAULTS.killGraceMs),
    finalizeGraceMs: duration('finalizeGraceMs', options.finalizeGraceMs ?? RUN_DEFAULTS.finalizeGraceMs),
    readyTimeoutMs: duration('readyTimeoutMs', options.readyTimeoutMs ?? RUN_DEFAULTS.readyTimeoutMs),
    ackTimeoutMs: options.ackTimeoutMs === undefined ? undefined : duration('ackTimeoutMs', options.ackTimeoutMs),
    keepAlive: options.keepAlive ?? false,
    stateDir: options.stateDir ?? tmpdir(),
    signal: options.signal,
    maxFinalTextBytes: size('maxFinalTextBytes', options.maxFinalTextBytes ?? RUN_DEFAULTS.maxFinalTextBytes),
    keepFiles: options.keepFiles ?? false,
    retainEvents: options.retainEvents ?? true,
    highWaterMark: Math.max(1, size('highWaterMark', options.highWaterMark ?? RUN_DEFAULTS.highWaterMark)),
    outputTailBytes: size('outputTailBytes', options.outputTailBytes ?? RUN_DEFAULTS.outputTailBytes),
    handleParentSignals: options.handleParentSignals ?? true,
  };
}

/** Largest delay setTimeout honours; longer ones would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function duration(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RangeError(`options.${name} must be a finite number of milliseconds >= 0`);
  }
  return Math.min(value, MAX_TIMER_MS);
}

function size(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new RangeError(`options.${name} must be an integer >= 0`);
  }
  return value;
}
