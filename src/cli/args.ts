// Parses supervise's command line (node:util parseArgs) into checked, typed options.
import { parseArgs } from 'node:util';
import { APPROVING_PROTOCOLS, CONNECT_PROTOCOLS, PROTOCOLS, protocolHint } from '../api/registry.js';
import type { ConnectProtocolName, ProtocolName } from '../api/registry.js';
import type { BudgetLimits, SandboxOptions, TreeLimits } from '../api/types.js';
import { APPROVE_MODES } from './approval-policy.js';
import type { ApproveMode } from './approval-policy.js';
import { durationOption } from './duration.js';
import { parseArgsUsageError } from './parse-errors.js';
import { UsageError } from './usage-error.js';

export type OutputMode = 'text' | 'events' | 'json';

/** The command a protocol runs when none is given (`codex`, `claude`), or undefined. */
function protocolDefaultCommand(protocol: string | undefined): string | undefined {
  const known = protocol === undefined ? undefined : (PROTOCOLS as Record<string, { defaultCommand?: string }>)[protocol];
  return known?.defaultCommand;
}

/** How a child of `protocol` is started after '--', for usage errors. */
function exampleCommand(protocol: string | undefined): string {
  const examples: Record<string, string> = {
    hep: 'fa --output events',
    fuseraft: 'fuseraft repl --vscode --no-banner',
    'fuseraft-bridge': 'fuseraft run --bridge -c CONFIG',
    mew: 'mew daemon',
    acp: 'gemini --acp',
  };
  return (protocol === undefined ? undefined : examples[protocol] ?? protocolDefaultCommand(protocol)) ?? 'fen --presenter rpc';
}

export const OUTPUT_MODES: readonly OutputMode[] = ['text', 'events', 'json'];

/** A protocol supervise speaks: a child's (spawnRun) or a daemon's only (connectRun). */
export type CliProtocol = ProtocolName | ConnectProtocolName;

/** Protocols of agents that live in a daemon: `--url` (and no command) attaches to one with connectRun. */
const DAEMON_PROTOCOLS: readonly string[] = Object.keys(CONNECT_PROTOCOLS);

/** The protocols supervise speaks (`--protocol`): every registered one, a child's or a daemon's. */
export const PROTOCOL_NAMES: readonly CliProtocol[] = [...new Set([...Object.keys(PROTOCOLS), ...DAEMON_PROTOCOLS])] as CliProtocol[];

/** Options only fuseraft serve takes. */
const SERVE_OPTIONS = ['socket', 'token-file', 'client-id'] as const;

/** Everything needed to start and watch one run, as given on the command line. */
export interface CliOptions {
  /** --protocol NAME (default fen). */
  protocol: CliProtocol;
  /** --url with no command: attach to a running daemon (connectRun) instead of spawning a child. */
  connect: boolean;
  /** --url URL: the daemon's address (mew: with a command, the address the daemon it starts listens on). */
  url?: string;
  /** --session-id ID: attach to this session (mew), re-attach to this task (fuseraft-serve). */
  sessionId?: string;
  /** --socket PATH (fuseraft-serve): the daemon's Unix socket, instead of --url. */
  socketPath?: string;
  /** --token-file FILE (fuseraft-serve): the file holding the bearer token (never the token itself on the command line). */
  tokenFile?: string;
  /** --client-id ID (fuseraft-serve): Fuseraft-Client-Id. */
  clientId?: string;
  /** --mew-tag-case snake_case|PascalCase (mew). */
  mewTagCase?: 'snake_case' | 'PascalCase';
  /** --approve MODE: how fuseraft approval requests are answered (default never). */
  approve: ApproveMode;
  command: string;
  args: string[];
  /** --task TEXT */
  task?: string;
  /** --task-file FILE */
  taskFile?: string;
  output: OutputMode;
  /** --controls FILE, or '-' for standard input. */
  controls?: string;
  runId?: string;
  cwd?: string;
  timeoutMs?: number;
  killGraceMs?: number;
  readyTimeoutMs?: number;
  /** --stall-timeout: the stall watchdog (RunOptions.stallTimeoutMs). */
  stallTimeoutMs?: number;
  finalizeGraceMs?: number;
  /** --latency-budget: Fen reads of a busy event file coalesced within this long (RunOptions.latencyBudgetMs). */
  latencyBudgetMs?: number;
  keepAlive: boolean;
  stateDir?: string;
  keepFiles: boolean;
  /** --durable LEASE: a durable run (RunOptions.durable) with this lease. */
  durableLeaseMs?: number;
  /** --journal DIR: a journal of each run in DIR (RunOptions.journal). */
  journal?: string;
  /** `supervise attach RUN_ID`: re-attach to this durable run (attachRun) instead of starting one. */
  attachRunId?: string;
  env: Record<string, string>;
  quiet: boolean;
  /** --tasks FILE, or '-' for standard input: batch mode, one task per line. */
  tasks?: string;
  /** --parallel N: batch mode's concurrency (default {@link DEFAULT_PARALLEL}). */
  parallel?: number;
  /** --warm N: batch mode's warm children (createSupervisor's `warm`). */
  warm?: number;
  /** --max-turns, --max-tool-calls, --max-tokens, --max-cost: each run's budget. */
  budget?: BudgetLimits;
  /** --max-total-tokens, --max-total-cost (batch only): the pool's total budget. */
  totalBudget?: BudgetLimits;
  /** --output-schema FILE: the JSON Schema file the answer must match. */
  outputSchema?: string;
  /** --max-memory, --max-cpu-time, --max-processes, --max-open-files: limits on each run's process tree. */
  limits?: TreeLimits;
  /** --sandbox, --sandbox-write, --sandbox-network: each run under bubblewrap. */
  sandbox?: SandboxOptions;
}

