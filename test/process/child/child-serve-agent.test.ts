// serveAgent: Agent Handler agents as Fen wire children, under a scripted parent, spawnRun, asAgent and the supervise CLI.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { asAgent, collect, isKnownAgentEvent } from '../../../src/agent/index.js';
import type { AgentEvent, AgentOptions, SupervisedAgent } from '../../../src/agent/index.js';
import { spawnRun } from '../../../src/index.js';
import type { Outcome, Run, RunEvent } from '../../../src/index.js';
import { runCli } from '../../helpers/cli-run.js';
import { checkInvariants, ScriptedParent } from '../../helpers/scripted-parent.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const CHILD = join(root, 'test', 'helpers', 'agent-child.mjs');
const TOY = join(root, 'examples', 'children', 'toy-agent.mjs');

const runs: Run[] = [];
const agents: SupervisedAgent[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close();
  for (const run of runs.splice(0)) await run.terminate('test cleanup');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function childSpec(behaviour: string, env: Record<string, string> = {}) {
  return { command: process.execPath, args: [CHILD], env: { AGENT_CHILD_BEHAVIOUR: behaviour, ...env } };
}

function markerPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'serve-agent-test-'));
  dirs.push(dir);
  return join(dir, 'released');
}

function start(behaviour: string, options: { task?: string; env?: Record<string, string>; keepAlive?: boolean; timeoutMs?: number } = {}) {
  const spec = childSpec(behaviour, options.env);
  const events: RunEvent[] = [];
  const run = spawnRun({ ...spec, task: options.task ?? 'hi', killGraceMs: 500, keepAlive: options.keepAlive ?? false, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) });
  run.on('event', (event) => events.push(event));
  runs.push(run);
  return { run, events };
}

function agentOver(behaviour: string, extra: Partial<AgentOptions> = {}): SupervisedAgent {
  const agent = asAgent({ ...childSpec(behaviour), killGraceMs: 500, ...extra } as AgentOptions);
  agents.push(agent);
  return agent;
}

