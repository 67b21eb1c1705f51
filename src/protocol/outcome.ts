// Public outcome of a run: its status, error codes and the single record run.outcome resolves to.
import type { Usage } from '../wire/index.js';
import type { BudgetReport } from './budget.js';
import type { TreeLimitsReport } from './tree-limits.js';

/** Final status of a run. */
export type OutcomeStatus = 'done' | 'cancelled' | 'failed' | 'timed-out';

/**
 * Why a run did not end as planned; set together with `outcome.error`.
 * - `spawn-failed`: the command could not be started (ENOENT, EACCES...). The CLI maps it to exit code 3.
 * - `version-mismatch`, `foreign-run`, `event-file-truncated`: protocol failures (the run was cancelled and reaped).
 * - `event-file-replaced`: the child swapped its event file (renamed another over it, removed and re-created it, or
 *   truncated and rewrote it): a protocol failure, as above.
 * - `ready-timeout`: no `ready` within `readyTimeoutMs`.
 * - `deadline`: the parent enforced the deadline (status `timed-out`).
 * - `aborted`: the parent cancelled the run: `cancel()`, the `signal`, `terminate()` or disposal (status `cancelled`).
 * - `finalize-timeout`: an accepted finalize did not end the run within `finalizeGraceMs`, so it was cancelled.
 * - `no-exit-event`: the process ended without writing `exit` (crash).
 * - `child-error`: the child's own `exit` said failed/timed-out/cancelled with an error text.
 * - `channel-error`: reading the event file or writing the control file failed.
 * - `parent-shutdown`: the parent process received SIGINT, SIGTERM or SIGHUP.
 * - `stalled`: a turn was open and the child wrote nothing for `stallTimeoutMs`, so it was cancelled (status `cancelled`).
 * - `usage-error`: the child rejected its command line (HEP: exit code 64).
 * - `protocol-error`: the child's output is not its protocol (HEP: a first stdout line that is not a header).
 * - `connection-refused`: `connectRun` could not connect (nothing listens, or the daemon refused the handshake, e.g. HTTP 401).
 * - `connection-lost`: the daemon connection broke and could not be re-attached within `reconnectGraceMs`.
 * - `no-pong`: the daemon did not answer a liveness probe within `pongTimeoutMs`.
 * - `read-only`: the daemon accepted the connection read-only (a read token), so it would refuse the task.
 * - `unknown-session`: `connectRun({ resume })` (or mew's `sessionId`) named a session or task the daemon does not have for this client.
 * - `request-unanswered`: the agent waited for an answer subvisor cannot give (a request kind it cannot answer or
 *   deny, such as a request of a newer mew build) and nobody settled it within `requestTimeoutMs` (status `failed`).
 * - `worker-lost`: subvisor/queue only: the queue worker running the run died or lost its lock and the run's
 *   `attempts` were used up, or its job failed in BullMQ without an outcome.
 * - `budget-exceeded`: the run reached a limit of its `budget` (or of the shared budget it draws on) and did not
 *   end `done` after that (`outcome.budget` says which limit, with the figures); a run of a spent shared budget
 *   that never started (status `cancelled`).
 * - `invalid-output`: the answer does not match `outputSchema` (after the repair turn, where the protocol can
 *   take one); `outcome.outputErrors` lists why, the answer stays in `finalText` (status `failed`).
 * - `memory-limit`, `cpu-limit`, `process-limit`: the tree went over `limits.memoryBytes`, `limits.cpuSeconds`
 *   (the tree's sampled CPU time, or the child's own RLIMIT_CPU) or `limits.processes` and was killed
 *   (status `failed`); `outcome.limits.exceeded` says which limit and the figure seen.
 */
export type OutcomeErrorCode =
  | 'spawn-failed'
  | 'version-mismatch'
  | 'foreign-run'
  | 'event-file-truncated'
  | 'event-file-replaced'
  | 'ready-timeout'
  | 'deadline'
  | 'aborted'
  | 'finalize-timeout'
  | 'no-exit-event'
  | 'child-error'
  | 'channel-error'
  | 'parent-shutdown'
  | 'stalled'
  | 'usage-error'
  | 'protocol-error'
  | 'connection-refused'
  | 'connection-lost'
  | 'no-pong'
  | 'read-only'
  | 'unknown-session'
  | 'request-unanswered'
  | 'worker-lost'
  | 'budget-exceeded'
  | 'invalid-output'
  | 'memory-limit'
  | 'cpu-limit'
  | 'process-limit';