/** How many tasks of a batch run at once without --parallel. */
export const DEFAULT_PARALLEL = 4;

/** Options that make no sense with --tasks (each task line brings its own task and id). */
const SINGLE_RUN_ONLY = ['task', 'task-file', 'controls', 'run-id', 'keep-alive', 'output'] as const;

/** `usage`: no arguments at all (supervise prints a short usage, exit 2). */
export type ParsedCommandLine =
  | { kind: 'usage' }
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'run'; options: CliOptions };

const DURATION_OPTIONS = ['timeout', 'grace', 'ready-timeout', 'finalize-grace', 'stall-timeout', 'latency-budget', 'durable', 'max-cpu-time'] as const;

/** The flags of the limits on a run's tree that take a count, and the limit each sets. */
const TREE_COUNT_FLAGS = { 'max-processes': 'processes', 'max-open-files': 'openFiles' } as const satisfies Record<string, keyof TreeLimits>;

/** Bytes per unit of --max-memory (binary: 1K is 1024 bytes). */
const SIZE_UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/** The limits of --max-memory, --max-cpu-time, --max-processes and --max-open-files (undefined when none is given). */
function treeLimitsFrom(values: Record<string, unknown>): TreeLimits | undefined {
  let limits: TreeLimits | undefined;
  const memory = values['max-memory'];
  if (typeof memory === 'string') {
    const match = /^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?$/i.exec(memory.trim());
    const bytes = match === null ? NaN : Math.floor(Number(match[1]) * SIZE_UNITS[match[2]!.toUpperCase()]!);
    if (!Number.isSafeInteger(bytes) || bytes < 1) throw new UsageError(`--max-memory "${memory}" is not a size; write it like 512M, 2G or 1073741824 (bytes).`);
    (limits ??= {}).memoryBytes = bytes;
  }
  const cpuMs = durationOption('max-cpu-time', values['max-cpu-time'] as string | undefined, false);
  // RLIMIT_CPU counts whole seconds: a part of one is rounded up.
  if (cpuMs !== undefined) (limits ??= {}).cpuSeconds = Math.ceil(cpuMs / 1000);
  for (const [flag, limit] of Object.entries(TREE_COUNT_FLAGS)) {
    const text = values[flag];
    if (typeof text !== 'string') continue;
    const value = Number(text.trim());
    if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < 1) throw new UsageError(`--${flag} "${text}" is not a whole number >= 1.`);
    (limits ??= {})[limit] = value;
  }
  return limits;
}

/** --sandbox (the defaults), --sandbox-write PATH (repeatable) and --sandbox-network: each implies the sandbox. */
function sandboxFrom(values: Record<string, unknown>): SandboxOptions | undefined {
  const writable = (values['sandbox-write'] as string[] | undefined) ?? [];
  const network = values['sandbox-network'] === true;
  if (values['sandbox'] !== true && writable.length === 0 && !network) return undefined;
  if (writable.some((path) => path === '')) throw new UsageError('--sandbox-write is empty; give it a path.');
  return { writable, network };
}

