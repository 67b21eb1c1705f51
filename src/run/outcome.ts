// Outcome assembly: who decides how a run ended (spawn error, protocol failure, the child, the parent), and the record.
import type { Usage } from '../wire/index.js';
import type { ProcessExit, ProcessReport } from '../process/supervised-process.js';
import type { Answer, ChildExit, RunResult } from '../protocol/results.js';
import type { Outcome, OutcomeErrorCode, OutcomeStatus, TreeLimitsReport } from '../protocol/index.js';

/** A reason to end a run: the parent's own (abort, deadline, ready timeout, protocol failure...) or the final one. */
export interface Verdict {
  status: OutcomeStatus;
  code: OutcomeErrorCode;
  error: string;
}

/** The final verdict, and whether it is the child's own `exit`. */
export interface FinalVerdict extends Verdict {
  fromChild: boolean;
}

export interface VerdictInputs {
  command: string;
  /** How the process ended; undefined for a run without a process (the driver's peer went away). */
  exit: ProcessExit | undefined;
  /** The tree went over one of its `limits` (and was killed for it). */
  limitFailure?: Verdict | undefined;
  /** A fatal protocol failure the driver reported. */
  protocolFailure: Verdict | undefined;
  /** How the child said it ended, if it did. */
  childExit: ChildExit | undefined;
  /** The parent's reason to end the run, if it had one. */
  parentVerdict: Verdict | undefined;
  /** The child said `ready` at least once: the run reached its agent. */
  reachedAgent: boolean;
}

/**
 * Decides the status once the process is gone. A spawn error, a limit the tree went over (it was killed
 * for it, whatever it said after) or a protocol failure wins, in that order. Then the
 * child's own `exit`: its status stands (a child that finished `done` while being cancelled did
 * finish), and a non-done status takes the parent's error code when the parent asked for exactly
 * that; a child that says `cancelled` after the parent cancelled it for another reason (a deadline,
 * a ready timeout) ended for that reason. Without an `exit` event the parent's reason stands, or else the
 * crash is reported. A run that never reached its agent (no `ready`) is never `done`, whatever the child
 * or its driver said: the parent's reason stands, or the claim is a protocol error.
 */
export function finalVerdict(inputs: VerdictInputs): FinalVerdict {
  const { exit, protocolFailure, childExit, parentVerdict } = inputs;
  if (exit?.spawnError !== undefined) {
    const code = exit.spawnError.code === undefined ? '' : ` (${exit.spawnError.code})`;
    return {
      status: 'failed',
      code: 'spawn-failed',
      error: `could not start ${JSON.stringify(inputs.command)}${code}: ${exit.spawnError.message}`,
      fromChild: false,
    };
  }
  if (inputs.limitFailure !== undefined) return { ...inputs.limitFailure, fromChild: false };
  if (protocolFailure !== undefined) return { ...protocolFailure, fromChild: false };
  if (childExit?.status === 'done' && !inputs.reachedAgent) {
    if (parentVerdict !== undefined) return { ...parentVerdict, fromChild: false };
    return { status: 'failed', code: 'protocol-error', error: 'the child said it was done but never said it was ready: the task never reached the agent', fromChild: false };
  }
  if (childExit !== undefined) {
    const status = childExit.status;
    if (status === 'done') return { status, code: 'child-error', error: '', fromChild: true };
    // A child that obeyed the cancel the parent sent for its own reason (a deadline, a ready timeout)
    // ended for that reason: the parent's verdict is how the run ended (HEP has no deadline of its own).
    if (status === 'cancelled' && parentVerdict !== undefined && parentVerdict.status !== 'cancelled') {
      return { ...parentVerdict, fromChild: false };
    }
    const asked = parentVerdict?.status === status ? parentVerdict : undefined;
    return {
      status,
      code: asked?.code ?? childExit.code ?? 'child-error',
      error: childExit.error ?? asked?.error ?? `the child exited ${status}`,
      fromChild: true,
    };
  }
  if (parentVerdict !== undefined) return { ...parentVerdict, fromChild: false };
  if (exit === undefined) {
    return { status: 'failed', code: 'no-exit-event', error: 'the connection to the child ended without an exit', fromChild: false };
  }
  const how = exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`;
  return { status: 'failed', code: 'no-exit-event', error: `the child ${how} without an exit event`, fromChild: false };
}

export interface OutcomeInputs {
  runId: string;
  protocol: string;
  model: string | undefined;
  verdict: FinalVerdict;
  report: ProcessReport;
  answer: Answer | undefined;
  result: Omit<RunResult, 'answer'> | undefined;
  /** Usage summed from every turn-complete (used when the result has none). */
  turnUsage: Usage | undefined;
  turns: number;
  rejectedLines: number;
  durationMs: number;
  /** The peer's own session id, when its driver reported one. */
  sessionId?: string | undefined;
  /** What the run's budget and output schema add. */
  fields: TermsFields;
  /** The run's `limits` report, when it had limits. */
  limits?: TreeLimitsReport | undefined;
}

/** What a run's budget and output schema add to its outcome (see task-terms.ts). */
export type TermsFields = Pick<Outcome, 'budget' | 'data' | 'outputErrors'>;

/** Builds the outcome record. A run that ended `done` without a result has a missing answer: `truncated` with a note. */
export function buildOutcome(inputs: OutcomeInputs): Outcome {
  const { verdict, report, answer, result } = inputs;
  const outcome: Outcome = {
    runId: inputs.runId,
    status: verdict.status,
    protocol: inputs.protocol,
    truncated: false,
    turns: inputs.turns,
    spawnFailed: verdict.code === 'spawn-failed' && !verdict.fromChild,
    exitCode: report.exitCode,
    signal: report.signal,
    killed: report.killed,
    escalated: report.escalated,
    rejectedLines: inputs.rejectedLines,
    outputTail: report.outputTail,
    durationMs: inputs.durationMs,
  };
  if (verdict.status !== 'done' || !verdict.fromChild) {
    outcome.error = verdict.error;
    outcome.errorCode = verdict.code;
  }
  if (answer !== undefined) {
    if (answer.finalText !== undefined) outcome.finalText = answer.finalText;
    outcome.truncated = answer.truncated;
    if (answer.truncationNote !== undefined) outcome.truncationNote = answer.truncationNote;
    if (answer.fileRefusal !== undefined) outcome.finalTextFileRefusal = answer.fileRefusal;
  } else if (verdict.status === 'done') {
    outcome.truncated = true;
    outcome.truncationNote = 'the child exited done without sending a result';
  }
  if (result !== undefined) outcome.stopReason = result.stopReason;
  if (inputs.sessionId !== undefined) outcome.sessionId = inputs.sessionId;
  const usage = result?.usage ?? inputs.turnUsage;
  if (usage !== undefined) outcome.usage = usage;
  if (inputs.model !== undefined) outcome.model = inputs.model;
  if (inputs.limits !== undefined) outcome.limits = inputs.limits;
  return Object.assign(outcome, inputs.fields);
}

/**
 * The outcome of a run that ended before any child process existed for it (cancelled while queued in a
 * pool or a queue, an unknown queue profile, a lost worker): nothing ran, so nothing was killed or read.
 */
export function childlessOutcome(runId: string, status: OutcomeStatus, errorCode: OutcomeErrorCode, error: string, durationMs = 0): Outcome {
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
    durationMs,
  };
}
