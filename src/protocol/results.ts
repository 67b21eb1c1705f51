// What a driver reports of how a run ended: the child's own account of its end, and the answer with its metadata.
import type { Usage } from '../wire/index.js';
import type { FinalTextFileRefusal, OutcomeErrorCode, OutcomeStatus } from './outcome.js';

/** The answer part of an outcome, as a driver obtained it. */
export interface Answer {
  finalText?: string;
  truncated: boolean;
  truncationNote?: string;
  /** The answer file the driver refused to read (Fen's `final-text-path`). */
  fileRefusal?: FinalTextFileRefusal;
}

/** How the child itself said the run ended (Fen's `exit` event, HEP's exit code...). */
export interface ChildExit {
  status: OutcomeStatus;
  /** The child's own error text. */
  error?: string;
  /** A code the driver derived from the child's statement (e.g. HEP's exit 64: `usage-error`). Default `child-error`. */
  code?: OutcomeErrorCode;
}

/** The answer and its metadata, reported once by the driver (Fen's `result`, HEP's last round). */
export interface RunResult {
  stopReason: string;
  /** The protocol's own total usage; when absent the outcome sums the turns' usage. */
  usage?: Usage;
  answer: Promise<Answer>;
}