/**
 * Why a `final-text-path` file was not taken as the answer (see {@link FinalTextFileRefusal}).
 * - `unreadable`: it cannot be examined, opened or read (ENOENT, EACCES, EIO...).
 * - `not-regular`: a symbolic link, a directory, a FIFO, a device...
 * - `foreign-owner`: owned by another user than the parent's.
 * - `hard-linked`: it has more than one link (e.g. a hard link to a file of the parent's).
 * - `shared-writable`: group or others may write it.
 * - `older-than-run`: its mtime, ctime or birth time is before the run started (an existing file, not the child's temp file).
 * - `replaced`: the path named another file when it was opened than when it was checked.
 * - `too-large`: over `maxFinalTextBytes` (this one alone passed the ownership checks, so it was removed).
 * - `size-mismatch`: what it held was not the size it reports (a /proc or /sys file, or one still being written).
 * - `shorter-than-cut`: it holds fewer bytes than the result's cut inline text, so it is not the whole answer.
 */
export type FinalTextRefusalCode =
  | 'unreadable'
  | 'not-regular'
  | 'foreign-owner'
  | 'hard-linked'
  | 'shared-writable'
  | 'older-than-run'
  | 'replaced'
  | 'too-large'
  | 'size-mismatch'
  | 'shorter-than-cut';

/** A `final-text-path` file subvisor did not take as the answer, and why. */
export interface FinalTextFileRefusal {
  code: FinalTextRefusalCode;
  /** The reason in words (also in `truncationNote`). */
  reason: string;
  /** The path as the child named it (untrusted). */
  path: string;
  /** Whether subvisor removed it: only a `too-large` file that passed every ownership check. */
  removed: boolean;
}

/** Why an answer does not match `outputSchema`: where in the value (a JSON Pointer, '' for the whole) and what is wrong. */
export interface OutputError {
  path: string;
  message: string;
}

/**
 * The single record of how a run ended. `run.outcome` resolves to it exactly once and never rejects.
 * `T` is the type of `data`, the answer parsed and validated against `outputSchema` (the caller's claim
 * that the schema describes `T`; `unknown` by default).
 */
export interface Outcome<T = unknown> {
  runId: string;
  status: OutcomeStatus;
  /** The protocol the run spoke (absent for a queued run that never started without one). */
  protocol?: string;
  /** The model the child last named (Fen's `agent-started`/`llm-start`), when it named one. */
  model?: string;
  /** The whole answer (from `final-text-path` when the child wrote one and it was safe to read). */
  finalText?: string;
  /** With `outputSchema`: the answer (a fenced JSON block, or the whole text) parsed and valid against the schema. */
  data?: T;
  /** With `outputSchema`, when the answer did not match it (`errorCode: 'invalid-output'`): why, at most 20. */
  outputErrors?: OutputError[];
  /** The run had a budget: its limits, what it used, and the limit it reached. */
  budget?: BudgetReport;
  /** The run had `limits`: them, the highest figures its tree was sampled at, and the limit that ended it. */
  limits?: TreeLimitsReport;
  /** True only when `finalText` is known to be incomplete (or missing after `exit done`). */
  truncated: boolean;
  /** Why the answer is incomplete or missing. */
  truncationNote?: string;
  /**
   * Set when the child named a `final-text-path` file that was not read (the answer is then the cut
   * inline text, `truncated: true`): which check it failed and whether it was removed.
   */
  finalTextFileRefusal?: FinalTextFileRefusal;
  /** The result's stop reason. */
  stopReason?: string;
  /** Token usage: the result's, or else summed from every `turn-complete`, camelCase whatever the protocol's spelling. */
  usage?: Usage;
  /** Number of turns the run went through (the highest turn number seen). */
  turns: number;
  /** A human-readable reason when the run did not end `done` cleanly (the child's own error when it gave one). */
  error?: string;
  /** Machine-readable category of `error`. */
  errorCode?: OutcomeErrorCode;
  /** True when the command could not be started at all (`errorCode` is `spawn-failed`). */
  spawnFailed: boolean;
  /** The process's exit code (null when killed by a signal or never started). */
  exitCode: number | null;
  /** The signal that ended the process, if any. */
  signal: NodeJS.Signals | null;
  /** subvisor had to signal the process tree (SIGTERM or more). */
  killed: boolean;
  /** SIGKILL was needed because something survived SIGTERM. */
  escalated: boolean;
  /** Event lines that were rejected (every `rejected` event). */
  rejectedLines: number;
  /** The last bytes (`outputTailBytes`) of the child's stdout and stderr, interleaved as they arrived. */
  outputTail: string;
  /** Wall time from `spawnRun` to the outcome. */
  durationMs: number;
  /**
   * The peer's own id of the conversation, where its protocol has one (fuseraft: `ready.sessionId`;
   * mew: `session_ready.session_id`; HEP: `hep_header.session`; fuseraft serve: the task's `sessionId`):
   * resume with the peer's own means (docs/durable.md says which, per protocol). Fen has none.
   */
  sessionId?: string;
}

