// Checks of spawnRun's and connectRun's options that no type can make: unknown keys (with the option meant) and NUL bytes.
import { closestName } from '../text/closest-name.js';
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
} satisfies Record<keyof SharedRunOptions, true>;

/** Every key of {@link RunOptions}, checked the same way. */
const OPTION_KEYS = Object.keys({
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
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    throw new TypeError(`options.${key} is not an option of ${owner}; did you mean ${closestName(key, known)}?`);
  }
}

/**
 * The OS cannot pass a NUL byte in an argument, an environment entry or a path: Node's spawn would
 * throw (or the string would be cut). Refused, naming the option, before anything is started.
 */
export function refuseNul(name: string, value: string): void {
  if (value.includes('\0')) throw new TypeError(`options.${name} must not contain a NUL byte ("\\0")`);
}
