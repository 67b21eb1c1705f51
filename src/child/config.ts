// What a serveAgent child reads from its environment: Fen's FEN_WIRE_* variables and the session subvisor hands over.
import { SESSION_ENV } from '../agent/session-env.js';

export interface ChildWireConfig {
  controlPath: string;
  eventPath: string;
  runId: string;
  /** FEN_WIRE_DEADLINE in epoch milliseconds. */
  deadlineMs?: number;
  /** The invoke scope's session: `SUBVISOR_AGENT_SESSION` when set, else the run id. */
  session: string;
}

/** The environment is not a child's: the message says which variable is missing or wrong. */
export class ChildConfigError extends Error {
  override readonly name = 'ChildConfigError';
}

/** Reads the configuration exactly as Fen's rpc child reads its environment. */
export function wireConfigFrom(env: NodeJS.ProcessEnv, sessionEnv: string = SESSION_ENV): ChildWireConfig {
  const controlPath = env['FEN_WIRE_CONTROL_PATH'];
  const eventPath = env['FEN_WIRE_EVENT_PATH'];
  if (controlPath === undefined || controlPath === '') throw new ChildConfigError('FEN_WIRE_CONTROL_PATH is required');
  if (eventPath === undefined || eventPath === '') throw new ChildConfigError('FEN_WIRE_EVENT_PATH is required');
  const runId = env['FEN_WIRE_RUN_ID'] || 'run';
  const config: ChildWireConfig = { controlPath, eventPath, runId, session: env[sessionEnv] || runId };
  const deadline = env['FEN_WIRE_DEADLINE'];
  if (deadline !== undefined && deadline !== '') {
    const seconds = Number(deadline);
    if (!Number.isFinite(seconds) || seconds < 0) throw new ChildConfigError(`FEN_WIRE_DEADLINE is not Unix seconds: ${JSON.stringify(deadline)}`);
    config.deadlineMs = seconds * 1000;
  }
  return config;
}