/** The budget flags and the limit each sets (`--max-cost` is dollars, the others counts). */
const BUDGET_FLAGS = {
  'max-turns': 'maxTurns',
  'max-tool-calls': 'maxToolCalls',
  'max-tokens': 'maxTokens',
  'max-cost': 'maxCostUsd',
} as const satisfies Record<string, keyof BudgetLimits>;
const TOTAL_BUDGET_FLAGS = { 'max-total-tokens': 'maxTokens', 'max-total-cost': 'maxCostUsd' } as const satisfies Record<string, keyof BudgetLimits>;

/**
 * parseArgs reads `--timeout -5` as an option missing its value (a value may not start with a dash), which
 * would blame the wrong thing: name the value and why it is invalid instead.
 */
function rejectNegativeValues(argv: readonly string[]): void {
  const end = argv.indexOf('--');
  const options = end === -1 ? argv : argv.slice(0, end);
  for (let index = 0; index + 1 < options.length; index++) {
    const name = options[index]!.slice(2);
    const value = options[index + 1]!;
    if (!options[index]!.startsWith('--') || !/^-\d/.test(value)) continue;
    if ((DURATION_OPTIONS as readonly string[]).includes(name)) {
      throw new UsageError(`--${name}: "${value}" is invalid: a duration cannot be negative; write it like 1500ms, 90s, 10m or 1h.`);
    }
    if (name in BUDGET_FLAGS || name in TOTAL_BUDGET_FLAGS || name in TREE_COUNT_FLAGS || name === 'max-memory') {
      throw new UsageError(`--${name}: "${value}" is invalid: a limit must be more than 0.`);
    }
  }
}

/** The limits the flags of `flags` set (undefined when none is given); a bad value is a usage error. */
function budgetFrom(values: Record<string, unknown>, flags: Record<string, keyof BudgetLimits>): BudgetLimits | undefined {
  let limits: BudgetLimits | undefined;
  for (const [flag, limit] of Object.entries(flags)) {
    const text = values[flag];
    if (typeof text !== 'string') continue;
    const value = Number(text.trim().replace(/^\$/, ''));
    const dollars = limit === 'maxCostUsd';
    const valid = dollars ? /^\$?\d+(\.\d+)?$/.test(text.trim()) && value > 0 : /^\d+$/.test(text.trim()) && Number.isSafeInteger(value) && value >= 1;
    if (!valid) throw new UsageError(`--${flag} "${text}" is not ${dollars ? 'an amount of dollars > 0, like 0.50' : 'a whole number >= 1'}.`);
    (limits ??= {})[limit] = value;
  }
  return limits;
}

/** Every option of `supervise` (a single or batch run; the queue forms have theirs in queue-args.ts). */
export const OPTION_SPEC = {
  protocol: { type: 'string' },
  url: { type: 'string' },
  socket: { type: 'string' },
  'token-file': { type: 'string' },
  'client-id': { type: 'string' },
  'session-id': { type: 'string' },
  'mew-tag-case': { type: 'string' },
  task: { type: 'string' },
  'task-file': { type: 'string' },
  approve: { type: 'string' },
  output: { type: 'string', short: 'o' },
  controls: { type: 'string' },
  'run-id': { type: 'string' },
  cwd: { type: 'string' },
  timeout: { type: 'string' },
  grace: { type: 'string' },
  'ready-timeout': { type: 'string' },
  'finalize-grace': { type: 'string' },
  'stall-timeout': { type: 'string' },
  'latency-budget': { type: 'string' },
  'keep-alive': { type: 'boolean' },
  'state-dir': { type: 'string' },
  'keep-files': { type: 'boolean' },
  durable: { type: 'string' },
  journal: { type: 'string' },
  env: { type: 'string', multiple: true },
  quiet: { type: 'boolean', short: 'q' },
  tasks: { type: 'string' },
  parallel: { type: 'string' },
  warm: { type: 'string' },
  'max-turns': { type: 'string' },
  'max-tool-calls': { type: 'string' },
  'max-tokens': { type: 'string' },
  'max-cost': { type: 'string' },
  'max-total-tokens': { type: 'string' },
  'max-total-cost': { type: 'string' },
  'output-schema': { type: 'string' },
  'max-memory': { type: 'string' },
  'max-cpu-time': { type: 'string' },
  'max-processes': { type: 'string' },
  'max-open-files': { type: 'string' },
  sandbox: { type: 'boolean' },
  'sandbox-write': { type: 'string', multiple: true },
  'sandbox-network': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** --latency-budget: a duration up to 1s (spawnRun's bound on latencyBudgetMs). */
function latencyBudget(value: string | undefined): number | undefined {
  const ms = durationOption('latency-budget', value, true);
  if (ms !== undefined && ms > 1000) throw new UsageError(`--latency-budget: "${value}" is too long: at most 1s.`);
  return ms;
}

function nonEmpty(name: string, value: string | undefined): string | undefined {
  if (value !== undefined && value.length === 0) throw new UsageError(`--${name} is empty; give it a value.`);
  return value;
}

/** KEY=VALUE pairs of --env; the FEN_WIRE_* variables belong to supervise and cannot be overridden. */
function parseEnv(pairs: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const equals = pair.indexOf('=');
    if (equals <= 0) {
      throw new UsageError(`--env "${pair}" is not KEY=VALUE; write it like --env API_KEY=secret.`);
    }
    const key = pair.slice(0, equals);
    if (key.includes('\0') || pair.includes('\0')) throw new UsageError(`--env "${key}" contains a NUL byte.`);
    if (key.startsWith('FEN_WIRE_')) {
      throw new UsageError(`--env ${key}: the FEN_WIRE_* variables are set by supervise; use --run-id or --timeout instead.`);
    }
    env[key] = pair.slice(equals + 1);
  }
  return env;
}

/** A whole number option (`--parallel`, `--warm`) of at least `least`. */
function parseCount(name: string, text: string, least: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < least) {
    throw new UsageError(`--${name} "${text}" is not a whole number >= ${least}.`);
  }
  return value;
}

