// The telemetry types: the `tracing` run option, and the facts of a run that its spans and metrics are made of.
import type { Attributes, Context } from '@opentelemetry/api';
import type { Delivery, RunEvent } from '../protocol/events.js';
import type { Outcome } from '../protocol/outcome.js';

/**
 * OpenTelemetry for one run (see docs/observability.md). `true` (the default): when the application
 * registered an OpenTelemetry SDK, the run gets a span under the active context, with child spans per
 * turn and tool call, and the child gets the span's context (`TRACEPARENT`, `TRACESTATE`); with no SDK
 * registered nothing at all is done. `false`: no span, no metrics, no propagation, whatever is registered.
 * An object: as `true`, with `parent` as the parent context instead of the active one (for code that has
 * no context manager) and `attributes` added to the run's span (`gen_ai.agent.name` also names it).
 */
export type RunTracing = boolean | { parent?: Context; attributes?: Attributes };

/** The answer to a control as the telemetry sees it (a run's Ack, or one relayed through a queue). */
export interface AckFact {
  status: string;
  seq: number;
  reason?: string;
}

/**
 * What a run's spans and metrics are made of: the public events of a `Run` (`run.on(...)`), or the same
 * facts relayed from elsewhere (the queue worker's run host thread).
 */
export interface RunFacts {
  event(event: RunEvent): void;
  state(state: string, previous: string): void;
  ack(ack: AckFact, control: string, origin: string): void;
  delivery(seq: number, delivery: Delivery): void;
  kill(step: { signal: string; pids: readonly number[] }): void;
  /** The run ended: every open span ends, the metrics are recorded; nothing after it counts. */
  outcome(outcome: Outcome, pid?: number): void;
}
