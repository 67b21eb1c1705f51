// The run core's state, ack and outcome matrix over the in-memory driver: no process, no files, milliseconds.
import { describe, expect, it } from 'vitest';
import { ControlRefusedError } from '../../../src/index.js';
import type { Ack, Run, RunEvent } from '../../../src/index.js';
import { createInMemoryRun } from '../../../src/testing/index.js';
import type { InMemoryChild } from '../../../src/testing/index.js';
import { endRun } from '../../helpers/in-memory-play.js';

/** Collects every event of the run, in order, until its exit. */
function collect(run: Run): Promise<RunEvent[]> {
  return (async () => {
    const events: RunEvent[] = [];
    for await (const event of run) events.push(event);
    return events;
  })();
}

/** Plays a child that runs each prompt as one turn answering `answer`, and exits on close. */
function obedient(child: InMemoryChild, answer = 'the answer'): void {
  child.onControl = ({ ref, control }) => {
    if (control.type === 'prompt') {
      child.ack(ref, 'accepted');
      child.turnStarted();
      child.text(answer);
      child.turnComplete('stop', { inputTokens: 10, outputTokens: 5 });
    } else if (control.type === 'close') {
      endRun(child, ref, 'done', answer, { inputTokens: 10, outputTokens: 5 });
    } else if (control.type === 'cancel') {
      endRun(child, ref, 'cancelled');
    }
  };
  child.ready();
}