/**
 * The options of a daemon protocol: mew needs `--url` (with no command: attach to a running daemon;
 * with one: start it, listening there); fuseraft serve needs `--url` or `--socket` and is only
 * attached to (no command); `--session-id` only when attaching; no child environment or run directory
 * when attaching, and no batch.
 */
function checkDaemonOptions(values: Record<string, unknown>, protocol: string, url: string | undefined, connect: boolean): void {
  const daemon = DAEMON_PROTOCOLS.includes(protocol);
  if (!daemon) {
    const given = (['url', 'session-id', 'mew-tag-case', ...SERVE_OPTIONS] as const).find((name) => values[name] !== undefined);
    if (given !== undefined) throw new UsageError(`--${given} is for --protocol mew or fuseraft-serve (an agent in a daemon).`);
    return;
  }
  if (protocol === 'fuseraft-serve') {
    if (values['mew-tag-case'] !== undefined) throw new UsageError('--mew-tag-case is for --protocol mew.');
    if ((url === undefined) === (values['socket'] === undefined)) {
      throw new UsageError('--protocol fuseraft-serve needs either --url ws://HOST:PORT/attach or --socket PATH (the daemon\'s Unix socket).');
    }
    if (!connect) throw new UsageError('--protocol fuseraft-serve attaches to a running daemon: give no command after --.');
    if (values['token-file'] !== undefined && values['socket'] !== undefined) {
      throw new UsageError("--token-file is for fuseraft serve's WebSocket (--url): the Unix socket takes no token.");
    }
    if (values['session-id'] !== undefined && values['client-id'] === undefined) {
      throw new UsageError('--session-id needs --client-id: fuseraft serve keeps a task for the client id that sent it.');
    }
    if (values['session-id'] !== undefined && (values['task'] !== undefined || values['task-file'] !== undefined)) {
      throw new UsageError('--session-id re-attaches to a task already sent: give no --task or --task-file.');
    }
  } else {
    const given = SERVE_OPTIONS.find((name) => values[name] !== undefined);
    if (given !== undefined) throw new UsageError(`--${given} is for --protocol fuseraft-serve.`);
    if (url === undefined) {
      throw new UsageError(`--protocol ${protocol} needs --url ws://HOST:PORT: the daemon's address (add a command after '--' to start the daemon too).`);
    }
  }
  const tagCase = values['mew-tag-case'];
  if (tagCase !== undefined && tagCase !== 'snake_case' && tagCase !== 'PascalCase') {
    throw new UsageError(`--mew-tag-case "${String(tagCase)}" is not one of snake_case, PascalCase.`);
  }
  if (!connect && values['session-id'] !== undefined) throw new UsageError('--session-id attaches to a session of a running daemon: give no command after --.');
  if (connect) {
    const spawnOnly = (['env', 'state-dir', 'keep-files', 'tasks', 'durable', 'max-memory', 'max-cpu-time', 'max-processes', 'max-open-files', 'sandbox', 'sandbox-write', 'sandbox-network'] as const).find(
      (name) => values[name] !== undefined,
    );
    if (spawnOnly !== undefined) throw new UsageError(`--${spawnOnly} does not apply when attaching to a daemon (--url with no command).`);
  }
}

