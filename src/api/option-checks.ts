// Checks of spawnRun's and connectRun's options that no type can make: unknown keys (with the option meant) and NUL bytes.
import { refuseUnknownKeys as refuseUnknown } from '../text/option-keys.js';
import type { ConnectOptions, RunOptions, SharedRunOptions } from './types.js';

/** The keys spawnRun and connectRun share (`SharedRunOptions`): the compiler checks that this list and the type agree. */
const SHARED_KEYS = {
  task: true,
  runId: true,
  cwd: true,
  timeoutMs: true,
  deadline: true,
  killGraceMs: true,
  finalizeGraceMs: true,
  readyTimeoutMs: true,
  ackTimeoutMs: true,
  stallTimeoutMs: true,
  requestTimeoutMs: true,
  keepAlive: true,
  signal: true,
  maxFinalTextBytes: true,
  maxFrameBytes: true,
  retainEvents: true,
  highWaterMark: true,
  highWaterBytes: true,
  handleParentSignals: true,
  approve: true,
  answerQuestion: true,
  journal: true,
  budget: true,
  outputSchema: true,
  outputInstructions: true,
  tracing: true,
} satisfies Record<keyof SharedRunOptions, true>;

/** Every key of {@link RunOptions}, checked the same way (asAgent's options are built on it). */
export const OPTION_KEYS = Object.keys({
  ...SHARED_KEYS,
  protocol: true,
  command: true,
  args: true,
  env: true,
  stateDir: true,
  keepFiles: true,
  durable: true,
  latencyBudgetMs: true,
  outputTailBytes: true,
  url: true,
  mewTagCase: true,
  resume: true,
  tracing: true,
  limits: true,
  sandbox: true,
} satisfies Record<keyof RunOptions, true>);

/** Every key of {@link ConnectOptions}, checked the same way. */
export const CONNECT_OPTION_KEYS = Object.keys({
  ...SHARED_KEYS,
  protocol: true,
  url: true,
  socketPath: true,
  token: true,
  clientId: true,
  resume: true,
  sessionId: true,
  mewTagCase: true,
  pingIntervalMs: true,
  pongTimeoutMs: true,
  reconnectGraceMs: true,
} satisfies Record<keyof ConnectOptions, true>);

/** A misspelt option would otherwise be ignored in silence (a run without the timeout its author wrote). */
export function refuseUnknownKeys(options: object, known: readonly string[] = OPTION_KEYS, owner = 'spawnRun'): void {
  refuseUnknown(options, known, owner);
}

/**
 * The OS cannot pass a NUL byte in an argument, an environment entry or a path: Node's spawn would
 * throw (or the string would be cut). Refused, naming the option, before anything is started.
 */
export function refuseNul(name: string, value: string): void {
  if (value.includes('\0')) throw new TypeError(`options.${name} must not contain a NUL byte ("\\0")`);
}

/** `tracing`: a boolean, or `{ parent?, attributes? }` with an OpenTelemetry context and an attributes object. */
export function checkTracing(value: unknown): void {
  if (value === undefined || typeof value === 'boolean') return;
  if (typeof value !== 'object' || value === null) throw new TypeError('options.tracing must be a boolean or { parent?, attributes? }');
  const { parent, attributes, ...rest } = value as { parent?: unknown; attributes?: unknown };
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new TypeError(`options.tracing.${unknown[0]} is not a tracing option (parent, attributes)`);
  if (parent !== undefined && typeof (parent as { getValue?: unknown } | null)?.getValue !== 'function') {
    throw new TypeError('options.tracing.parent must be an OpenTelemetry Context');
  }
  if (attributes !== undefined && (typeof attributes !== 'object' || attributes === null || Array.isArray(attributes))) {
    throw new TypeError('options.tracing.attributes must be an object of attribute values');
  }
}
