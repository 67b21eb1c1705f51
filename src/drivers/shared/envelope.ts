// The one envelope stamper: a draft becomes a RunEvent with `v`, `seq` and the run id, stamped in place (no copy per event).
import type { RunEvent, RunEventDraft } from '../../protocol/index.js';

/**
 * Stamps the drafts of one run. A draft is a fresh object its maker hands over once, so the envelope is
 * added to it rather than to a copy (a copy per event was the largest cost of a driver's event path).
 */
export class EventStamper {
  readonly #runId: string;
  #seq = 0;

  constructor(runId: string) {
    this.#runId = runId;
  }

  /** The run's next event: `seq` counts the events this stamper stamped (protocols without sequence numbers of their own). */
  next(draft: RunEventDraft): RunEvent {
    return this.at(draft, ++this.#seq);
  }

  /** The event with the peer's own sequence number (HEP: its stdout line's number). */
  at(draft: RunEventDraft, seq: number): RunEvent {
    const event = draft as RunEventDraft & { v: 1; seq: number; run: string };
    event.v = 1;
    event.seq = seq;
    event.run = this.#runId;
    return event as RunEvent;
  }
}
