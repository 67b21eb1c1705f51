// The run core's parts as pure logic: how a control goes out (ControlSender), the stream's last event (ExitGate), what the outcome counts (RunTally).
import { describe, expect, it } from 'vitest';
import { ControlLedger } from '../../../src/run/control-ledger.js';
import { ControlSender } from '../../../src/run/control-sender.js';
import type { ControlSenderHooks } from '../../../src/run/control-sender.js';
import { ExitGate } from '../../../src/run/exit-gate.js';
import { RunTally } from '../../../src/run/run-tally.js';
import type { Control, SendOutcome } from '../../../src/protocol/driver.js';
import type { Ack, SentControl } from '../../../src/run/handle.js';
import type { ExitRunEvent, RunEvent } from '../../../src/protocol/index.js';

function sender(answer: (control: Control) => SendOutcome = () => ({ kind: 'sent', ref: 1 })) {
  const log = { sent: [] as Control[], broken: [] as string[], cancels: 0, written: 0, told: [] as SentControl[], listening: true };
  const hooks: ControlSenderHooks = {
    runId: 'r1',
    driver: {
      send: (control) => {
        log.sent.push(control);
        return answer(control);
      },
    },
    ledger: new ControlLedger({ ack: () => {}, delivery: () => {} }),
    ackTimeoutMs: undefined,
    broken: (reason) => log.broken.push(reason),
    cancelWritten: () => log.cancels++,
    written: () => log.written++,
    listening: () => log.listening,
    tell: (sent) => log.told.push(sent),
  };
  return { controls: new ControlSender(hooks), log, ledger: hooks.ledger };
}

describe('ControlSender', () => {
  it('while closed, prompt/steer/follow-up reject run-ended and the ending controls resolve runEnded; nothing is written', async () => {
    const { controls, log } = sender();
    await expect(controls.send({ type: 'steer', text: 'x' })).rejects.toMatchObject({ name: 'ControlRefusedError', code: 'run-ended', control: 'steer' });
    await expect(controls.send({ type: 'close' })).resolves.toMatchObject({ status: 'unanswered', seq: 0, runEnded: true });
    expect(controls.sendOwn({ type: 'cancel' })).toBeUndefined();
    expect(log.sent).toEqual([]);
  });

  it('an empty steer or follow-up is refused before the driver sees it', async () => {
    const { controls, log } = sender();
    controls.open = true;
    await expect(controls.send({ type: 'follow-up', text: '' })).rejects.toMatchObject({ code: 'empty-text' });
    expect(log.sent).toEqual([]);
  });

  it('the driver refusing or a broken channel: the caller sees it, a broken channel is reported, an ending control still resolves', async () => {
    const refused = sender(() => ({ kind: 'refused', code: 'too-large', reason: 'the line is 70000 bytes' }));
    refused.controls.open = true;
    await expect(refused.controls.send({ type: 'prompt', text: 'big' })).rejects.toMatchObject({ code: 'too-large', message: 'cannot send prompt: the line is 70000 bytes' });
    expect(refused.log.broken).toEqual([]);
    const broken = sender(() => ({ kind: 'broken', reason: 'the control file is gone' }));
    broken.controls.open = true;
    await expect(broken.controls.send({ type: 'prompt', text: 'x' })).rejects.toMatchObject({ code: 'run-ended' });
    await expect(broken.controls.send({ type: 'finalize' })).resolves.toMatchObject({ runEnded: true, reason: 'finalize not sent: the control file is gone' });
    expect(broken.controls.sendOwn({ type: 'close' })).toBeUndefined();
    expect(broken.log.broken).toEqual(['the control file is gone', 'the control file is gone', 'the control file is gone']);
  });

  it('a sent control awaits its ack, is told with its origin, and a cancel starts its grace', async () => {
    const { controls, log, ledger } = sender();
    controls.open = true;
    const ack = controls.send({ type: 'cancel' });
    expect(log.told).toEqual([{ type: 'cancel', seq: 1, origin: 'caller' }]);
    expect(log.cancels).toBe(1);
    expect(log.written).toBe(1);
    expect(ledger.unacked).toBe(1);
    ledger.take(1);
    ledger.answer({ status: 'accepted', seq: 1 }, 'cancel', false);
    ledger.settlePending();
    await expect(ack).resolves.toEqual({ status: 'accepted', seq: 1 } satisfies Ack);
    controls.sendOwn({ type: 'finalize', note: 'wrap up' });
    expect(log.told[1]).toEqual({ type: 'finalize', seq: 1, origin: 'auto', note: 'wrap up' });
    log.listening = false;
    controls.sendOwn({ type: 'close' });
    expect(log.told).toHaveLength(2);
  });

  it('the task prompt is told once: on a microtask, or earlier when something answers it first', async () => {
    const { controls, log } = sender();
    controls.taskWritten('do it', 1);
    expect(log.told).toEqual([]);
    controls.tellTaskWritten();
    expect(log.told).toEqual([{ type: 'prompt', seq: 1, origin: 'task', text: 'do it' }]);
    await Promise.resolve();
    expect(log.told).toHaveLength(1);
  });
});