describe('the run core over the in-memory driver', () => {
  it('runs a task to done: ready, the task acked, one turn, the automatic close, one exit, the answer', async () => {
    const { run, child } = createInMemoryRun({ task: 'hello' });
    const states: string[] = [];
    run.on('state', (state) => states.push(state));
    const events = collect(run);
    obedient(child);
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'the answer', truncated: false, turns: 1, exitCode: null, signal: null });
    expect(outcome.usage).toEqual({ inputTokens: 10, outputTokens: 5 });
    expect(outcome.errorCode).toBeUndefined();
    expect(run.pid).toBeUndefined();
    expect(states).toEqual(['ready', 'running', 'ready', 'done']);
    expect((await run.taskAck)?.status).toBe('accepted');
    expect(child.controls.map(({ control }) => control.type)).toEqual(['prompt', 'close']);
    const types = (await events).map((event) => event.type);
    expect(types.filter((type) => type === 'exit')).toHaveLength(1);
    expect(types.at(-1)).toBe('exit');
  });

  it('sums usage over turns when the result has none', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true });
    child.ready();
    child.turnStarted();
    child.turnComplete('stop', { inputTokens: 1, outputTokens: 2, costUsd: 0.5 });
    child.turnStarted();
    child.turnComplete('stop', { inputTokens: 3, outputTokens: 4, costUsd: 0.25 });
    child.result('two turns');
    child.exit('done');
    child.gone();
    const outcome = await run.outcome;
    expect(outcome.usage).toEqual({ inputTokens: 4, outputTokens: 6, costUsd: 0.75 });
    expect(outcome.turns).toBe(2);
  });

  it('settles an ack only after its control-ack event was published', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true });
    const seen: string[] = [];
    run.on('event', (event) => seen.push(event.type));
    child.ready();
    const ack = run.prompt('go').then((answer) => {
      seen.push(`ack:${answer.status}`);
      return answer;
    });
    await Promise.resolve();
    child.ack(child.controls[0]!.ref, 'accepted');
    expect((await ack).seq).toBe(child.controls[0]!.ref);
    expect(seen).toEqual(['ready', 'control-ack', 'ack:accepted']);
    await run.kill();
  });

  it('resolves an ack the child never gives as unanswered after ackTimeoutMs, and every waiting one at the end', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true, ackTimeoutMs: 20 });
    child.ready();
    const timedOut = await run.prompt('nobody answers');
    expect(timedOut).toMatchObject({ status: 'unanswered', reason: 'no answer within 20 ms' });
    const { run: other, child: otherChild } = createInMemoryRun({ keepAlive: true });
    otherChild.ready();
    const pending = other.prompt('still waiting');
    otherChild.exit('done');
    otherChild.gone();
    expect(await pending).toMatchObject({ status: 'unanswered', reason: 'the run ended before the child answered' });
    await run.kill();
  });

  it('delivers a queued steer as injected, another as dropped, and a third as dropped when the run ends', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true });
    child.ready();
    child.turnStarted();
    const acks = [run.steer('one'), run.steer('two'), run.followUp('three')];
    await Promise.resolve();
    for (const { ref } of child.controls) child.ack(ref, 'accepted');
    const [one, two, three] = (await Promise.all(acks)) as [Ack, Ack, Ack];
    child.injected(one.seq);
    child.dropped([two.seq]);
    expect(await one.delivery).toBe('injected');
    expect(await two.delivery).toBe('dropped');
    child.exit('done');
    child.gone();
    expect(await three.delivery).toBe('dropped');
    await run.outcome;
  });

  it('refuses empty steer text and every control after the end, writing nothing', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true });
    child.ready();
    await expect(run.steer('')).rejects.toMatchObject({ code: 'empty-text' });
    child.exit('done');
    child.gone();
    await run.outcome;
    await expect(run.prompt('late')).rejects.toBeInstanceOf(ControlRefusedError);
    for (const ending of [run.cancel(), run.close(), run.finalize('late')]) {
      await expect(ending).resolves.toEqual({ status: 'unanswered', seq: 0, runEnded: true, reason: expect.stringContaining('has ended') });
    }
    await expect(run.steer('late')).rejects.toMatchObject({ code: 'run-ended' });
    await expect(run.followUp('late')).rejects.toMatchObject({ code: 'run-ended' });
    expect(child.controls).toHaveLength(0);
  });

  it('cancel(): accepted, cancelled with errorCode aborted; a child that never leaves is disconnected after the grace', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true, killGraceMs: 30 });
    child.ready();
    child.turnStarted();
    child.onControl = ({ ref }) => child.ack(ref, 'accepted');
    const ack = await run.cancel();
    expect(ack.status).toBe('accepted');
    expect(run.state).toBe('cancelled');
    expect(child.disconnected).toBe(false);
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(child.disconnected).toBe(true);
  });

  it('a fatal protocol failure wins over the child saying done, and the core cancels first', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true });
    child.ready();
    child.fatal('version-mismatch', 'protocol failure (version-mismatch): v2');
    expect(child.controls.map(({ control }) => control.type)).toEqual(['cancel']);
    child.exit('done');
    child.gone();
    expect(await run.outcome).toMatchObject({ status: 'failed', errorCode: 'version-mismatch' });
  });

  it('a child that goes without an exit: one synthetic exit, failed no-exit-event', async () => {
    const { run, child } = createInMemoryRun();
    const events = collect(run);
    child.ready();
    child.gone();
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'no-exit-event' });
    const exits = (await events).filter((event) => event.type === 'exit');
    expect(exits).toEqual([{ type: 'exit', status: 'failed', synthetic: true, run: run.id, error: outcome.error }]);
  });

  it('events after the exit are dropped: exactly one exit, last', async () => {
    const { run, child } = createInMemoryRun();
    const events = collect(run);
    child.ready();
    child.exit('done');
    child.text('too late');
    child.exit('failed', 'twice');
    child.gone();
    expect((await events).map((event) => event.type)).toEqual(['ready', 'exit']);
    expect((await run.outcome).status).toBe('done');
  });

  it('kills a child that never says ready: failed ready-timeout, disconnected at once', async () => {
    const { run, child } = createInMemoryRun({ readyTimeoutMs: 20, killGraceMs: 60_000 });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'ready-timeout' });
    expect(child.disconnected).toBe(true);
  });

  it('terminate(): cancel sent by the core, the parent reason kept when the child exits cancelled', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true });
    obedient(child);
    const outcome = await run.terminate('enough');
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted', error: 'enough' });
  });

  it('the abort signal cancels; an already aborted signal ends the run before anything is sent', async () => {
    const controller = new AbortController();
    const { run, child } = createInMemoryRun({ keepAlive: true, signal: controller.signal });
    obedient(child);
    controller.abort();
    expect(await run.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    const { run: late, child: lateChild } = createInMemoryRun({ task: 'x', signal: AbortSignal.abort() });
    expect(await late.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(lateChild.controls).toHaveLength(0);
  });

  it('finalize: accepted -> finalizing; a child that does not finish in finalizeGraceMs is cancelled', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true, finalizeGraceMs: 20, killGraceMs: 20 });
    child.ready();
    child.turnStarted();
    child.onControl = ({ ref, control }) => {
      if (control.type === 'finalize') child.ack(ref, 'accepted');
    };
    expect((await run.finalize('wrap up')).status).toBe('accepted');
    expect(run.state).toBe('finalizing');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'finalize-timeout' });
    expect(child.controls.map(({ control }) => control.type)).toEqual(['finalize', 'cancel']);
  });

  it('a rejected line is published and counted, the run goes on', async () => {
    const { run, child } = createInMemoryRun();
    const rejected: string[] = [];
    run.on('rejected', (event) => rejected.push(event.code));
    child.ready();
    child.rejected({ code: 'malformed', reason: 'not JSON', fatal: false });
    child.exit('done');
    child.gone();
    const outcome = await run.outcome;
    expect(rejected).toEqual(['malformed']);
    expect(outcome.rejectedLines).toBe(1);
    expect(outcome.status).toBe('done');
  });

  it('a run without a process past its deadline: cancel sent, disconnected at once (the daemon does not know the deadline), timed-out', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true, timeoutMs: 30, killGraceMs: 60_000 });
    child.ready();
    child.turnStarted();
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline', exitCode: null, outputTail: '' });
    expect(child.controls.map(({ control }) => control.type)).toEqual(['cancel']);
    expect(child.disconnected).toBe(true);
    expect(outcome.durationMs).toBeLessThan(30_000);
  });

  it('a run without a process: the abort signal and terminate() cancel, then disconnect after the grace', async () => {
    const controller = new AbortController();
    const { run, child } = createInMemoryRun({ keepAlive: true, killGraceMs: 20, signal: controller.signal });
    child.ready();
    controller.abort();
    expect(await run.outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(child.controls.map(({ control }) => control.type)).toEqual(['cancel']);
    expect(child.disconnected).toBe(true);
    const { run: other, child: otherChild } = createInMemoryRun({ keepAlive: true, killGraceMs: 20 });
    otherChild.ready();
    expect(await other.terminate('enough')).toMatchObject({ status: 'cancelled', errorCode: 'aborted', error: 'enough' });
    expect(otherChild.disconnected).toBe(true);
  });

  it('a request nobody here can answer: the run fails request-unanswered after requestTimeoutMs, cancelled and disconnected', async () => {
    const { run, child } = createInMemoryRun({ keepAlive: true, requestTimeoutMs: 40, killGraceMs: 20 });
    const events = collect(run);
    child.ready();
    child.turnStarted();
    child.blocked('plan-1', 'a plan_approval_request');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'request-unanswered' });
    expect(outcome.error).toContain('a plan_approval_request');
    expect(outcome.error).toContain('40 ms');
    expect(child.controls.map(({ control }) => control.type)).toEqual(['cancel']);
    expect(child.disconnected).toBe(true);
    expect((await events).at(-1)).toMatchObject({ type: 'exit', status: 'failed', error: outcome.error });
  });

  it('a blocked request settled elsewhere in time holds nothing back: the run goes on to done', async () => {
    const { run, child } = createInMemoryRun({ task: 'go', requestTimeoutMs: 40 });
    child.onControl = ({ ref, control }) => {
      if (control.type === 'prompt') {
        child.ack(ref, 'accepted');
        child.turnStarted();
        child.blocked('plan-1', 'a plan_approval_request');
        child.unblocked('plan-1');
        // Well past the bound: had the timer stayed armed, the run would have failed.
        setTimeout(() => {
          child.text('done at last');
          child.turnComplete();
        }, 120);
      } else if (control.type === 'close') {
        child.ack(ref, 'accepted');
        child.result('done at last');
        child.exit('done');
        child.gone();
      }
    };
    child.ready();
    expect(await run.outcome).toMatchObject({ status: 'done', finalText: 'done at last' });
  });

  it('rate-limit news: the listener hears the report when it is read, the event follows in the stream, the run goes on', async () => {
    const { run, child } = createInMemoryRun({ task: 'go' });
    const heard: string[] = [];
    const events = collect(run);
    run.on('rate-limit', (report) => heard.push(report.status));
    child.onControl = ({ ref, control }) => {
      if (control.type === 'prompt') {
        child.ack(ref, 'accepted');
        child.turnStarted();
        child.rateLimit({ status: 'limited', nativeType: 'system/api_retry', retryAfterMs: 3654, httpStatus: 429, agentRetries: true, attempt: 1, maxAttempts: 10 });
        child.rateLimit({ status: 'allowed', nativeType: 'rate_limit_event' });
        child.text('answered after the retry');
        child.turnComplete();
      } else if (control.type === 'close') {
        endRun(child, ref, 'done', 'answered after the retry');
      }
    };
    child.ready();
    expect(await run.outcome).toMatchObject({ status: 'done', finalText: 'answered after the retry' });
    expect(heard).toEqual(['limited', 'allowed']);
    const limits = (await events).filter((event) => event.type === 'rate-limit');
    expect(limits).toEqual([
      { type: 'rate-limit', v: 1, seq: 4, run: run.id, status: 'limited', nativeType: 'system/api_retry', retryAfterMs: 3654, httpStatus: 429, agentRetries: true, attempt: 1, maxAttempts: 10 },
      { type: 'rate-limit', v: 1, seq: 5, run: run.id, status: 'allowed', nativeType: 'rate_limit_event' },
    ]);
  });
});