/** Parses argv (without node and the script path). Throws UsageError on any mistake. */
export function parseCommandLine(argv: readonly string[]): ParsedCommandLine {
  if (argv.length === 0) return { kind: 'usage' };
  rejectNegativeValues(argv);
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTION_SPEC, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    throw parseArgsUsageError(error, Object.keys(OPTION_SPEC), "If it belongs to the child command, put it after '--'.");
  }
  const { values, positionals, tokens } = parsed;
  if (values.help === true) return { kind: 'help' };
  if (values.version === true) return { kind: 'version' };

  const terminator = tokens.findIndex((token) => token.kind === 'option-terminator');
  const strayPositional = tokens.find(
    (token, index) => token.kind === 'positional' && (terminator === -1 || index < terminator),
  );
  if (strayPositional !== undefined && strayPositional.kind === 'positional') {
    throw new UsageError(
      `unexpected argument "${strayPositional.value}" before '--'; the child command goes after '--', as in: supervise --task '...' -- ${exampleCommand(parsed.values.protocol)}`,
    );
  }
  // The protocol first: a misspelt one would otherwise surface as a missing command.
  if (values.protocol !== undefined && !(PROTOCOL_NAMES as readonly string[]).includes(values.protocol)) {
    const hint = protocolHint(values.protocol, PROTOCOL_NAMES);
    throw new UsageError(`--protocol "${values.protocol}" is not one of ${PROTOCOL_NAMES.join(', ')}${hint}${hint.endsWith('?') ? '' : '.'}`);
  }
  const [given = '', ...args] = positionals;
  const url = nonEmpty('url', values.url);
  const socketPath = nonEmpty('socket', values.socket);
  const connect = given.length === 0 && (url !== undefined || socketPath !== undefined);
  // A protocol with a default command (codex, claude-code) runs it when none is given, as spawnRun does.
  const defaultCommand = connect ? undefined : protocolDefaultCommand(values.protocol);
  const command = given.length === 0 && defaultCommand !== undefined ? defaultCommand : given;
  // fuseraft serve is only ever attached to: its own check below says what it needs instead.
  if (command.length === 0 && !connect && values.protocol !== 'fuseraft-serve') {
    throw new UsageError(`no child command; give it after '--', as in: supervise --task '...' -- ${exampleCommand(values.protocol)}`);
  }

  const tasks = nonEmpty('tasks', values.tasks);
  if (tasks !== undefined) {
    const conflict = SINGLE_RUN_ONLY.find((name) => values[name] !== undefined);
    if (conflict !== undefined) {
      throw new UsageError(
        `--${conflict} cannot be used with --tasks: in batch mode each line of the tasks file is one task, and stdout carries one JSON outcome line per task.`,
      );
    }
  } else if (values.parallel !== undefined) {
    throw new UsageError('--parallel needs --tasks FILE (batch mode); a single run has nothing to run in parallel.');
  } else if (values.warm !== undefined) {
    throw new UsageError('--warm needs --tasks FILE (batch mode): it keeps children waiting for the next task; a single run has no next task.');
  } else {
    const total = Object.keys(TOTAL_BUDGET_FLAGS).find((name) => values[name as keyof typeof values] !== undefined);
    if (total !== undefined) throw new UsageError(`--${total} needs --tasks FILE (batch mode): it bounds the batch's runs together; a single run's limits are --max-tokens and --max-cost.`);
  }
  const parallel = values.parallel === undefined ? undefined : parseCount('parallel', values.parallel, 1);
  const warm = values.warm === undefined ? undefined : parseCount('warm', values.warm, 0);

  if (values.task !== undefined && values['task-file'] !== undefined) {
    throw new UsageError('--task and --task-file both given; use only one of them.');
  }
  const output = values.output ?? 'text';
  if (!(OUTPUT_MODES as readonly string[]).includes(output)) {
    throw new UsageError(`--output "${output}" is not one of ${OUTPUT_MODES.join(', ')}.`);
  }
  const protocol = values.protocol ?? 'fen';
  checkDaemonOptions(values, protocol, url, connect);
  const controls = nonEmpty('controls', values.controls);
  if (controls === '-' && values.task === undefined && values['task-file'] === undefined) {
    throw new UsageError(
      '--controls - reads controls from standard input, so the task cannot come from there too; give --task or --task-file.',
    );
  }

  const approve = values.approve ?? 'never';
  if (!(APPROVE_MODES as readonly string[]).includes(approve)) {
    throw new UsageError(`--approve "${approve}" is not one of ${APPROVE_MODES.join(', ')}.`);
  }
  if (values.approve !== undefined && !APPROVING_PROTOCOLS.includes(protocol)) {
    throw new UsageError(`--approve answers the agent's approval requests (fuseraft's, mew's permission requests); it needs --protocol ${APPROVING_PROTOCOLS.join(', ')}.`);
  }
  if (approve === 'ask' && tasks !== undefined) {
    throw new UsageError('--approve ask needs one run at a terminal; with --tasks, give --approve never or always-known.');
  }
  if (approve === 'ask' && controls === '-') {
    throw new UsageError('--approve ask and --controls - would both read standard input; give --controls a file or a named pipe.');
  }

  const options: CliOptions = {
    protocol: protocol as CliProtocol,
    connect,
    approve: approve as ApproveMode,
    command,
    args,
    output: output as OutputMode,
    keepAlive: values['keep-alive'] === true,
    keepFiles: values['keep-files'] === true,
    env: parseEnv(values.env ?? []),
    quiet: values.quiet === true,
  };
  const optional: Partial<CliOptions> = {
    task: values.task,
    taskFile: nonEmpty('task-file', values['task-file']),
    controls,
    runId: nonEmpty('run-id', values['run-id']),
    cwd: nonEmpty('cwd', values.cwd),
    stateDir: nonEmpty('state-dir', values['state-dir']),
    journal: nonEmpty('journal', values.journal),
    timeoutMs: durationOption('timeout', values.timeout, 'none'),
    killGraceMs: durationOption('grace', values.grace, true),
    readyTimeoutMs: durationOption('ready-timeout', values['ready-timeout'], false),
    finalizeGraceMs: durationOption('finalize-grace', values['finalize-grace'], true),
    stallTimeoutMs: durationOption('stall-timeout', values['stall-timeout'], false),
    latencyBudgetMs: latencyBudget(values['latency-budget']),
    durableLeaseMs: durationOption('durable', values.durable, false),
    tasks,
    parallel,
    warm,
    url,
    sessionId: nonEmpty('session-id', values['session-id']),
    socketPath,
    tokenFile: nonEmpty('token-file', values['token-file']),
    clientId: nonEmpty('client-id', values['client-id']),
    mewTagCase: values['mew-tag-case'] as CliOptions['mewTagCase'],
    budget: budgetFrom(values, BUDGET_FLAGS),
    totalBudget: budgetFrom(values, TOTAL_BUDGET_FLAGS),
    outputSchema: nonEmpty('output-schema', values['output-schema']),
    limits: treeLimitsFrom(values),
    sandbox: sandboxFrom(values),
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined) Object.assign(options, { [key]: value });
  }
  return { kind: 'run', options };
}

