// Benchmark of OpenTelemetry's cost: in-memory runs (no process: the run core alone, where a cost would show) with no SDK
// registered against `tracing: false` (today's path: no telemetry code at all), per run and per event, in alternating
// blocks; then the same with an SDK registered that records every span (what tracing costs when it is on).
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createInMemoryRun } from 'subvisor/testing';
import { median, row, sized } from './lib/harness.mjs';

/** Within noise: what "nothing measurable" means here (a share of the baseline's time). */
const NO_SDK_SHARE = 0.05;

/** One run from start to outcome: ready, the task's ack, a turn with a tool call and text, the result, the exit. */
async function oneRun(tracing) {
  const { run, child } = createInMemoryRun(tracing === undefined ? { task: 'go' } : { task: 'go', tracing });
  child.onControl = ({ ref, control }) => {
    if (control.type === 'prompt') {
      child.ack(ref, 'accepted');
      child.turnStarted();
      child.event({ type: 'tool-call', name: 'read_file', id: 'call-1' });
      child.event({ type: 'tool-result', name: 'read_file', isError: false, toolCallId: 'call-1' });
      child.text('The answer is 42.');
      child.turnComplete('stop', { inputTokens: 100, outputTokens: 20 });
    } else if (control.type === 'close') {
      child.ack(ref, 'accepted');
      child.result('The answer is 42.');
      child.exit('done');
      child.gone();
    }
  };
  child.ready();
  await run.outcome;
}

/** One run streaming `events` text deltas to a `for await` consumer (batches); resolves once the consumer saw them all. */
async function streamingRun(tracing, events) {
  const { run, child } = createInMemoryRun(tracing === undefined ? { task: 'go' } : { task: 'go', tracing });
  child.onControl = async ({ ref, control }) => {
    if (control.type === 'prompt') {
      child.ack(ref, 'accepted');
      child.turnStarted();
      for (let sent = 0; sent < events; sent += 1000) {
        for (let index = 0; index < 1000; index++) child.text('token ');
        await new Promise((resolve) => setImmediate(resolve));
      }
      child.turnComplete('stop');
    } else if (control.type === 'close') {
      child.ack(ref, 'accepted');
      child.exit('done');
      child.gone();
    }
  };
  child.ready();
  let seen = 0;
  for await (const batch of run.batches()) seen += batch.length;
  await run.outcome;
  return seen;
}

/** Milliseconds `work` takes. */
async function timed(work) {
  const start = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/**
 * Alternating blocks of `a` (the baseline) and `b` (which goes first swaps each block), so load from other
 * processes hits both alike: the median of the paired differences b - a (what `b` adds, robust to the load
 * changing during the run), and the median time of `a`.
 */
async function alternate(blocks, a, b) {
  const added = [];
  const baseline = [];
  for (let block = 0; block < blocks; block++) {
    let aMs;
    let bMs;
    if (block % 2 === 0) {
      aMs = await timed(a);
      bMs = await timed(b);
    } else {
      bMs = await timed(b);
      aMs = await timed(a);
    }
    added.push(bMs - aMs);
    baseline.push(aMs);
  }
  return { added: median(added), baseline: median(baseline) };
}

const runs = (count, tracing) => async () => {
  for (let index = 0; index < count; index++) await oneRun(tracing);
};

export async function run(options) {
  const { blocks, runsPerBlock, events } = sized(options, {
    full: { blocks: 300, runsPerBlock: 50, events: 20_000 },
    quick: { blocks: 12, runsPerBlock: 100, events: 10_000 },
    smoke: { blocks: 2, runsPerBlock: 5, events: 1000 },
  });
  const bench = 'observe';
  // Warm-up: both paths through V8's optimizing compiler before anything counts (a first comparison, thrown away:
  // without it the first blocks of whichever path ran second were measured while it was still being compiled).
  await alternate(blocks, runs(runsPerBlock, false), runs(runsPerBlock, undefined));

  const perRun = await alternate(blocks, runs(runsPerBlock, false), runs(runsPerBlock, undefined));
  const perEvent = await alternate(Math.max(2, blocks / 4), () => streamingRun(false, events), () => streamingRun(undefined, events));

  // An SDK that records every span (exported to nowhere): tracing on, as an application that registered one gets it.
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor({ export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} })] });
  trace.setGlobalTracerProvider(provider);
  const tracedRun = await alternate(blocks, runs(runsPerBlock, false), runs(runsPerBlock, undefined));
  const tracedEvent = await alternate(Math.max(2, blocks / 4), () => streamingRun(false, events), () => streamingRun(undefined, events));
  trace.disable();
  await provider.shutdown();

  const micros = (ms, count) => (ms * 1000) / count;
  const nanos = (ms) => (ms * 1e6) / events;
  const today = 'tracing: false';
  return [
    row({
      bench,
      metric: 'time a run takes more, no SDK registered (in-memory run: start to outcome, one turn, a tool call)',
      value: micros(perRun.added, runsPerBlock),
      unit: 'µs',
      baseline: today,
      baselineValue: micros(perRun.baseline, runsPerBlock),
      target: `ratio <= ${NO_SDK_SHARE}`,
      met: perRun.added / perRun.baseline <= NO_SDK_SHARE,
    }),
    row({
      bench,
      metric: `time an event takes more, no SDK registered (${events} text deltas to a for-await consumer)`,
      value: nanos(perEvent.added),
      unit: 'ns',
      baseline: today,
      baselineValue: nanos(perEvent.baseline),
      target: `ratio <= ${NO_SDK_SHARE}`,
      met: perEvent.added / perEvent.baseline <= NO_SDK_SHARE,
    }),
    row({
      bench,
      metric: 'time a run takes more, an SDK registered (a span per run, turn and tool call)',
      value: micros(tracedRun.added, runsPerBlock),
      unit: 'µs',
      baseline: today,
      baselineValue: micros(tracedRun.baseline, runsPerBlock),
    }),
    row({
      bench,
      metric: `time an event takes more, an SDK registered (${events} text deltas)`,
      value: nanos(tracedEvent.added),
      unit: 'ns',
      baseline: today,
      baselineValue: nanos(tracedEvent.baseline),
    }),
  ];
}
