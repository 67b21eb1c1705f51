// An invoke served by a run of its own: the run's events mapped until its exit, then the outcome's terminal.
import type { Outcome, Run, RunEvent } from '../api/types.js';
import type { TurnSource } from './invoke-stream.js';
import { RunEventMapper } from './map-run-events.js';
import { cancelThenKill } from './stop-run.js';
import { failed, terminalFor } from './terminal.js';
import type { AgentEvent, Json } from './types.js';

/** The last events of a finished run: the answer's tail the stream has not carried yet, then the terminal. */
export function endOfRun(outcome: Outcome, mapper: RunEventMapper): AgentEvent[] {
  const out: AgentEvent[] = [];
  if (outcome.status === 'done') {
    const rest = mapper.answerRemainder(outcome);
    if (rest !== '') out.push({ type: 'text', delta: rest });
    if (outcome.truncated) out.push({ type: 'answer_truncated', note: outcome.truncationNote ?? 'the answer is incomplete' });
  }
  // An answer validated against outputSchema is the data; else what the child sent as its own.
  out.push(terminalFor(outcome, mapper.childFailure, outcome.data !== undefined ? (outcome.data as Json) : mapper.data));
  return out;
}

export class FreshTurn implements TurnSource {
  readonly #events: AsyncIterator<RunEvent, undefined>;
  readonly #mapper: RunEventMapper;
  #released = false;

  constructor(
    readonly run: Run,
    passRunEvents: boolean,
    private readonly cancelGraceMs: number,
    private readonly onEnd: () => void,
  ) {
    this.#events = run[Symbol.asyncIterator]();
    this.#mapper = new RunEventMapper(passRunEvents);
  }

  async pull(): Promise<AgentEvent[]> {
    try {
      const next = await this.#events.next();
      if (next.done === true) return await this.#finish();
      const out = this.#mapper.map(next.value);
      if (next.value.type === 'exit') out.push(...(await this.#finish()));
      return out;
    } catch (error) {
      await this.stop();
      return [failed('internal_error', `subvisor internal error: ${(error as Error).message}`, false)];
    }
  }

  async stop(): Promise<void> {
    try {
      await cancelThenKill(this.run, this.cancelGraceMs, 'the agent consumer stopped reading');
    } finally {
      this.#release();
    }
  }

  async #finish(): Promise<AgentEvent[]> {
    const outcome = await this.run.outcome;
    this.#release();
    return endOfRun(outcome, this.#mapper);
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    this.onEnd();
  }
}