function gate() {
  const published: RunEvent[] = [];
  let ended = 0;
  const exitGate = new ExitGate({ runId: 'r1', publish: (event) => published.push(event), endIterators: () => ended++ });
  return { exitGate, published, ended: () => ended };
}

const childExit: ExitRunEvent = { type: 'exit', status: 'done', run: 'r1' } as ExitRunEvent;

describe('ExitGate', () => {
  it('holds the child’s exit until the verdict; a different verdict keeps the child’s word in childStatus', () => {
    const { exitGate, published, ended } = gate();
    exitGate.childExit({ ...childExit, error: 'ignored' });
    expect(exitGate.closed).toBe(true);
    expect(published).toEqual([]);
    exitGate.decided({ status: 'timed-out', code: 'deadline', error: 'past the deadline' }, undefined, {});
    expect(published).toEqual([{ type: 'exit', status: 'timed-out', childStatus: 'done', run: 'r1', error: 'past the deadline' }]);
    expect(ended()).toBe(1);
  });

  it('an exit after the verdict goes out at once with its status; the same status leaves the event as it was', () => {
    const { exitGate, published } = gate();
    exitGate.decided({ status: 'done', code: 'child-error', error: '' }, undefined, {});
    expect(published).toEqual([{ type: 'exit', status: 'done', synthetic: true, run: 'r1' }]);
  });

  it('with events behind, the synthetic exit waits for them; a child exit among them is the last event instead', async () => {
    let drained!: () => void;
    const { exitGate, published } = gate();
    exitGate.decided({ status: 'failed', code: 'no-exit-event', error: 'gone' }, { eventsBehind: new Promise<void>((resolve) => (drained = resolve)) }, {});
    expect(exitGate.eventsBehind).toBe(true);
    expect(published).toEqual([]);
    drained();
    await new Promise((resolve) => setImmediate(resolve));
    expect(exitGate.eventsBehind).toBe(false);
    expect(published).toEqual([{ type: 'exit', status: 'failed', synthetic: true, run: 'r1', error: 'gone' }]);

    const second = gate();
    let drainedToo!: () => void;
    second.exitGate.decided({ status: 'done', code: 'child-error', error: '' }, { eventsBehind: new Promise<void>((resolve) => (drainedToo = resolve)) }, {});
    second.exitGate.childExit(childExit);
    drainedToo();
    await new Promise((resolve) => setImmediate(resolve));
    expect(second.published).toEqual([childExit]);
  });
});

describe('RunTally', () => {
  it('counts the highest turn, sums usage over turns, keeps the first result', () => {
    const tally = new RunTally();
    tally.turnStarted(1);
    expect(tally.turnOpen).toBe(true);
    tally.turnCompleted({ turn: 1, stopReason: 'end_turn', usage: { inputTokens: 10, outputTokens: 2 } });
    tally.turnStarted(2);
    tally.turnCompleted({ turn: 2, stopReason: 'end_turn', usage: { inputTokens: 5, outputTokens: 1 } });
    tally.turnCompleted({ turn: 1, stopReason: 'end_turn' }); // a late report of an earlier turn lowers nothing
    tally.resulted({ stopReason: 'end_turn', answer: Promise.resolve(undefined) } as never);
    tally.resulted({ stopReason: 'other', answer: Promise.resolve(undefined) } as never);
    tally.rejectedLines += 2;
    expect(tally.turnOpen).toBe(false);
    expect(tally.facts()).toMatchObject({ turns: 2, turnUsage: { inputTokens: 15, outputTokens: 3 }, rejectedLines: 2, result: { stopReason: 'end_turn' } });
  });
});