/** The options `supervise attach RUN_ID` takes: where the run was started, and how this parent reports it. */
const ATTACH_SPEC = {
  'state-dir': { type: 'string' },
  output: { type: 'string', short: 'o' },
  controls: { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
} as const;

/** `supervise attach RUN_ID [--state-dir DIR] [-o MODE] [--controls FILE] [-q]` (argv after `attach`). */
export function parseAttachCommandLine(argv: readonly string[]): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: ATTACH_SPEC, allowPositionals: true, strict: true });
  } catch (error) {
    throw parseArgsUsageError(error, Object.keys(ATTACH_SPEC), 'supervise attach takes the run id, then --state-dir, --output, --controls and --quiet.');
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError('supervise attach needs exactly one run id: supervise attach RUN_ID [--state-dir DIR]');
  const output = values.output ?? 'text';
  if (!(OUTPUT_MODES as readonly string[]).includes(output)) throw new UsageError(`--output "${output}" is not one of ${OUTPUT_MODES.join(', ')}.`);
  const options: CliOptions = {
    protocol: 'fen',
    connect: false,
    approve: 'never',
    command: '',
    args: [],
    output: output as OutputMode,
    keepAlive: false,
    keepFiles: false,
    env: {},
    quiet: values.quiet === true,
    attachRunId: positionals[0]!,
  };
  const stateDir = nonEmpty('state-dir', values['state-dir']);
  if (stateDir !== undefined) options.stateDir = stateDir;
  const controls = nonEmpty('controls', values.controls);
  if (controls !== undefined) options.controls = controls;
  return options;
}
