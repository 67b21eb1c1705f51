// Outcomes the queue itself decides (a run that never reached a child: unknown profile, cancelled while queued, worker lost).
import type { Outcome, OutcomeErrorCode, OutcomeStatus } from '../run/types/index.js';

/** An outcome for a run that ended without a child process on this side. */
export function queueOutcome(runId: string, status: OutcomeStatus, errorCode: OutcomeErrorCode, error: string): Outcome {
  return {
    runId,
    status,
    truncated: false,
    turns: 0,
    error,
    errorCode,
    spawnFailed: errorCode === 'spawn-failed',
    exitCode: null,
    signal: null,
    killed: false,
    escalated: false,
    rejectedLines: 0,
    outputTail: '',
    durationMs: 0,
  };
}
