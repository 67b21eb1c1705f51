// outputSchema over a run's life: the instructions sent with the task, the one repair turn before the automatic close, the verdict on the answer.
import type { OutputError } from '../protocol/outcome.js';
import type { JsonSchema } from '../protocol/resolved-options.js';
import type { FinalVerdict } from './outcome.js';
import type { OutputCheck } from './output-schema.js';

/** What the task says after it (unless `outputInstructions` replaces it): the shape to answer in, with the schema. */
export function outputInstructions(schema: JsonSchema): string {
  return [
    'Give your final answer as one JSON value that matches the JSON Schema below, in a fenced code block marked json;',
    'text outside that block is ignored.',
    '```json',
    JSON.stringify(schema, null, 2),
    '```',
  ].join('\n');
}

/** An error's path and message may quote the child's keys and values: each is cut to this many characters in texts. */
const MAX_ERROR_CHARS = 300;

/** The repair turn: what was wrong with the answer, and how to answer again. */
export function repairPrompt(errors: readonly OutputError[]): string {
  return [
    'Your answer does not match the required JSON Schema:',
    ...errors.map((error) => `- ${describeError(error)}`),
    'Reply with the corrected JSON value only, in one fenced code block marked json.',
  ].join('\n');
}

/** `/items/0/count: must be number`, cut to a readable length. */
export function describeError(error: OutputError): string {
  const text = `${error.path === '' ? '(the value)' : error.path}: ${error.message}`;
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}...` : text;
}

/** The answer part of the outcome. */
export interface OutputJudgement {
  verdict: FinalVerdict;
  data?: unknown;
  errors?: OutputError[];
}

/**
 * One run's output contract. Before the automatic close (keepAlive false) the last turn's answer is
 * checked; an invalid one gets one repair turn where the protocol can continue the conversation. The
 * outcome's answer (`finalText`) is checked at the end: valid, it becomes `data`; invalid, the run fails
 * `invalid-output` with the errors.
 */
export class OutputContract {
  readonly #check: OutputCheck;
  readonly #canRepair: boolean;
  #lastAnswer: string | undefined;
  #repaired = false;

  constructor(check: OutputCheck, canRepair: boolean) {
    this.#check = check;
    this.#canRepair = canRepair;
  }

  /** A turn completed with this answer (undefined: not known whole before the end). */
  turnAnswered(answer: string | undefined): void {
    this.#lastAnswer = answer;
  }

  /**
   * The run is about to close by itself: the repair prompt to send first, or undefined to close now (the
   * answer is valid or unknown, the repair was sent already, the protocol cannot continue, or `stopped`:
   * the run was stopped by its budget).
   */
  repairBeforeClose(stopped: boolean): string | undefined {
    if (!this.#canRepair || this.#repaired || stopped || this.#lastAnswer === undefined) return undefined;
    const verdict = this.#check.check(this.#lastAnswer);
    if (verdict.ok) return undefined;
    this.#repaired = true;
    return repairPrompt(verdict.errors);
  }

  /** The verdict on a run that ended `done` with `finalText`: `data`, or `failed` with `invalid-output`. */
  judge(verdict: FinalVerdict, finalText: string | undefined): OutputJudgement {
    if (verdict.status !== 'done') return { verdict };
    const checked = finalText === undefined
      ? { ok: false as const, errors: [{ path: '', message: 'the run ended without an answer' }] }
      : this.#check.check(finalText);
    if (checked.ok) return { verdict, data: checked.data };
    const repair = this.#repaired ? ' after the repair turn' : '';
    const listed = checked.errors.map(describeError).join('; ');
    return {
      verdict: { status: 'failed', code: 'invalid-output', error: `the answer does not match outputSchema${repair}: ${listed}`, fromChild: false },
      errors: checked.errors,
    };
  }
}
