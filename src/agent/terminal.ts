// How a run's outcome becomes the invoke's one terminal event: completed, or failed with a code and a retryable classification.
import type { Outcome, OutcomeErrorCode } from '../api/types.js';
import type { ChildFailure } from './map-run-events.js';
import type { FailedAgentEvent, Json, TerminalAgentEvent } from './types.js';

/** `failed.code` values asAgent produces. */
export type AgentFailureCode =
  | 'aborted'
  | 'session_busy'
  | 'agent_closed'
  | 'invalid_input'
  | 'invalid_options'
  | 'spawn_failed'
  | 'protocol_error'
  | 'ready_timeout'
  | 'timed_out'
  | 'crashed'
  | 'channel_error'
  | 'child_failed'
  | 'turn_failed'
  | 'budget_exceeded'
  | 'invalid_output'
  | 'resource_limit'
  | 'internal_error';

/**
 * The retryable classification of run failures, by the outcome's `errorCode`: what a re-send with the
 * same session can fix (a slow start, a crash, a deadline, a child's own failure) is retryable; what
 * would fail the same way again (a missing command, a protocol mismatch) is not.
 */
const FAILURES: Record<OutcomeErrorCode, { code: AgentFailureCode; retryable: boolean }> = {
  'spawn-failed': { code: 'spawn_failed', retryable: false },
  'version-mismatch': { code: 'protocol_error', retryable: false },
  'foreign-run': { code: 'protocol_error', retryable: false },
  'event-file-truncated': { code: 'protocol_error', retryable: false },
  'event-file-replaced': { code: 'protocol_error', retryable: false },
  'ready-timeout': { code: 'ready_timeout', retryable: true },
  deadline: { code: 'timed_out', retryable: true },
  aborted: { code: 'aborted', retryable: false },
  'finalize-timeout': { code: 'aborted', retryable: false },
  'no-exit-event': { code: 'crashed', retryable: true },
  'child-error': { code: 'child_failed', retryable: true },
  'channel-error': { code: 'channel_error', retryable: true },
  'parent-shutdown': { code: 'aborted', retryable: false },
  stalled: { code: 'timed_out', retryable: true }, // the stall watchdog (stallTimeoutMs) gave up on a silent turn
  'usage-error': { code: 'child_failed', retryable: false },
  'protocol-error': { code: 'protocol_error', retryable: false },
  // A daemon that is down or gone may be back shortly; a refused token or an unknown session will not change.
  'connection-refused': { code: 'channel_error', retryable: true },
  'connection-lost': { code: 'channel_error', retryable: true },
  'no-pong': { code: 'channel_error', retryable: true },
  'read-only': { code: 'child_failed', retryable: false },
  'unknown-session': { code: 'invalid_input', retryable: false },
  // The agent asked something only a person (or another client) could answer: retrying asks it again.
  'request-unanswered': { code: 'child_failed', retryable: false },
  'worker-lost': { code: 'crashed', retryable: true }, // subvisor/queue: the worker died with the run
  // The caller's own limit: the same task would spend it again.
  'budget-exceeded': { code: 'budget_exceeded', retryable: false },
  // The repair turn did not fix the answer; a new attempt may answer in the schema's shape.
  'invalid-output': { code: 'invalid_output', retryable: true },
  // The tree went over one of the caller's `limits`: the same task would most likely do it again.
  'memory-limit': { code: 'resource_limit', retryable: false },
  'cpu-limit': { code: 'resource_limit', retryable: false },
  'process-limit': { code: 'resource_limit', retryable: false },
};

export function failed(code: AgentFailureCode | string, details: string, retryable: boolean): FailedAgentEvent {
  return { type: 'failed', details, retryable, code };
}

/**
 * The terminal for a finished run. `done` is `completed` (with the child's `data`, or the answer validated
 * against `outputSchema`). A run its budget stopped without an answer is `budget_exceeded`, not retryable,
 * whatever its status. A `cancelled` run was cancelled by someone other than the consumer (its own
 * cancellation yields no terminal at all): an abort signal, a dispatched abort, the parent shutting down,
 * `agent.close()`: `aborted`, not retryable. `timed-out` is `timed_out`, retryable. `failed` follows the
 * table above; when the child said why it failed (a serveAgent child's `code`/`retryable`), its own
 * classification wins.
 */
export function terminalFor(outcome: Outcome, child: ChildFailure | undefined, data: Json | undefined): TerminalAgentEvent {
  if (outcome.status === 'done') return data === undefined ? { type: 'completed' } : { type: 'completed', data };
  const details = child?.details ?? outcome.error ?? `the run ended ${outcome.status}`;
  if (outcome.errorCode === 'budget-exceeded') return failed('budget_exceeded', details, false);
  if (outcome.status === 'cancelled') return failed('aborted', outcome.error ?? 'the run was cancelled', false);
  if (outcome.status === 'timed-out') return failed('timed_out', outcome.error ?? details, true);
  const known = outcome.errorCode === undefined ? undefined : FAILURES[outcome.errorCode];
  const base = known ?? { code: 'child_failed', retryable: true };
  if (outcome.errorCode === 'child-error' && child !== undefined) {
    return failed(child.code ?? base.code, details, child.retryable ?? base.retryable);
  }
  return failed(base.code, outcome.error ?? details, base.retryable);
}