async function drain(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const seen: AgentEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

const types = (events: RunEvent[]) => events.map((event) => event.type);

describe('serveAgent under spawnRun', () => {
  it('acks the prompt before its turn, streams the agent as Fen events, ends with result and exit done (code 0)', async () => {
    const { run, events } = start('echo');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', exitCode: 0, finalText: 'You said: hi', turns: 1 });
    expect(types(events)).toEqual([
      'ready',
      'control-ack',
      'turn-started',
      'user',
      'assistant-thinking-delta',
      'assistant-text-delta',
      'assistant-text-delta',
      'assistant-stream-end',
      'turn-complete',
      'control-ack',
      'result',
      'exit',
    ]);
    expect(events[1]).toMatchObject({ status: 'accepted', ref: 1 });
    expect(events.find((event) => event.type === 'result')).toMatchObject({ finalText: 'You said: hi', extra: { data: { length: 2 } } });
  });

  it('a long answer goes whole to a 0600 final-text-path file, cut on the line', async () => {
    const { run, events } = start('huge');
    let mode: number | undefined;
    run.on('event', (event) => {
      if (event.type === 'result' && typeof event.finalTextPath === 'string') mode = statSync(event.finalTextPath).mode & 0o777;
    });
    const outcome = await run.outcome;
    const result = events.find((event) => event.type === 'result') as Extract<RunEvent, { type: 'result' }>;
    expect(result.truncated).toBe(true);
    expect(mode).toBe(0o600);
    expect(outcome.finalText).toBe('aé€😀'.repeat(20_000));
    expect(existsSync(result.finalTextPath!)).toBe(false); // the parent took it
    // Deltas longer than a transport bound are split, never cut.
    const streamed = events.filter((event) => event.type === 'assistant-text-delta').map((event) => event.delta).join('');
    expect(streamed).toBe('aé€😀'.repeat(20_000));
  });

  it("an agent's failure ends the run failed (code 1) with its details, code and retryable on exit", async () => {
    const { run, events } = start('fail');
    expect(await run.outcome).toMatchObject({ status: 'failed', exitCode: 1, error: 'provider overloaded' });
    expect(events.find((event) => event.type === 'error')).toMatchObject({ error: 'provider overloaded', source: 'agent', extra: { code: 'overloaded', retryable: true } });
    expect(events.find((event) => event.type === 'turn-complete')).toMatchObject({ stopReason: 'error' });
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'failed', extra: { code: 'overloaded', retryable: true } });
  });

  it('a malformed failed event fails the run saying what was wrong and with the fields the agent gave', async () => {
    const { run } = start('malformed-failed');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'failed', exitCode: 1 });
    expect(outcome.error).toBe(
      'the agent yielded a malformed failed event: details is missing (a string is required); ' +
        'it had {"type":"failed","error":"asked to fail","retryable":false}',
    );
    const events = await drain(agentOver('malformed-failed').invoke({ session: 's' }, { text: 'x' }));
    expect(events.at(-1)).toEqual({ type: 'failed', details: outcome.error, retryable: false, code: 'malformed_event' });
  });

  it('cancel stops the turn through return() (the agent is released), exit cancelled, code 1', async () => {
    const marker = markerPath();
    const { run, events } = start('slow', { env: { AGENT_CHILD_MARKER: marker } });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    expect((await run.cancel()).status).toBe('accepted');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', exitCode: 1, killed: false });
    expect(readFileSync(marker, 'utf8')).toBe('released');
    expect(events.find((event) => event.type === 'turn-complete')).toMatchObject({ stopReason: 'aborted' });
  });

  it('honours the deadline: the turn is stopped and the child exits timed-out on its own', async () => {
    const marker = markerPath();
    const { run } = start('slow', { env: { AGENT_CHILD_MARKER: marker }, timeoutMs: 1500 });
    const outcome: Outcome = await run.outcome;
    expect(outcome.status).toBe('timed-out');
    expect(readFileSync(marker, 'utf8')).toBe('released');
  });

  it('an agent stuck in a pending next() still lets the child exit after the return grace', async () => {
    const { run, events } = start('stuck', { env: { AGENT_CHILD_RETURN_GRACE_MS: '200' } });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    await run.cancel();
    expect(await run.outcome).toMatchObject({ status: 'cancelled', killed: false });
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'cancelled' });
  });

  it('SIGTERM ends the run cancelled after releasing the agent', async () => {
    const marker = markerPath();
    const { run } = start('slow', { env: { AGENT_CHILD_MARKER: marker } });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    process.kill(run.pid!, 'SIGTERM');
    expect(await run.outcome).toMatchObject({ status: 'cancelled', exitCode: 1 });
    expect(readFileSync(marker, 'utf8')).toBe('released');
  });

  it('rejects a steer while a turn runs when the agent has no dispatch; a queued follow-up is dropped by cancel', async () => {
    const { run, events } = start('slow', { env: { AGENT_CHILD_MARKER: markerPath() }, keepAlive: true });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    const steer = await run.steer('go left');
    expect(steer).toMatchObject({ status: 'rejected', reason: expect.stringMatching(/dispatch/) });
    const followUp = await run.followUp('then this');
    expect(followUp.status).toBe('accepted');
    await run.cancel(); // drops the queued follow-up
    expect(await followUp.delivery).toBe('dropped');
    expect(await run.outcome).toMatchObject({ status: 'cancelled' });
    expect(events.some((event) => event.type === 'info' && event.refs?.includes(followUp.seq))).toBe(true);
  });

  it('without dispatch, a follow-up queued during a turn runs as the next turn, reported injected', async () => {
    const { run, events } = start('paced', { keepAlive: true });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    const secondCompleted = new Promise<void>((resolve) => run.on('event', (event) => event.type === 'turn-complete' && event.turn === 2 && resolve()));
    const followUp = await run.followUp('and then this');
    expect(followUp.status).toBe('accepted');
    expect(await followUp.delivery).toBe('injected');
    await secondCompleted;
    await run.close();
    expect(await run.outcome).toMatchObject({ status: 'done', turns: 2, finalText: 'turn for and then this' });
    expect(events.find((event) => event.type === 'follow-up-injected')).toMatchObject({ ref: followUp.seq, text: 'and then this' });
  });

  it('with dispatch, a steer reaches the running turn and is reported injected', async () => {
    const { run, events } = start('steerable', { keepAlive: true });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    // Listen first: the turn may complete in the same read as the injection.
    const completed = new Promise<void>((resolve) => run.on('event', (event) => event.type === 'turn-complete' && resolve()));
    const steer = await run.steer('go left');
    expect(steer.status).toBe('accepted');
    expect(await steer.delivery).toBe('injected');
    await completed;
    await run.close();
    const outcome = await run.outcome;
    expect(outcome.finalText).toBe('working on hi. steered: steer:go left');
    expect(events.filter((event) => event.type === 'steering-injected')).toHaveLength(1);
  });

  it('structured data too large for one line fails the run rather than losing it', async () => {
    const { run, events } = start('big-data');
    expect(await run.outcome).toMatchObject({ status: 'failed', error: expect.stringMatching(/does not fit one wire line/) });
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'failed', extra: { code: 'data_too_large', retryable: false } });
  });
});

