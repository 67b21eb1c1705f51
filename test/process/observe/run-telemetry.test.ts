// A run's spans, span events and metrics over the in-memory driver, under a registered SDK (and nothing at all without one); the pool parents its runs under the caller's context.
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AlwaysOffSampler } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { createSupervisor } from '../../../src/index.js';
import type { Run, RunOptions } from '../../../src/index.js';
import { createInMemoryRun } from '../../../src/testing/index.js';
import { play } from '../../helpers/memory-children.js';
import { installTelemetry, isChildOf } from '../../helpers/telemetry.js';
import type { TestTelemetry } from '../../helpers/telemetry.js';

function playedRun(options: Omit<RunOptions, 'command' | 'args' | 'protocol'> = {}, end: 'done' | 'failed' | 'hold' = 'done'): Run {
  const { run, child } = createInMemoryRun({ task: 'What is the answer?', killGraceMs: 50, ...options });
  play(child, end);
  return run;
}

/** Every listener the telemetry could have added to a run. */
const listeners = (run: Run) => ['event', 'state', 'control', 'ack', 'delivery', 'kill'].map((name) => run.listenerCount(name as 'event'));

describe('without an SDK', () => {
  it('adds no listener to a run, records nothing, and the run ends as before', async () => {
    const run = playedRun();
    expect(listeners(run)).toEqual([0, 0, 0, 0, 0, 0]);
    expect((await run.outcome).status).toBe('done');
  });
});

