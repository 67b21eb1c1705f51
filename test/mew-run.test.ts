// Runs over the mew driver and the run core, against the fake daemon in-process: outcomes, controls, faults, nothing left open.
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../src/run/types/index.js';
import { inProcessMewRun } from './helpers/mew-in-process.js';

async function collect(run: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of run) events.push(event);
  return events;
}

describe('mew runs (in-process daemon)', () => {
  it('a task ends done with the answer of the last turn, usage summed, and the connection closed', async () => {
    const { run, daemon, openConnections } = inProcessMewRun({ turns: [{ steps: [{ tool: 'read_file' }, { text: 'All good.' }], usage: { input_tokens: 10, output_tokens: 3 }, cost: 0.5 }] }, { task: 'check' });
    const [events, outcome] = await Promise.all([collect(run), run.outcome]);
    expect(outcome).toMatchObject({ status: 'done', finalText: 'All good.', turns: 1, usage: { input_tokens: 10, output_tokens: 3, cost: 0.5 }, exitCode: null });
    expect(outcome.errorCode).toBeUndefined();
    expect(await run.taskAck).toMatchObject({ status: 'accepted' });
    expect(events.map((event) => event.type)).toEqual(expect.arrayContaining(['ready', 'turn-started', 'tool-call', 'tool-result', 'assistant-text-delta', 'turn-complete', 'result', 'exit']));
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'done' });
    expect(openConnections()).toBe(0);
    expect(daemon!.received.map((entry) => entry.message['type'])).toContain('submit_prompt');
  });

  it('keepAlive: prompts one after another; steer mid-turn gets a rejected Ack; follow-up is delivered as the next turn', async () => {
    const { run } = inProcessMewRun({ turns: [{ steps: [{ text: 'one' }, { pause: 100 }] }, { steps: [{ text: 'two' }] }] }, { task: 'first', keepAlive: true });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'turn-started' && resolve()));
    const steer = await run.steer('faster');
    expect(steer.status).toBe('rejected');
    expect(steer.reason).toMatch(/mew has no mid-turn steering/);
    const follow = await run.followUp('then this');
    expect(follow.status).toBe('accepted');
    expect(await follow.delivery).toBe('injected');
    await new Promise<void>((resolve) => run.on('state', (state) => state === 'ready' && resolve()));
    await run.close();
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'two', turns: 2 });
  });

  it('cancel() mid-turn: the daemon gets cancel, the run ends cancelled (aborted)', async () => {
    const { run, daemon, openConnections } = inProcessMewRun({ turns: [{ steps: [{ text: 'working' }, { pause: 10_000 }] }] }, { task: 'long' });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    expect((await run.cancel()).status).toBe('accepted');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(daemon!.received.map((entry) => entry.message['type'])).toContain('cancel');
    expect(openConnections()).toBe(0);
  });

  it('terminate(), the signal and timeoutMs end a run mid-turn promptly', async () => {
    const slow = { turns: [{ steps: [{ text: 'x' }, { pause: 10_000 }] }] };
    const a = inProcessMewRun(slow, { task: 't', killGraceMs: 200 });
    await new Promise<void>((resolve) => a.run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    expect(await a.run.terminate()).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    const controller = new AbortController();
    const b = inProcessMewRun(slow, { task: 't', signal: controller.signal, killGraceMs: 200 });
    setTimeout(() => controller.abort(), 50);
    expect(await b.run.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    const c = inProcessMewRun(slow, { task: 't', timeoutMs: 300, killGraceMs: 200 });
    const started = Date.now();
    expect(await c.run.outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline' });
    expect(Date.now() - started).toBeLessThan(5000);
    for (const { openConnections } of [a, b, c]) expect(openConnections()).toBe(0);
  });

  it('faults: refused, dropped mid-turn, no pong, old protocol: typed errorCodes, nothing left open', async () => {
    const refused = inProcessMewRun(undefined, { task: 't' });
    expect(await refused.run.outcome).toMatchObject({ status: 'failed', errorCode: 'connection-refused' });
    const dropped = inProcessMewRun({ turns: [{ steps: [{ text: 'x' }, { drop: true }] }] }, { task: 't' });
    expect(await dropped.run.outcome).toMatchObject({ status: 'failed', errorCode: 'connection-lost' });
    const hung = inProcessMewRun({ pongs: 1, turns: [{ steps: [{ pause: 10_000 }] }] }, { task: 't' });
    const hungOutcome = await hung.run.outcome;
    expect(hungOutcome).toMatchObject({ status: 'failed', errorCode: 'connection-lost' });
    expect(hungOutcome.error).toMatch(/did not answer a ping/);
    const old = inProcessMewRun({ protocolVersion: 2 }, { task: 't' });
    const oldOutcome = await old.run.outcome;
    expect(oldOutcome).toMatchObject({ status: 'failed', errorCode: 'version-mismatch' });
    expect(oldOutcome.error).toMatch(/wire revision 2; subvisor needs revision 3/);
    for (const { openConnections } of [dropped, hung, old]) expect(openConnections()).toBe(0);
  });

  it('a lost receipt is read back after the reconnect: rejected ends the run failed with mew\'s reason, never re-sent', async () => {
    const { run, daemon } = inProcessMewRun({ loseReceipt: { submission: 1, status: 'rejected', message: 'quota' } }, { task: 't' });
    const outcome = await run.outcome;
    expect(await run.taskAck).toMatchObject({ status: 'rejected', reason: 'mew rejected the prompt: quota' });
    expect(outcome).toMatchObject({ status: 'failed', error: 'mew rejected the prompt: quota' });
    expect(daemon!.received.filter((entry) => entry.message['type'] === 'submit_prompt')).toHaveLength(1);
  });
});