describe('serveAgent on the wire (scripted parent)', () => {
  it('answers invalid control lines with exactly one rejection ack each and keeps the run invariants', async () => {
    const parent = new ScriptedParent(childSpec('echo'), { task: 'hi' });
    try {
      parent.appendRaw('not json\n');
      parent.appendRaw(`${JSON.stringify({ v: 1, seq: 10, type: 'prompt', run: 'another-run', text: 'x' })}\n`);
      parent.appendRaw(`${JSON.stringify({ v: 1, seq: 11, type: 'close', run: parent.runId })}\n`);
      const exit = await parent.waitExit();
      const acks = parent.events().filter((event) => event.type === 'control-ack');
      expect(acks.map((ack) => [ack.status, ack.ref])).toEqual([['accepted', 1], ['rejected', undefined], ['rejected', 10], ['accepted', 11]]);
      expect(checkInvariants(parent, exit.code)).toEqual([]);
    } finally {
      await parent.dispose();
    }
  });

  it('a version mismatch gets no ack: exit failed, code 1', async () => {
    const parent = new ScriptedParent(childSpec('slow', { AGENT_CHILD_MARKER: markerPath() }));
    try {
      parent.appendRaw(`${JSON.stringify({ v: 2, seq: 1, type: 'prompt', run: parent.runId, text: 'x' })}\n`);
      const exit = await parent.waitExit();
      expect(exit.code).toBe(1);
      expect(parent.events().filter((event) => event.type === 'control-ack')).toEqual([]);
      expect(parent.events().at(-1)).toMatchObject({ type: 'exit', status: 'failed' });
    } finally {
      await parent.dispose();
    }
  });
});

describe('asAgent over serveAgent children', () => {
  it('hands scope.session to the child; collect() gets text and data', async () => {
    expect(await collect(agentOver('session').invoke({ session: 'conversation-7' }, { text: 'x' }))).toEqual({ text: 'conversation-7' });
    expect(await collect(agentOver('echo').invoke({ session: 's' }, { text: 'abc' }))).toEqual({ text: 'You said: abc', data: { length: 3 } });
  });

  it("the agent's own failure classification reaches the caller", async () => {
    const events = await drain(agentOver('fail').invoke({ session: 's' }, { text: 'x' }));
    expect(events.at(-1)).toEqual({ type: 'failed', details: 'provider overloaded', retryable: true, code: 'overloaded' });
    const thrown = await drain(agentOver('throws').invoke({ session: 's' }, { text: 'x' }));
    expect(thrown.at(-1)).toMatchObject({ type: 'failed', code: 'agent_threw', retryable: false });
    const endless = await drain(agentOver('no-terminal').invoke({ session: 's' }, { text: 'x' }));
    expect(endless.at(-1)).toMatchObject({ type: 'failed', code: 'no_terminal', retryable: false });
  });

  it('retrying and unknown non-terminal events survive both hops unchanged', async () => {
    const events = await drain(agentOver('extras', { runEvents: false }).invoke({ session: 's' }, { text: 'x' }));
    expect(events).toEqual([
      { type: 'retrying', attempt: 1, maxAttempts: 3, delayMs: 10, reason: 'rate limited' },
      { type: 'citation', url: 'https://example.com/a', spans: [{ start: 0, end: 4 }], note: null },
      { type: 'text', delta: 'cited' },
      { type: 'completed' },
    ]);
  });

  it('keep-alive: turns share one child, each with its data; a failed turn leaves the session usable', async () => {
    const agent = agentOver('echo', { sessions: 'keep-alive' });
    let readies = 0;
    for (const text of ['one', 'three']) {
      const events = await drain(agent.invoke({ session: 's' }, { text }));
      expect(events.at(-1)).toEqual({ type: 'completed', data: { length: text.length } });
      readies += events.filter((event) => isKnownAgentEvent(event) && event.type === 'run_event' && event.event.type === 'ready').length;
    }
    expect(readies).toBe(1); // one child, started once, served both turns

    const failing = agentOver('fail', { sessions: 'keep-alive' });
    for (let turn = 0; turn < 2; turn++) {
      const events = await drain(failing.invoke({ session: 's' }, { text: 'x' }));
      expect(events.at(-1)).toEqual({ type: 'failed', details: 'provider overloaded', retryable: true, code: 'overloaded' });
    }
  });

  it('dispatch steers the run serving the session and resolves to its ack', async () => {
    const agent = agentOver('steerable');
    const events: AgentEvent[] = [];
    for await (const event of agent.invoke({ session: 's' }, { text: 'task' })) {
      events.push(event);
      if (event.type === 'text' && (event as { delta: string }).delta === 'working on task. ') {
        const ack = await agent.dispatch('s', { type: 'steer', text: 'faster' });
        expect(ack).toMatchObject({ status: 'accepted', seq: expect.any(Number) });
        expect(await ack.delivery).toBe('injected');
      }
    }
    const text = events.filter((event) => event.type === 'text').map((event) => (event as { delta: string }).delta).join('');
    expect(text).toBe('working on task. steered: steer:faster');
  });
});

describe('serveAgent under supervise', () => {
  it('the ten-line example is a child supervise drives: its answer on stdout, exit 0', async () => {
    const result = await runCli(['--task', 'count these words', '--quiet', '--', process.execPath, TOY]);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toMatch(/: 3 words\.$/);
  });

  it("an agent's failure is supervise's failure", async () => {
    const result = await runCli(['--task', 'x', '--quiet', '--', process.execPath, CHILD], { env: { AGENT_CHILD_BEHAVIOUR: 'fail' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/provider overloaded/);
  });
});
