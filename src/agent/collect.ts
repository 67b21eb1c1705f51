// Buffered consumption of an invoke stream: collect() folds the events into the answer, AgentFailure carries a failed terminal.
import { isKnownAgentEvent } from './known-events.js';
import type { AgentEvent, Json } from './types.js';

/** A `failed` terminal, thrown by {@link collect}. */
export class AgentFailure extends Error {
  override readonly name = 'AgentFailure';

  constructor(
    /** The failure's `details`. */
    readonly details: string,
    /** Worth re-sending with the same session. */
    readonly retryable: boolean,
    /** The failure's machine-readable `code`, when it had one. */
    readonly code?: string,
  ) {
    super(details);
  }
}

/** The buffered result of one invoke. */
export interface Collected {
  /** Every `text` delta, concatenated. Never includes `thinking`. */
  text: string;
  /** The `completed` event's structured data, when it had any. */
  data?: Json;
}

/**
 * Consumes a stream to its terminal: resolves `{ text, data }` on `completed`, throws {@link AgentFailure}
 * on `failed`, and throws a plain `Error` when the stream ends without a terminal (a broken agent).
 * Unknown non-terminal events are ignored. Stops reading at the terminal.
 */
export async function collect(events: AsyncIterable<AgentEvent>): Promise<Collected> {
  let text = '';
  for await (const event of events) {
    if (!isKnownAgentEvent(event)) continue;
    if (event.type === 'text') {
      text += event.delta;
    } else if (event.type === 'completed') {
      return event.data === undefined ? { text } : { text, data: event.data };
    } else if (event.type === 'failed') {
      // A stream from outside TypeScript may still break the types: the failure is thrown all the same.
      throw new AgentFailure(String(event.details), event.retryable === true, event.code);
    }
  }
  throw new Error('the agent stream ended without a terminal event (completed or failed)');
}
