// What a run's facts add up to in its outcome: its turns, the usage summed over them, rejected lines, the model, the session id, the first result.
import { addUsage } from '../wire/index.js';
import type { TurnReport } from '../protocol/driver.js';
import type { RunResult } from '../protocol/results.js';
import type { OutcomeInputs } from './outcome.js';

/** The part of an outcome the tally supplies. */
export type TalliedFacts = Pick<OutcomeInputs, 'model' | 'result' | 'turnUsage' | 'turns' | 'rejectedLines' | 'sessionId'>;

export class RunTally {
  /** The highest turn number the child reported (turns are counted by the child, never by us). */
  turns = 0;
  /** A turn started and has not completed yet. */
  turnOpen = false;
  rejectedLines = 0;
  /** The model the child last named. */
  model: string | undefined;
  /** The peer's own session id (DriverSink.session). */
  sessionId: string | undefined;
  /** The first result: a child that reports two keeps its first word. */
  #result: RunResult | undefined;
  #turnUsage: RunResult['usage'];

  get result(): RunResult | undefined {
    return this.#result;
  }

  turnStarted(turn: number): void {
    this.turns = Math.max(this.turns, turn);
    this.turnOpen = true;
  }

  turnCompleted(report: TurnReport): void {
    this.turns = Math.max(this.turns, report.turn);
    this.turnOpen = false;
    if (report.usage !== undefined) addUsage((this.#turnUsage ??= {}), report.usage);
  }

  resulted(result: RunResult): void {
    this.#result ??= result;
  }

  facts(): TalliedFacts {
    return {
      model: this.model,
      result: this.#result,
      turnUsage: this.#turnUsage,
      turns: this.turns,
      rejectedLines: this.rejectedLines,
      sessionId: this.sessionId,
    };
  }
}
