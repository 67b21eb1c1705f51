// spawnRun({ protocol: 'hep' }) end to end against the fake fa: every scenario's events, outcome, and nothing left behind.
import { afterEach, describe, expect, it } from 'vitest';
import { ControlRefusedError, spawnRun } from '../../../../src/index.js';
import type { Ack, Outcome, Run, RunEvent, RunOptions } from '../../../../src/index.js';
import { fakeFa } from '../../../../src/testing/index.js';
import type { FakeFa, FaScenario, FaBuiltinScenarioName } from '../../../../src/testing/index.js';
import { toUsage } from '../../../../src/wire/index.js';
import type { JsonObject } from '../../../../src/wire/index.js';

const fakes: FakeFa[] = [];
afterEach(() => {
  for (const fake of fakes.splice(0)) {
    expect(fake.livePids(), 'processes of the fake fa left behind').toEqual([]);
    fake.cleanup();
  }
});

interface Finished {
  fake: FakeFa;
  run: Run;
  events: RunEvent[];
  states: string[];
  outcome: Outcome;
}

function startHep(scenario: FaScenario | FaBuiltinScenarioName, options: Partial<RunOptions> = {}) {
  const fake = fakeFa(scenario);
  fakes.push(fake);
  const run = spawnRun({ protocol: 'hep', ...fake, task: 'fix the tests', killGraceMs: 500, ...options });
  const states: string[] = [];
  run.on('state', (state) => states.push(state));
  const events: RunEvent[] = [];
  const collected = (async () => {
    for await (const event of run) events.push(event);
  })();
  const finished = async (): Promise<Finished> => {
    const outcome = await run.outcome;
    await collected;
    return { fake, run, events, states, outcome };
  };
  return { fake, run, events, states, finished };
}

async function runHep(scenario: FaScenario | FaBuiltinScenarioName, options: Partial<RunOptions> = {}): Promise<Finished> {
  return startHep(scenario, options).finished();
}

function ofType<T extends RunEvent['type']>(events: RunEvent[], type: T): Extract<RunEvent, { type: T }>[] {
  return events.filter((event): event is Extract<RunEvent, { type: T }> => event.type === type);
}

/** Resolves once the run yields an event of `type`. */
function until(run: Run, type: RunEvent['type']): Promise<void> {
  return new Promise((resolve) => {
    const listener = (event: RunEvent) => {
      if (event.type !== type) return;
      run.off('event', listener);
      resolve();
    };
    run.on('event', listener);
  });
}

function expectOneExitLast(events: RunEvent[]): void {
  expect(ofType(events, 'exit')).toHaveLength(1);
  expect(events.at(-1)?.type).toBe('exit');
}

