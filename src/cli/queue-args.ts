// Parses the queue forms of supervise: `supervise worker --redis ...` and `supervise --redis URL --queue NAME --profile NAME`.
import { parseArgs } from 'node:util';
import type { WorkerShutdownMode } from '../queue/types.js';
import { OUTPUT_MODES, type OutputMode } from './args.js';
import { durationOption } from './duration.js';
import { parseArgsUsageError } from './parse-errors.js';
import { UsageError } from './usage-error.js';

/** `supervise --redis URL --queue NAME --profile NAME --task ...`: one run on a queue worker. */
export interface RemoteCliOptions {
  redis: string;
  queue: string;
  prefix?: string;
  profile: string;
  task?: string;
  taskFile?: string;
  output: OutputMode;
  controls?: string;
  runId?: string;
  timeoutMs?: number;
  keepAlive: boolean;
  attempts?: number;
  quiet: boolean;
}

/** `supervise worker --redis URL --queue NAME --profiles FILE`: a queue worker until SIGTERM. */
export interface WorkerCliOptions {
  redis: string;
  queue: string;
  prefix?: string;
  profiles: string;
  concurrency: number;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  maxStalledCount?: number;
  shutdown: WorkerShutdownMode;
  shutdownGraceMs?: number;
  name?: string;
  stateDir?: string;
  quiet: boolean;
}

/** True when argv asks for a run on a queue (`--redis` before any `--`). */
export function isRemoteCommandLine(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => arg === '--redis' || arg.startsWith('--redis='));
}

/** The options of `supervise --redis ...`. */
const REMOTE_OPTIONS = {
  redis: { type: 'string' },
  queue: { type: 'string' },
  prefix: { type: 'string' },
  profile: { type: 'string' },
  task: { type: 'string' },
  'task-file': { type: 'string' },
  output: { type: 'string', short: 'o' },
  controls: { type: 'string' },
  'run-id': { type: 'string' },
  timeout: { type: 'string' },
  'keep-alive': { type: 'boolean' },
  attempts: { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
} as const;

/** The options of `supervise worker ...`. */
const WORKER_OPTIONS = {
  redis: { type: 'string' },
  queue: { type: 'string' },
  prefix: { type: 'string' },
  profiles: { type: 'string' },
  concurrency: { type: 'string' },
  'lock-duration': { type: 'string' },
  'stalled-interval': { type: 'string' },
  'max-stalled': { type: 'string' },
  shutdown: { type: 'string' },
  'shutdown-grace': { type: 'string' },
  name: { type: 'string' },
  'state-dir': { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
} as const;

/** Runs parseArgs (over the options `known`), turning its errors into usage errors in supervise's words. */
function withUsageErrors<T>(known: object, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw parseArgsUsageError(error, Object.keys(known), 'A queue run and a worker take only the options of their help section.');
  }
}

/** --timeout of a queued run: a duration, never none (0): a queued run always has a deadline. */
function queuedTimeout(value: string | undefined): number | undefined {
  const ms = durationOption('timeout', value, true);
  if (ms === 0) throw new UsageError('--timeout 0 (no deadline) is not for a queued run: a hung child would hold its worker for ever; give a duration.');
  return ms;
}

function required(name: string, value: string | undefined): string {
  if (value === undefined || value.length === 0) throw new UsageError(`--${name} is missing; a queue run or worker needs --redis URL and --queue NAME.`);
  return value;
}

export function redisUrl(value: string | undefined): string {
  const url = required('redis', value);
  if (!/^rediss?:\/\/[^\s]+$/.test(url)) throw new UsageError(`--redis "${url}" is not a redis:// or rediss:// URL.`);
  return url;
}

export function queueName(value: string | undefined): string {
  const name = required('queue', value);
  if (/[\s:]/.test(name)) throw new UsageError(`--queue "${name}" may not contain spaces or colons.`);
  return name;
}

function count(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < min) throw new UsageError(`--${name} "${value}" is not a whole number >= ${min}.`);
  return parsed;
}

function noPositionals(positionals: string[], what: string): void {
  if (positionals.length > 0) {
    throw new UsageError(`unexpected argument "${positionals[0]}": ${what}`);
  }
}

/** Parses a remote run's command line (Throws UsageError on any mistake). */
export function parseRemoteCommandLine(argv: readonly string[]): RemoteCliOptions {
  const { values, positionals } = withUsageErrors(REMOTE_OPTIONS, () => parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: REMOTE_OPTIONS }));
  noPositionals(positionals, 'a queue run names a profile defined on the workers (--profile NAME), never a command.');
  const profile = values.profile;
  if (profile === undefined || profile.length === 0) throw new UsageError('--profile NAME is missing: a queue run names a profile defined on the workers.');
  if (values.task !== undefined && values['task-file'] !== undefined) throw new UsageError('--task and --task-file both given; use only one of them.');
  const output = values.output ?? 'text';
  if (!(OUTPUT_MODES as readonly string[]).includes(output)) throw new UsageError(`--output "${output}" is not one of ${OUTPUT_MODES.join(', ')}.`);
  if (values.controls === '-' && values.task === undefined && values['task-file'] === undefined) {
    throw new UsageError('--controls - reads controls from standard input, so the task cannot come from there too; give --task or --task-file.');
  }
  const options: RemoteCliOptions = {
    redis: redisUrl(values.redis),
    queue: queueName(values.queue),
    profile,
    output: output as OutputMode,
    keepAlive: values['keep-alive'] === true,
    quiet: values.quiet === true,
  };
  const optional: Partial<RemoteCliOptions> = {
    prefix: values.prefix,
    task: values.task,
    taskFile: values['task-file'],
    controls: values.controls,
    runId: values['run-id'],
    timeoutMs: queuedTimeout(values.timeout),
    attempts: count('attempts', values.attempts, 1),
  };
  for (const [key, value] of Object.entries(optional)) if (value !== undefined) Object.assign(options, { [key]: value });
  return options;
}

/** Parses `supervise worker ...` (argv after `worker`). Throws UsageError on any mistake. */
export function parseWorkerCommandLine(argv: readonly string[]): WorkerCliOptions {
  const { values, positionals } = withUsageErrors(WORKER_OPTIONS, () => parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: WORKER_OPTIONS }));
  noPositionals(positionals, 'a worker runs the profiles of its --profiles file, never a command given here.');
  const profiles = values.profiles;
  if (profiles === undefined || profiles.length === 0) throw new UsageError('--profiles FILE is missing: a worker runs only the profiles of that file.');
  const shutdown = values.shutdown ?? 'finish';
  if (shutdown !== 'finish' && shutdown !== 'hand-back') throw new UsageError(`--shutdown "${shutdown}" is not one of finish, hand-back.`);
  const options: WorkerCliOptions = {
    redis: redisUrl(values.redis),
    queue: queueName(values.queue),
    profiles,
    concurrency: count('concurrency', values.concurrency, 1) ?? 1,
    shutdown,
    quiet: values.quiet === true,
  };
  const optional: Partial<WorkerCliOptions> = {
    prefix: values.prefix,
    lockDurationMs: durationOption('lock-duration', values['lock-duration'], false),
    stalledIntervalMs: durationOption('stalled-interval', values['stalled-interval'], false),
    maxStalledCount: count('max-stalled', values['max-stalled'], 0),
    shutdownGraceMs: durationOption('shutdown-grace', values['shutdown-grace'], true),
    name: values.name,
    stateDir: values['state-dir'],
  };
  for (const [key, value] of Object.entries(optional)) if (value !== undefined) Object.assign(options, { [key]: value });
  return options;
}
