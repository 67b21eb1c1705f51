// examples/tracing.mjs: a run traced with OpenTelemetry: an SDK registered (spans kept in memory here; an OTLP exporter
// in production), the run started under the caller's span, then the span tree printed: the run, its turn, its tool calls.
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
trace.setGlobalTracerProvider(provider);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator()); // the child's TRACEPARENT

// The bundled fake child stands in for a real agent such as { command: 'fen', args: ['--presenter', 'rpc'] }.
const child = fakeChild('demo');
await trace.getTracer('my-app').startActiveSpan('review the docs', async (span) => {
  const run = spawnRun({ ...child, task: 'Inspect the README and summarise it' });
  console.log(`outcome: ${(await run.outcome).status}`);
  span.end();
});

const spans = exporter.getFinishedSpans();
const depth = (span) => {
  const parent = spans.find((other) => other.spanContext().spanId === span.parentSpanContext?.spanId);
  return parent === undefined ? 0 : depth(parent) + 1;
};
for (const span of [...spans].sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])) {
  const usage = span.attributes['gen_ai.usage.output_tokens'];
  console.log(`${'  '.repeat(depth(span))}${span.name}${usage === undefined ? '' : ` (${usage} output tokens)`}`);
}
await provider.shutdown();
child.cleanup();