describe("spawnRun({ protocol: 'hep' })", () => {
  it('multi-round with tools: the last round is the answer, usage is summed, bounded tool output is marked', async () => {
    const { fake, events, states, outcome, run } = await runHep('tools');
    const frames = fake.transcript().frames;
    const done = frames.filter((frame) => frame['type'] === 'turn_done');
    expect(done).toHaveLength(3);
    expect(outcome).toMatchObject({ status: 'done', exitCode: 0, turns: 3, truncated: false, rejectedLines: 0 });
    expect(outcome.errorCode).toBeUndefined();
    expect(outcome.finalText).toBe(done.at(-1)!['message']);
    const sum = (key: string) => done.reduce((total, frame) => total + ((frame['usage'] as JsonObject)[key] as number), 0);
    // Cost sums are rounded to 15 significant digits (api.md#usage): no floating point noise.
    expect(outcome.usage).toEqual({ inputTokens: sum('input'), outputTokens: sum('output'), costUsd: Number(sum('cost').toPrecision(15)) });
    expect(outcome.stopReason).toBe('stop');
    expect(states).toEqual(['ready', 'running', 'done']);
    expect((await run.taskAck)?.status).toBe('accepted');
    // The transcript's argv: the caller's args, then `-p <task>` appended by the driver.
    expect(fake.transcript().argv.slice(-2)).toEqual(['-p', 'fix the tests']);
    expect(fake.transcript().task).toBe('fix the tests');

    expect(events[0]).toMatchObject({ type: 'ready', protocol: 'hep', extra: { hep: 'v1' }, seq: 1 });
    expect(ofType(events, 'turn-started').map((event) => event.turn)).toEqual([1, 2, 3]);
    expect(ofType(events, 'turn-complete').map((event) => event.stopReason)).toEqual(['toolUse', 'toolUse', 'stop']);
    const calls = ofType(events, 'tool-call');
    const results = ofType(events, 'tool-result');
    expect(calls.map((event) => event.name)).toEqual(['read_file', 'grep', 'bash', 'read_file']);
    expect(results.map((event) => [event.name, event.isError])).toEqual([
      ['read_file', false],
      ['grep', false],
      ['bash', false],
      ['read_file', true],
    ]);
    const bash = results.find((event) => event.name === 'bash')!;
    expect(bash.result).toMatch(/…\(\+\d+ chars\)$/u);
    expect(bash.transportTruncated).toBe(true);
    expect(results.filter((event) => event.transportTruncated === true)).toHaveLength(1);
    expect(ofType(events, 'assistant-text-delta').length).toBeGreaterThan(3);
    expect(ofType(events, 'info').map((event) => event['hepType'])).toEqual(['tool_delta', 'tool_delta', 'tool_liveness']);
    const result = ofType(events, 'result');
    expect(result).toHaveLength(1);
    expect(result[0]).toMatchObject({ finalText: outcome.finalText, usage: outcome.usage });
    expectOneExitLast(events);
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'done', exitCode: 0 });
    // stderr (tool traces) is the output tail; stdout frames are not.
    expect(outcome.outputTail).toContain('read_file');
    expect(outcome.outputTail).not.toContain('hep_header');
  });

  it('reads a ~400 KB turn_done as one frame (past Fen 64 KiB line limit), as a stream', async () => {
    const { fake, outcome } = await runHep('long-answer');
    const last = fake.transcript().frames.filter((frame) => frame['type'] === 'turn_done').at(-1)!;
    expect(Buffer.byteLength(JSON.stringify(last))).toBeGreaterThan(300 * 1024);
    expect(outcome).toMatchObject({ status: 'done', truncated: false });
    expect(outcome.finalText).toBe(last['message']);
  });

  it('a frame longer than maxFrameBytes is rejected and skipped; the answer is then marked truncated', async () => {
    const { events, outcome } = await runHep('long-answer', { maxFrameBytes: 64 * 1024 });
    const rejected = ofType(events, 'rejected');
    expect(rejected.map((event) => event.code)).toEqual(['too-large']);
    expect(rejected[0]!.reason).toContain('maxFrameBytes');
    expect(outcome).toMatchObject({ status: 'done', truncated: true, rejectedLines: 1 });
    expect(outcome.truncationNote).toBeDefined();
    expectOneExitLast(events);
  });

  it('provider error: failed with the turn_error text, exit 1, usage of the rounds that finished', async () => {
    const { fake, events, outcome } = await runHep('provider-error');
    const error = fake.transcript().frames.find((frame) => frame['type'] === 'turn_error')!['error'];
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'child-error', error, exitCode: 1, turns: 2 });
    expect(outcome.usage).toEqual(toUsage(fake.transcript().frames.find((frame) => frame['type'] === 'turn_done')!['usage'] as JsonObject));
    expect(ofType(events, 'error')).toEqual([expect.objectContaining({ error, source: 'provider' })]);
    expect(ofType(events, 'turn-complete').at(-1)?.stopReason).toBe('error');
    expect(ofType(events, 'result')).toHaveLength(0);
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'failed', exitCode: 1 });
    expectOneExitLast(events);
  });

  it('cancel(): SIGINT, the cancelled frame, exit 130, outcome cancelled; no ladder needed', async () => {
    const { run, fake, finished } = startHep('slow');
    await until(run, 'turn-started');
    const ack = await run.cancel();
    expect(ack.status).toBe('accepted');
    const { outcome, events } = await finished();
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted', exitCode: 130, killed: false });
    expect(fake.transcript().signals.map((signal) => signal.signal)).toEqual(['SIGINT']);
    expect(ofType(events, 'turn-complete').at(-1)?.stopReason).toBe('aborted');
    expectOneExitLast(events);
    await expect(run.cancel()).resolves.toMatchObject({ status: 'unanswered', seq: 0, runEnded: true });
    await expect(run.prompt('late')).rejects.toBeInstanceOf(ControlRefusedError);
  });

  it('steer, followUp, finalize, prompt and close resolve rejected with the reason; no signal is sent', async () => {
    const { run, fake, finished } = startHep('slow');
    await until(run, 'turn-started');
    const acks: Ack[] = await Promise.all([run.steer('left'), run.followUp('then'), run.finalize(), run.prompt('more'), run.close()]);
    for (const ack of acks) expect(ack.status).toBe('rejected');
    expect(acks[0]!.reason).toContain('cannot be steered');
    expect(acks[2]!.reason).toContain('no finalize');
    expect(acks[0]!.delivery).toBeUndefined();
    expect(run.state).toBe('running');
    expect(fake.transcript().signals).toEqual([]);
    await run.terminate('done testing');
    const { outcome } = await finished();
    expect(outcome.status).toBe('cancelled');
  });

  it('garbage and unknown frames: non-JSON and non-object lines are rejected, unknown types passed through raw, unknown fields kept', async () => {
    const { events, outcome } = await runHep('garbage');
    expect(ofType(events, 'rejected').map((event) => [event.code, event.fatal])).toEqual([
      ['malformed', false],
      ['invalid', false],
    ]);
    const passthrough = ofType(events, 'passthrough');
    expect(passthrough).toHaveLength(1);
    expect(passthrough[0]).toMatchObject({ protocol: 'hep', frame: { type: 'mystery_frame' } });
    const withExtras = ofType(events, 'assistant-text-delta').find((event) => event.delta === 'With extra fields. ')!;
    expect(withExtras.extra).toEqual({ xFutureField: { nested: true }, xScore: 0.5 });
    expect(outcome).toMatchObject({ status: 'done', rejectedLines: 2 });
    expect(outcome.finalText).toContain('Answered despite garbage');
  });

  it('a wrong major version is fatal: failed version-mismatch, one synthetic exit, the child stopped', async () => {
    const { events, outcome } = await runHep('wrong-version');
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'version-mismatch' });
    expect(outcome.error).toContain('"v2"');
    expect(ofType(events, 'rejected')).toEqual([expect.objectContaining({ code: 'version-mismatch', fatal: true, seq: 1 })]);
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'failed', synthetic: true });
    expectOneExitLast(events);
  });

  it('prose instead of frames (no --output events): failed protocol-error saying so', async () => {
    const { events, outcome } = await runHep('no-header');
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'protocol-error' });
    expect(outcome.error).toContain('--output events');
    expect(ofType(events, 'ready')).toHaveLength(0);
    expectOneExitLast(events);
  });

  it('killed mid-frame: the torn line is rejected, the run fails no-exit-event', async () => {
    const { events, outcome } = await runHep('killed-mid-frame');
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'no-exit-event', signal: 'SIGKILL' });
    expect(ofType(events, 'rejected').map((event) => event.reason)).toEqual([expect.stringContaining('ended inside a frame')]);
    expectOneExitLast(events);
  });

  it('usage error: exit 64 is failed usage-error, stderr in the output tail', async () => {
    const { outcome, events } = await runHep('usage-error');
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'usage-error', exitCode: 64 });
    expect(outcome.outputTail).toContain('--frobnicate');
    expectOneExitLast(events);
  });

  it('a crash in the middle of a round: failed no-exit-event naming the code, as a Fen child with no exit event', async () => {
    const { outcome } = await runHep('crash');
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'no-exit-event', exitCode: 3 });
    expect(outcome.error).toContain('code 3 in the middle of a round');
  });

  it('exit 1 without the turn_error of a provider error is a crash, not a provider error', async () => {
    const { outcome } = await runHep({ rounds: [{ steps: [{ text: 'Starting. ' }, { crash: { code: 1 } }] }] });
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'no-exit-event', exitCode: 1 });
  });

  it('timeoutMs: the child obeys the cancel (exit 130), and the run ends timed-out, not cancelled', async () => {
    const { outcome, events } = await runHep({ rounds: [{ steps: [{ pause: 60_000 }] }] }, { timeoutMs: 500 });
    expect(outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline', exitCode: 130 });
    // The stream's exit is the run's verdict; what the child said stays beside it.
    expectOneExitLast(events);
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'timed-out', childStatus: 'cancelled', exitCode: 130, error: outcome.error });
  });

  it('a compaction bracket becomes info events and the run answers', async () => {
    const { events, outcome } = await runHep('compaction');
    expect(ofType(events, 'info').map((event) => event['hepType'])).toEqual(['compaction_start', 'compaction_end']);
    expect(outcome.status).toBe('done');
  });

  it('stubborn with grandchildren: cancel, then the ladder kills the whole tree; nothing is left behind', async () => {
    const { run, fake, finished } = startHep('stubborn', { killGraceMs: 300 });
    await until(run, 'turn-started');
    // The grandchildren are spawned after the first text; wait until the transcript names both.
    for (let i = 0; i < 200 && fake.transcript().grandchildren.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(fake.transcript().grandchildren).toHaveLength(2);
    await run.cancel();
    const { outcome, events } = await finished();
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted', killed: true, escalated: true });
    expect(fake.livePids()).toEqual([]);
    expectOneExitLast(events);
  });

  it('throws synchronously without a task, and for an unknown protocol', () => {
    using fake = fakeFa('echo');
    expect(() => spawnRun({ protocol: 'hep', ...fake })).toThrow(TypeError);
    expect(() => spawnRun({ protocol: 'hep', ...fake, task: '' })).toThrow(/task/);
    expect(() => spawnRun({ protocol: 'nope' as 'hep', ...fake, task: 'x' })).toThrow(/options.protocol must be one of 'fen', 'hep'/);
  });
});
