// A run's telemetry, decided once at its start: nothing at all without a registered SDK; else its span (and its context for the child) and its metrics, fed by the run's public events.
import { ProxyTracerProvider, SpanKind, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
import type { Delivery, RunEvent } from '../protocol/events.js';
import type { Outcome } from '../protocol/outcome.js';
import type { Run, SentControl } from '../run/handle.js';
import { GEN_AI, OPERATION, SCOPE, SPAN, SUBVISOR } from './attributes.js';
import { activeContext, carrierOf } from './carriers.js';
import { registeredInstruments, RunMetrics } from './run-metrics.js';
import { RunSpans } from './run-spans.js';
import type { AckFact, RunFacts, RunTracing } from './types.js';

/** What a run's telemetry is started from. */
export interface TelemetryStart {
  protocol: string;
  runId: string;
  /** The run's `tracing` option (undefined: the default, `true`). */
  tracing: RunTracing | undefined;
  /** The parent context when the caller has one of its own (the queue worker: the job's); else the option's, else the active one. */
  parent?: Context;
  /** subvisor/queue: the attempt this run is. */
  attempt?: number;
}

/**
 * Starts a run's telemetry, before its child starts: undefined when there is nothing to do (`tracing:
 * false`, or neither a tracer provider nor a meter provider registered: then not one listener is added
 * to the run, and its per-event path is what it is without telemetry).
 */
export function startRunTelemetry(start: TelemetryStart): RunTelemetry | undefined {
  if (start.tracing === false) return undefined;
  const tracer = registeredTracer();
  const instruments = registeredInstruments('');
  if (tracer === undefined && instruments === undefined) return undefined;
  const startedAt = performance.now();
  const options = typeof start.tracing === 'object' && start.tracing !== null ? start.tracing : {};
  const parent = start.parent ?? options.parent ?? activeContext();
  let carrier: Record<string, string> = {};
  let spans: RunSpans | undefined;
  if (tracer !== undefined) {
    const span = startRunSpan(tracer, start, options.attributes, parent);
    const runContext = trace.setSpan(parent, span);
    carrier = carrierOf(runContext);
    // A span the sampler dropped records nothing: no listener for it (the child still gets its context, and so the decision).
    if (span.isRecording()) spans = new RunSpans(tracer, span, runContext);
  }
  const metrics = instruments === undefined ? undefined : new RunMetrics(instruments, start.protocol, startedAt);
  return new RunTelemetry(carrier, spans, metrics);
}

/** The registered tracer, or undefined when no SDK is registered (the API's proxy has no delegate). */
function registeredTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider();
  if (provider instanceof ProxyTracerProvider) return provider.getDelegateTracer(SCOPE);
  return provider.getTracer(SCOPE);
}

function startRunSpan(tracer: Tracer, start: TelemetryStart, extra: Attributes | undefined, parent: Context): Span {
  const attributes: Attributes = {
    [GEN_AI.operation]: OPERATION.invokeAgent,
    [SUBVISOR.protocol]: start.protocol,
    [SUBVISOR.runId]: start.runId,
    ...extra,
  };
  if (start.attempt !== undefined) attributes[SUBVISOR.attempt] = start.attempt;
  const agent = attributes[GEN_AI.agentName];
  const name = typeof agent === 'string' && agent !== '' ? `${SPAN.run} ${agent}` : SPAN.run;
  // CLIENT: the agent runs in another process (the GenAI conventions' kind for an agent invoked remotely).
  return tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
}

/** One run's telemetry: the context its child gets, and the facts its spans and metrics are made of. */
export class RunTelemetry implements RunFacts {
  /** The propagation fields of the run's span (`traceparent`, `tracestate`, ...); empty without a tracer or a propagator. */
  readonly carrier: Readonly<Record<string, string>>;
  readonly #spans: RunSpans | undefined;
  readonly #metrics: RunMetrics | undefined;

  constructor(carrier: Record<string, string>, spans: RunSpans | undefined, metrics: RunMetrics | undefined) {
    this.carrier = carrier;
    this.#spans = spans;
    this.#metrics = metrics;
  }

  /** Whether anything is recorded: when not (a span the sampler dropped, no meter), nothing needs the run's facts. */
  get recording(): boolean {
    return this.#spans !== undefined || this.#metrics !== undefined;
  }

  event(event: RunEvent): void {
    this.#spans?.event(event);
    this.#metrics?.event(event);
  }

  state(state: string, previous: string): void {
    this.#spans?.state(state, previous);
  }

  controlSent(control: string, origin: string, seq: number): void {
    this.#spans?.controlSent(control, origin, seq);
  }

  ack(ack: AckFact, control: string, origin: string): void {
    this.#spans?.ack(ack, control, origin);
  }

  delivery(seq: number, delivery: Delivery): void {
    this.#spans?.delivery(seq, delivery);
  }

  kill(step: { signal: string; pids: readonly number[] }): void {
    this.#spans?.kill(step);
  }

  outcome(outcome: Outcome, pid?: number): void {
    this.#spans?.outcome(outcome, pid);
    this.#metrics?.outcome(outcome);
  }

  /** Feeds the telemetry from `run`'s public events until its outcome (then every listener goes). */
  listen(run: Run): void {
    if (!this.recording) return;
    const onEvent = (event: RunEvent) => this.event(event);
    const onState = (state: string, previous: string) => this.state(state, previous);
    const onControl = (sent: SentControl) => this.controlSent(sent.type, sent.origin, sent.seq);
    const onAck = (ack: AckFact, control: string, origin: string) => this.ack(ack, control, origin);
    const onDelivery = (seq: number, delivery: Delivery) => this.delivery(seq, delivery);
    const onKill = (step: { signal: string; pids: readonly number[] }) => this.kill(step);
    run.on('event', onEvent);
    run.on('state', onState);
    run.on('control', onControl);
    run.on('ack', onAck);
    run.on('delivery', onDelivery);
    run.on('kill', onKill);
    run.once('outcome', (outcome) => {
      run.off('event', onEvent);
      run.off('state', onState);
      run.off('control', onControl);
      run.off('ack', onAck);
      run.off('delivery', onDelivery);
      run.off('kill', onKill);
      this.outcome(outcome, run.pid);
    });
  }
}
