// An OpenTelemetry SDK for tests: spans into memory, metrics read on demand, W3C propagation and an AsyncLocalStorage context; installed and removed per file.
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import type { Sampler } from '@opentelemetry/sdk-trace-base';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import type { MetricData } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** A reader that exports nothing by itself: the test collects when it wants to look. */
class OnDemandReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export interface TestTelemetry {
  /** Every span ended so far. */
  spans(): ReadableSpan[];
  /** The spans named `name`. */
  named(name: string): ReadableSpan[];
  /** Every metric recorded so far, by instrument name. */
  metrics(): Promise<Map<string, MetricData>>;
  reset(): void;
  /** Unregisters everything (the API's globals are back to no-ops). */
  uninstall(): Promise<void>;
}

/** Registers an SDK globally (tracer, meter, W3C propagator, async-hooks context manager). */
export function installTelemetry(options: { sampler?: Sampler; metrics?: boolean } = {}): TestTelemetry {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    ...(options.sampler === undefined ? {} : { sampler: options.sampler }),
  });
  trace.setGlobalTracerProvider(tracerProvider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  if (options.metrics !== false) metrics.setGlobalMeterProvider(meterProvider);
  return {
    spans: () => exporter.getFinishedSpans(),
    named: (name) => exporter.getFinishedSpans().filter((span) => span.name === name),
    async metrics() {
      const { resourceMetrics } = await reader.collect();
      const byName = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics) for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
      return byName;
    },
    reset: () => exporter.reset(),
    async uninstall() {
      trace.disable();
      context.disable();
      propagation.disable();
      metrics.disable();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}

/** The W3C traceparent of a span (version 00). */
export function traceparentOf(span: ReadableSpan): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`;
}

/** Whether `child` is a child span of `parent`. */
export function isChildOf(child: ReadableSpan, parent: ReadableSpan): boolean {
  return child.parentSpanContext?.spanId === parent.spanContext().spanId && child.spanContext().traceId === parent.spanContext().traceId;
}
