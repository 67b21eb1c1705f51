// End to end: spawnRun({ protocol: 'fuseraft' | 'fuseraft-bridge' }) against the kit's fake fuseraft, checked by its transcript.
import { afterEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import type { ApprovalRequest, Outcome, Run, RunEvent, RunOptions } from '../../../src/index.js';
import { fakeFuseraft, waitUntilGone } from '../../../src/testing/index.js';
import type { FakeFuseraft } from '../../../src/testing/index.js';

const BOUND_MS = 30_000;
const fakes: FakeFuseraft[] = [];
const runs: Run[] = [];

afterEach(async () => {
  for (const run of runs.splice(0)) await run.kill('test teardown');
  for (const fake of fakes.splice(0)) fake.cleanup();
});

type Mode = 'repl' | 'bridge';

function start(mode: Mode, scenario: string, options: Partial<RunOptions> = {}): { run: Run; fake: FakeFuseraft; events: RunEvent[] } {
  const fake = mode === 'repl' ? fakeFuseraft('repl', scenario as never) : fakeFuseraft('bridge', scenario as never);
  fakes.push(fake);
  const run = spawnRun({
    protocol: mode === 'repl' ? 'fuseraft' : 'fuseraft-bridge',
    ...fake,
    killGraceMs: 2000,
    readyTimeoutMs: BOUND_MS,
    ...options,
  });
  runs.push(run);
  const events: RunEvent[] = [];
  run.on('event', (event) => events.push(event));
  return { run, fake, events };
}

/** The outcome within the bound; then exactly one exit event last, and nothing of the fake left alive. */
async function finish(run: Run, fake: FakeFuseraft, events: RunEvent[]): Promise<Outcome> {
  const outcome = await Promise.race([
    run.outcome,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no outcome within the bound')), BOUND_MS).unref()),
  ]);
  expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
  expect(events.at(-1)?.type).toBe('exit');
  expect(await waitUntilGone(() => fake.livePids(), BOUND_MS)).toEqual([]);
  return outcome;
}

function waitFor(run: Run, events: RunEvent[], match: (event: RunEvent) => boolean): Promise<RunEvent> {
  const seen = events.find(match);
  if (seen !== undefined) return Promise.resolve(seen);
  return new Promise((resolve) => {
    const listener = (event: RunEvent) => {
      if (!match(event)) return;
      run.off('event', listener);
      resolve(event);
    };
    run.on('event', listener);
  });
}

describe("protocol 'fuseraft' against the fake fuseraft", () => {
  it('chat: the answer, usage, tool events; closed when idle', async () => {
    const { run, fake, events } = start('repl', 'chat', { task: 'hello there' });
    const outcome = await finish(run, fake, events);
    expect(outcome).toMatchObject({ status: 'done', exitCode: 0, rejectedLines: 0, turns: 1, killed: false });
    expect(outcome.finalText).toContain('hello there');
    expect(outcome.usage).toBeDefined();
    expect(events.map((event) => event.type)).toEqual(expect.arrayContaining(['ready', 'turn-started', 'assistant-thinking-delta', 'tool-call', 'tool-result', 'turn-complete', 'result']));
    expect(fake.transcript().unexpected).toEqual([]);
  });

  it('approvals: exactly one response per request, in order; the unknown kind denied although approve said true', async () => {
    const asked: ApprovalRequest[] = [];
    const { run, fake, events } = start('repl', 'approvals', {
      task: 'go',
      approve: async (request) => {
        asked.push(request);
        return request.kind !== 'file_write';
      },
    });
    const outcome = await finish(run, fake, events);
    expect(outcome.status).toBe('done');
    expect(asked.map((request) => [request.kind, request.known])).toEqual([
      ['shell_command', true],
      ['tool_action', true],
      ['file_write', true],
      ['network_access', false],
    ]);
    const transcript = fake.transcript();
    expect(transcript.approvals.map((entry) => [entry.request['kind'], entry.approved, entry.how])).toEqual([
      ['shell_command', true, 'response'],
      ['tool_action', true, 'response'],
      ['file_write', false, 'response'],
      ['network_access', false, 'response'],
    ]);
    expect(transcript.unexpected).toEqual([]);
  });

  it('approvals without a callback: every request denied, once', async () => {
    const { run, fake, events } = start('repl', 'approvals', { task: 'go' });
    expect((await finish(run, fake, events)).status).toBe('done');
    const transcript = fake.transcript();
    expect(transcript.approvals.map((entry) => [entry.approved, entry.how])).toEqual(Array(4).fill([false, 'response']));
    expect(transcript.unexpected).toEqual([]);
  });

  it('questions: asked only with answerQuestion, answered once', async () => {
    const { run, fake, events } = start('repl', 'questions', { task: 'go', answerQuestion: (question) => question.options[1] ?? null });
    const outcome = await finish(run, fake, events);
    expect(outcome.finalText).toContain('dev');
    expect(fake.transcript().questions.map((entry) => [entry.answer, entry.how])).toEqual([['dev', 'response']]);
  });

  it('interjections: joined and carried steers are injected; the carried one starts the next turn', async () => {
    const { run, fake, events } = start('repl', 'interjections', { task: 'go', keepAlive: true });
    await waitFor(run, events, (event) => event.type === 'assistant-text-delta');
    const joined = await run.steer('look at the tests too');
    expect(await joined.delivery).toBe('injected');
    await waitFor(run, events, (event) => event.type === 'assistant-text-delta' && String(event.delta).includes('Joined'));
    const carried = await run.steer('and then the docs');
    expect(await carried.delivery).toBe('injected');
    await waitFor(run, events, (event) => event.type === 'turn-complete' && event.turn === 2);
    expect((await run.close()).status).toBe('accepted');
    const outcome = await finish(run, fake, events);
    expect(outcome).toMatchObject({ status: 'done', turns: 2 });
    expect(outcome.finalText).toContain('and then the docs');
    expect(fake.transcript().unexpected).toEqual([]);
  });

  it('cancel interrupts a slow turn: cancelled, exit 0, nothing left', async () => {
    const { run, fake, events } = start('repl', 'slow', { task: 'go' });
    await waitFor(run, events, (event) => event.type === 'turn-started');
    expect((await run.cancel()).status).toBe('accepted');
    const outcome = await finish(run, fake, events);
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted', exitCode: 0, killed: false });
    expect(fake.transcript().inputs.map((entry) => entry.as)).toContain('interrupt');
  });

  it('an error turn: failed with the provider error', async () => {
    const { run, fake, events } = start('repl', 'error-turn', { task: 'go' });
    expect(await finish(run, fake, events)).toMatchObject({ status: 'failed', error: 'Provider error: 503 Service Unavailable', errorCode: 'child-error' });
  });

  it('big output: tool output at the cap is marked truncated; the line exceeds 64 KiB and is read whole', async () => {
    const { run, fake, events } = start('repl', 'big-output', { task: 'go' });
    expect((await finish(run, fake, events)).status).toBe('done');
    const result = events.find((event) => event.type === 'tool-result');
    expect(result).toMatchObject({ transportTruncated: true });
    expect(String(result?.type === 'tool-result' ? result.result : '').length).toBe(100_000);
  });

  it('retrying is surfaced as info', async () => {
    const { run, fake, events } = start('repl', 'retrying', { task: 'go' });
    expect((await finish(run, fake, events)).status).toBe('done');
    expect(events.some((event) => event.type === 'info' && event['nativeType'] === 'retrying')).toBe(true);
  });

  it('wrong protocol version: failed, version-mismatch', async () => {
    const { run, fake, events } = start('repl', 'wrong-version', { task: 'go' });
    expect(await finish(run, fake, events)).toMatchObject({ status: 'failed', errorCode: 'version-mismatch' });
  });

  it('noise: non-JSON lines are counted rejections, unknown events pass through, the run is done', async () => {
    const { run, fake, events } = start('repl', 'noise', { task: 'go' });
    const outcome = await finish(run, fake, events);
    expect(outcome.status).toBe('done');
    expect(outcome.rejectedLines).toBeGreaterThanOrEqual(2);
    expect(events.filter((event) => event.type === 'rejected').every((event) => event.type === 'rejected' && !event.fatal)).toBe(true);
    expect(events.some((event) => event.type === 'info' && typeof event['nativeType'] === 'string' && !['retrying', 'session_end'].includes(event['nativeType']))).toBe(true);
  });

  it('crash mid-turn: failed, no-exit-event', async () => {
    const { run, fake, events } = start('repl', 'crash', { task: 'go' });
    expect(await finish(run, fake, events)).toMatchObject({ status: 'failed', errorCode: 'no-exit-event', exitCode: 3 });
  });

  it('stubborn with grandchildren: cancel ends in SIGKILL and the whole tree is gone', async () => {
    const { run, fake, events } = start('repl', 'stubborn', { task: 'go', killGraceMs: 500 });
    await waitFor(run, events, (event) => event.type === 'assistant-text-delta');
    await new Promise((resolve) => setTimeout(resolve, 300));
    void run.cancel();
    const outcome = await finish(run, fake, events);
    expect(outcome).toMatchObject({ status: 'cancelled', killed: true, escalated: true });
  });

  it('keepAlive: a multi-turn chat through prompts, then close', async () => {
    const { run, fake, events } = start('repl', 'echo', { task: 'one', keepAlive: true });
    await waitFor(run, events, (event) => event.type === 'turn-complete' && event.turn === 1);
    await waitFor(run, events, () => run.state === 'ready');
    expect((await run.prompt('two')).status).toBe('accepted');
    await waitFor(run, events, (event) => event.type === 'turn-complete' && event.turn === 2);
    expect((await run.close()).status).toBe('accepted');
    const outcome = await finish(run, fake, events);
    expect(outcome).toMatchObject({ status: 'done', turns: 2 });
    expect(outcome.finalText).toContain('two');
  });
});

describe("protocol 'fuseraft-bridge' against the fake fuseraft", () => {
  it('success: done, the last non-Orchestrator message is the answer, the task is the last argument', async () => {
    const { run, fake, events } = start('bridge', 'success', { task: 'fix the bug', approve: (request) => request.kind === 'shell_command' });
    const outcome = await finish(run, fake, events);
    expect(outcome).toMatchObject({ status: 'done', exitCode: 0 });
    expect(outcome.finalText).toContain('fix the bug');
    const transcript = fake.transcript();
    expect(transcript.argv.at(-1)).toBe('fix the bug');
    expect(transcript.approvals.map((entry) => [entry.approved, entry.how])).toEqual([[true, 'response']]);
  });

  it('failure: failed with fuseraft\'s error message', async () => {
    const { run, fake, events } = start('bridge', 'failure', { task: 'x' });
    expect(await finish(run, fake, events)).toMatchObject({ status: 'failed', error: 'Max turns reached without a terminating keyword.', exitCode: 1 });
  });

  it('approvals: route approval approved, the unknown kind denied on true', async () => {
    const { run, fake, events } = start('bridge', 'approvals', { task: 'x', approve: () => true });
    expect((await finish(run, fake, events)).status).toBe('done');
    expect(fake.transcript().approvals.map((entry) => [entry.request['kind'], entry.approved])).toEqual([
      ['route_approval', true],
      ['budget_increase', false],
    ]);
  });

  it('cancel: interrupt, result succeeded false, outcome cancelled', async () => {
    const { run, fake, events } = start('bridge', 'slow', { task: 'x' });
    await waitFor(run, events, (event) => event.type === 'ready');
    expect(await run.prompt('more')).toMatchObject({ status: 'rejected' });
    expect((await run.cancel()).status).toBe('accepted');
    expect(await finish(run, fake, events)).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
  });

  it('crash, wrong version and stubborn end failed/failed/cancelled with nothing left behind', async () => {
    const crash = start('bridge', 'crash', { task: 'x' });
    expect(await finish(crash.run, crash.fake, crash.events)).toMatchObject({ status: 'failed', errorCode: 'no-exit-event' });
    const wrong = start('bridge', 'wrong-version', { task: 'x' });
    expect(await finish(wrong.run, wrong.fake, wrong.events)).toMatchObject({ status: 'failed', errorCode: 'version-mismatch' });
    const stubborn = start('bridge', 'stubborn', { task: 'x', killGraceMs: 500 });
    await waitFor(stubborn.run, stubborn.events, (event) => event.type === 'ready');
    await new Promise((resolve) => setTimeout(resolve, 300));
    void stubborn.run.cancel();
    expect(await finish(stubborn.run, stubborn.fake, stubborn.events)).toMatchObject({ status: 'cancelled', killed: true, escalated: true });
  });
});