describe('with an SDK registered', () => {
  let telemetry: TestTelemetry | undefined;
  afterEach(async () => {
    await telemetry?.uninstall();
    telemetry = undefined;
  });

  it('a run is an invoke_agent span, its turn a child span, each tool call a child span of the turn', async () => {
    telemetry = installTelemetry();
    const run = playedRun();
    const outcome = await run.outcome;
    expect(outcome.status).toBe('done');
    const [runSpan] = telemetry.named('invoke_agent');
    expect(runSpan).toBeDefined();
    expect(runSpan!.kind).toBe(SpanKind.CLIENT);
    expect(runSpan!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'subvisor.protocol': 'in-memory',
      'subvisor.run.id': run.id,
      'subvisor.run.status': 'done',
      'subvisor.run.turns': 1,
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'claude-test',
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.usage.cache_read.input_tokens': 100,
      'subvisor.usage.cost_usd': 0.25,
    });
    expect(runSpan!.status.code).toBe(SpanStatusCode.UNSET);
    const [turn] = telemetry.named('turn');
    expect(isChildOf(turn!, runSpan!)).toBe(true);
    expect(turn!.attributes).toMatchObject({ 'subvisor.turn.number': 1, 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.input_tokens': 120 });
    const [read] = telemetry.named('execute_tool read_file');
    const [grep] = telemetry.named('execute_tool grep');
    expect(isChildOf(read!, turn!)).toBe(true);
    expect(isChildOf(grep!, turn!)).toBe(true);
    expect(read!.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'read_file', 'gen_ai.tool.call.id': 'call-1' });
    expect(read!.status.code).toBe(SpanStatusCode.UNSET);
    expect(grep!.status.code).toBe(SpanStatusCode.ERROR);
    expect(grep!.attributes['error.type']).toBe('tool_error');

    // Span events: the task prompt's ack and subvisor's own close, and the states the run went through.
    const controls = runSpan!.events.filter((event) => event.name === 'subvisor.control').map((event) => event.attributes);
    expect(controls).toEqual([
      expect.objectContaining({ 'subvisor.control.type': 'prompt', 'subvisor.control.origin': 'task', 'subvisor.ack.status': 'accepted' }),
      expect.objectContaining({ 'subvisor.control.type': 'close', 'subvisor.control.origin': 'auto', 'subvisor.ack.status': 'accepted' }),
    ]);
    // Each control's writing is an event of its own, before its answer (the same seq): the time between them is on the span.
    const controlEvents = runSpan!.events.filter((event) => event.name.startsWith('subvisor.control') && event.name !== 'subvisor.control.delivery');
    expect(controlEvents.map((event) => [event.name, event.attributes?.['subvisor.control.type'], event.attributes?.['subvisor.control.seq']])).toEqual([
      ['subvisor.control.sent', 'prompt', 1],
      ['subvisor.control', 'prompt', 1],
      ['subvisor.control.sent', 'close', 2],
      ['subvisor.control', 'close', 2],
    ]);
    expect(controlEvents[0]!.attributes).toEqual({ 'subvisor.control.type': 'prompt', 'subvisor.control.origin': 'task', 'subvisor.control.seq': 1 });
    const states = runSpan!.events.filter((event) => event.name === 'subvisor.state').map((event) => event.attributes?.['subvisor.state']);
    expect(states).toEqual(expect.arrayContaining(['ready', 'running', 'done']));
    // Once the run ended, the telemetry's listeners are gone.
    expect(listeners(run)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('parents the run under the active context, or the parent it is given, and names it after gen_ai.agent.name', async () => {
    telemetry = installTelemetry();
    const tracer = trace.getTracer('test');
    const caller = tracer.startSpan('caller');
    await context.with(trace.setSpan(context.active(), caller), () => playedRun().outcome);
    const other = tracer.startSpan('other');
    await playedRun({ tracing: { parent: trace.setSpan(context.active(), other), attributes: { 'gen_ai.agent.name': 'coder' } } }).outcome;
    caller.end();
    other.end();
    const [first] = telemetry.named('invoke_agent');
    const [named] = telemetry.named('invoke_agent coder');
    expect(isChildOf(first!, telemetry.named('caller')[0]!)).toBe(true);
    expect(isChildOf(named!, telemetry.named('other')[0]!)).toBe(true);
    expect(named!.attributes['gen_ai.agent.name']).toBe('coder');
  });

  it('tracing: false records nothing and adds no listener', async () => {
    telemetry = installTelemetry();
    const run = playedRun({ tracing: false });
    expect(listeners(run)).toEqual([0, 0, 0, 0, 0, 0]);
    await run.outcome;
    expect(telemetry.spans()).toEqual([]);
    expect((await telemetry.metrics()).size).toBe(0);
  });

  it('refuses a tracing option that is not one', () => {
    expect(() => createInMemoryRun({ tracing: 'yes' as never })).toThrow(/options.tracing must be a boolean/);
    expect(() => createInMemoryRun({ tracing: { parent: {} as never } })).toThrow(/must be an OpenTelemetry Context/);
    expect(() => createInMemoryRun({ tracing: { sampled: true } as never })).toThrow(/tracing.sampled is not a tracing option/);
  });

  it('a failed run has an error status with its code; a run the caller cancelled does not; open spans end with the run', async () => {
    telemetry = installTelemetry();
    await playedRun({}, 'failed').outcome;
    const held = playedRun({}, 'hold');
    await new Promise<void>((resolve) => held.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    await held.cancel();
    await held.outcome;
    const [failed, cancelled] = telemetry.named('invoke_agent');
    expect(failed!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'the model is gone' });
    expect(failed!.attributes).toMatchObject({ 'subvisor.run.status': 'failed', 'subvisor.run.error_code': 'child-error', 'error.type': 'child-error' });
    expect(cancelled!.status.code).toBe(SpanStatusCode.UNSET);
    expect(cancelled!.attributes).toMatchObject({ 'subvisor.run.status': 'cancelled', 'subvisor.run.error_code': 'aborted' });
    const cancelAck = cancelled!.events.find((event) => event.name === 'subvisor.control' && event.attributes?.['subvisor.control.type'] === 'cancel');
    expect(cancelAck?.attributes).toMatchObject({ 'subvisor.control.origin': 'caller', 'subvisor.ack.status': 'accepted' });
    const unfinishedTurns = telemetry.named('turn').filter((span) => span.attributes['subvisor.unfinished'] === true);
    expect(unfinishedTurns).toHaveLength(2);
    expect(unfinishedTurns.every((span) => span.ended)).toBe(true);
  });

  it("marks a turn that ended in error, and records deliveries and the child's errors as span events", async () => {
    telemetry = installTelemetry();
    const { run, child } = createInMemoryRun({ task: 'go', keepAlive: true, killGraceMs: 50 });
    play(child, 'hold');
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    const steer = await run.steer('look at the tests');
    await steer.delivery;
    child.event({ type: 'error', error: 'rate limited' });
    child.turnComplete('error', undefined);
    await run.cancel();
    await run.outcome;
    const [runSpan] = telemetry.named('invoke_agent');
    const names = runSpan!.events.map((event) => event.name);
    expect(runSpan!.events.find((event) => event.name === 'subvisor.control.delivery')?.attributes).toMatchObject({ 'subvisor.control.seq': steer.seq, 'subvisor.control.delivery': 'injected' });
    expect(runSpan!.events.find((event) => event.name === 'subvisor.child.error')?.attributes).toMatchObject({ 'subvisor.child.error': 'rate limited' });
    expect(names).toContain('subvisor.control');
    const [turn] = telemetry.named('turn');
    expect(turn!.status.code).toBe(SpanStatusCode.ERROR);
    expect(turn!.attributes).toMatchObject({ 'error.type': 'turn_error', 'gen_ai.response.finish_reasons': ['error'] });
  });

  it('a span the sampler drops adds no listener to the run', async () => {
    telemetry = installTelemetry({ sampler: new AlwaysOffSampler(), metrics: false });
    const run = playedRun();
    expect(listeners(run)).toEqual([0, 0, 0, 0, 0, 0]);
    await run.outcome;
    expect(telemetry.spans()).toEqual([]);
  });

  it('records runs started and ended by status, duration, time to the first event, time per output chunk and tokens', async () => {
    telemetry = installTelemetry();
    await playedRun().outcome;
    await playedRun({}, 'failed').outcome;
    const recorded = await telemetry.metrics();
    const points = (name: string) => recorded.get(name)?.dataPoints ?? [];
    expect(points('subvisor.runs.started').map((point) => point.value)).toEqual([2]);
    const ended = points('subvisor.runs.ended').map((point) => [point.attributes['subvisor.run.status'], point.value]);
    expect(ended).toEqual(expect.arrayContaining([['done', 1], ['failed', 1]]));
    expect(points('subvisor.run.duration')).toHaveLength(2);
    expect(points('subvisor.run.time_to_first_event')[0]?.value).toMatchObject({ count: 2 });
    // Two chunks of text per run: one gap each.
    expect(points('subvisor.run.time_per_output_chunk')[0]?.value).toMatchObject({ count: 2 });
    const tokens = points('gen_ai.client.token.usage').map((point) => [point.attributes['gen_ai.token.type'], (point.value as { sum: number }).sum]);
    expect(tokens).toEqual(expect.arrayContaining([['input', 120], ['output', 30]]));
  });

  it('the pool starts a queued run under the context spawn() was called in, and a retry beside it', async () => {
    telemetry = installTelemetry();
    const tracer = trace.getTracer('test');
    let attempts = 0;
    const sup = createSupervisor({
      concurrency: 1,
      retry: { attempts: 2 },
      start: (options) => {
        const { command: _command, args: _args, protocol: _protocol, ...rest } = options;
        const { run, child } = createInMemoryRun(rest);
        // The blocker holds the only slot until released; the traced task fails once, then succeeds.
        if (options.task === 'block') child.onControl = ({ ref, control }) => control.type === 'cancel' && (child.ack(ref, 'accepted'), child.exit('cancelled'), child.gone());
        else play(child, attempts++ === 0 ? 'failed' : 'done');
        if (options.task === 'block') child.ready();
        return run;
      },
    });
    const blocker = sup.spawn({ task: 'block' });
    const caller = tracer.startSpan('caller');
    const traced = context.with(trace.setSpan(context.active(), caller), () => sup.spawn({ task: 'traced' }));
    caller.end();
    // The slot frees up from the blocker's own context, outside the caller's.
    setTimeout(() => void blocker.cancel(), 20);
    const final = await traced.finalOutcome;
    await sup.shutdown();
    expect(final.status).toBe('done');
    const callerSpan = telemetry.named('caller')[0]!;
    const underCaller = telemetry.named('invoke_agent').filter((span) => isChildOf(span, callerSpan));
    expect(underCaller.map((span) => span.attributes['subvisor.run.status']).sort()).toEqual(['done', 'failed']);
  });
});
