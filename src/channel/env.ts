// The FEN_WIRE_* environment that tells a Fen child where its channel is.
import type { RunDirectory } from './directory.js';

/**
 * The variables a `--presenter rpc` child reads. `deadlineMs` (epoch ms) becomes whole Unix seconds,
 * rounded up, so the child never stops before the parent's deadline.
 */
export function channelEnv(directory: RunDirectory, runId: string, deadlineMs?: number): Record<string, string> {
  const env: Record<string, string> = {
    FEN_WIRE_CONTROL_PATH: directory.controlPath,
    FEN_WIRE_EVENT_PATH: directory.eventPath,
    FEN_WIRE_RUN_ID: runId,
  };
  if (deadlineMs !== undefined) env['FEN_WIRE_DEADLINE'] = String(Math.ceil(deadlineMs / 1000));
  return env;
}
