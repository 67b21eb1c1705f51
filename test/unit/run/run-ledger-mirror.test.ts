// The control ledger and the state mirror as pure logic: acks, timeouts, deliveries, give-up; the state moved by acks and turn-completes only.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ControlLedger } from '../../../src/run/control-ledger.js';
import { StateMirror } from '../../../src/run/mirror.js';
import type { Ack, AckOrigin, Delivery } from '../../../src/api/types.js';
import type { RunState, WireControlType } from '../../../src/wire/index.js';

function ledgerWithLog() {
  const acks: Array<{ ack: Ack; type: WireControlType; origin: AckOrigin }> = [];
  const deliveries: Array<[number, Delivery]> = [];
  const ledger = new ControlLedger({
    ack: (ack, type, origin) => acks.push({ ack, type, origin }),
    delivery: (seq, delivery) => deliveries.push([seq, delivery]),
  });
  return { ledger, acks, deliveries };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('ControlLedger', () => {
  it('an ack settles its waiter only once the caller says the answering event was published', async () => {
    const { ledger, acks } = ledgerWithLog();
    const promise = ledger.awaitAck(1, 'prompt', 'caller', undefined);
    expect(ledger.unacked).toBe(1);
    expect(ledger.take(1)).toBe('prompt');
    expect(ledger.unacked).toBe(0);
    ledger.answer({ status: 'accepted', seq: 1 }, 'prompt', false);
    expect(acks).toEqual([]);
    ledger.settlePending();
    await expect(promise).resolves.toEqual({ status: 'accepted', seq: 1 });
    expect(acks).toEqual([{ ack: { status: 'accepted', seq: 1 }, type: 'prompt', origin: 'caller' }]);
  });

  it('without a published event the settlements run on the next microtask, once', async () => {
    const { ledger, acks, deliveries } = ledgerWithLog();
    const promise = ledger.awaitAck(2, 'steer', 'caller', undefined);
    ledger.take(2);
    ledger.answer({ status: 'accepted', seq: 2 }, 'steer', true);
    expect(acks).toEqual([]);
    await Promise.resolve();
    expect(acks).toHaveLength(1);
    expect(deliveries).toEqual([[2, 'injected']]);
    ledger.settlePending(); // nothing is left to settle twice
    expect(acks).toHaveLength(1);
    await expect((await promise).delivery).resolves.toBe('injected');
  });

  it('an ack naming no control of ours, or one already answered, changes nothing', () => {
    const { ledger } = ledgerWithLog();
    expect(ledger.take(7)).toBeUndefined();
    void ledger.awaitAck(1, 'cancel', 'caller', undefined);
    expect(ledger.take(1)).toBe('cancel');
    expect(ledger.take(1)).toBeUndefined();
  });

  it('ackTimeoutMs: the promise resolves unanswered, and a late ack is still taken (the mirror needs its type)', async () => {
    vi.useFakeTimers();
    const { ledger, acks } = ledgerWithLog();
    ledger.childReady();
    const promise = ledger.awaitAck(3, 'steer', 'caller', 500);
    vi.advanceTimersByTime(499);
    expect(acks).toEqual([]);
    vi.advanceTimersByTime(1);
    await expect(promise).resolves.toMatchObject({ status: 'unanswered', seq: 3, reason: 'no answer within 500 ms' });
    expect(ledger.unacked, 'a timed-out control no longer counts as awaiting its ack (auto-close)').toBe(0);
    expect(ledger.take(3)).toBe('steer');
    ledger.answer({ status: 'accepted', seq: 3 }, 'steer', false);
    ledger.settlePending();
    expect(acks).toHaveLength(1); // the late answer settles nothing twice
  });

  it('ackTimeoutMs of a control written before ready (the task prompt) counts from ready', async () => {
    vi.useFakeTimers();
    const { ledger, acks } = ledgerWithLog();
    const task = ledger.awaitAck(1, 'prompt', 'task', 500);
    vi.advanceTimersByTime(10_000); // a slow start: the child reads no control before ready
    expect(acks).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
    ledger.childReady();
    const later = ledger.awaitAck(2, 'steer', 'caller', 500);
    vi.advanceTimersByTime(499);
    expect(acks).toEqual([]);
    vi.advanceTimersByTime(1);
    await expect(task).resolves.toMatchObject({ status: 'unanswered', seq: 1 });
    await expect(later).resolves.toMatchObject({ status: 'unanswered', seq: 2 });
  });

  it('a control answered before ready starts no clock at ready', () => {
    vi.useFakeTimers();
    const { ledger } = ledgerWithLog();
    void ledger.awaitAck(1, 'cancel', 'caller', 500);
    ledger.take(1);
    ledger.answer({ status: 'accepted', seq: 1 }, 'cancel', false);
    ledger.settlePending();
    ledger.childReady();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an answered control clears its timeout timer', () => {
    vi.useFakeTimers();
    const { ledger } = ledgerWithLog();
    ledger.childReady();
    void ledger.awaitAck(1, 'prompt', 'caller', 1000);
    ledger.take(1);
    ledger.answer({ status: 'accepted', seq: 1 }, 'prompt', false);
    ledger.settlePending();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an accepted steer that started a turn is injected at once; a queued one waits for injection or drop', async () => {
    const { ledger, deliveries } = ledgerWithLog();
    const started = ledger.awaitAck(1, 'steer', 'caller', undefined);
    const queued = ledger.awaitAck(2, 'follow-up', 'caller', undefined);
    ledger.answer({ status: 'accepted', seq: 1 }, 'steer', true);
    ledger.answer({ status: 'accepted', seq: 2 }, 'follow-up', false);
    ledger.settlePending();
    await expect((await started).delivery).resolves.toBe('injected');
    expect(ledger.undelivered).toBe(1);
    ledger.deliver(2, 'dropped');
    ledger.deliver(2, 'injected'); // a second report for the same seq is ignored
    ledger.settlePending();
    await expect((await queued).delivery).resolves.toBe('dropped');
    expect(deliveries).toEqual([[1, 'injected'], [2, 'dropped']]);
    expect(ledger.undelivered).toBe(0);
  });

  it('a rejected or applied steer has no delivery', async () => {
    const { ledger } = ledgerWithLog();
    const rejected = ledger.awaitAck(1, 'steer', 'caller', undefined);
    ledger.answer({ status: 'rejected', seq: 1, reason: 'no turn' }, 'steer', false);
    ledger.settlePending();
    expect((await rejected).delivery).toBeUndefined();
  });

  it('giveUp: waiting acks become unanswered, pending deliveries dropped, the parent’s own controls reach the listener', async () => {
    vi.useFakeTimers();
    const { ledger, acks, deliveries } = ledgerWithLog();
    void ledger.awaitAck(1, 'close', 'auto', undefined);
    const waiting = ledger.awaitAck(2, 'prompt', 'task', 10_000);
    const queued = ledger.awaitAck(3, 'follow-up', 'caller', undefined);
    ledger.answer({ status: 'accepted', seq: 3 }, 'follow-up', false);
    ledger.settlePending();
    ledger.giveUp();
    await expect(waiting).resolves.toMatchObject({ status: 'unanswered', seq: 2 });
    await expect((await queued).delivery).resolves.toBe('dropped');
    expect(acks.map(({ ack, origin }) => [ack.seq, ack.status, origin])).toEqual([
      [3, 'accepted', 'caller'],
      [1, 'unanswered', 'auto'],
      [2, 'unanswered', 'task'],
    ]);
    expect(deliveries).toEqual([[3, 'dropped']]);
    expect(ledger.unacked).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('StateMirror', () => {
  function mirrorWithLog() {
    const changes: Array<[RunState, RunState]> = [];
    const mirror = new StateMirror((state, previous) => changes.push([previous, state]));
    return { mirror, changes };
  }

  it('moves starting -> ready -> running -> ready on ready, an accepted prompt and a turn-complete', () => {
    const { mirror, changes } = mirrorWithLog();
    mirror.ready();
    expect(mirror.acknowledged('prompt', 'accepted')).toBe('start-turn');
    mirror.turnComplete();
    expect(changes).toEqual([['starting', 'ready'], ['ready', 'running'], ['running', 'ready']]);
    expect(mirror.terminal).toBe(false);
  });

  it('a rejected ack, or a control the state table refuses, moves nothing', () => {
    const { mirror, changes } = mirrorWithLog();
    mirror.ready();
    expect(mirror.acknowledged('prompt', 'rejected')).toBeUndefined();
    expect(mirror.acknowledged('prompt', 'accepted')).toBe('start-turn');
    expect(mirror.acknowledged('prompt', 'accepted')).toBeUndefined(); // a turn is running: the table refuses a prompt
    expect(changes).toEqual([['starting', 'ready'], ['ready', 'running']]);
  });

  it('a turn the child starts by itself from ready (a queued follow-up) moves it to running', () => {
    const { mirror } = mirrorWithLog();
    mirror.ready();
    mirror.turnStarted();
    expect(mirror.state).toBe('running');
    mirror.turnStarted(); // already running: no change
    expect(mirror.state).toBe('running');
  });

  it('finalize mid-turn: the interrupted turn keeps finalizing, the final turn ends it', () => {
    const { mirror } = mirrorWithLog();
    mirror.ready();
    mirror.acknowledged('prompt', 'accepted');
    expect(mirror.acknowledged('finalize', 'accepted')).toBe('interrupt-turn');
    expect(mirror.state).toBe('finalizing');
    mirror.turnComplete(); // the interrupted turn
    expect(mirror.state).toBe('finalizing');
    mirror.turnComplete(); // the tool-free final turn
    expect(mirror.state).not.toBe('finalizing');
  });

  it('the deadline and the exit set terminal states, and nothing moves it afterwards', () => {
    const { mirror } = mirrorWithLog();
    mirror.ready();
    mirror.deadline();
    expect(mirror.state).toBe('timed-out');
    expect(mirror.terminal).toBe(true);
    mirror.turnComplete();
    mirror.ready();
    expect(mirror.state).toBe('timed-out');
    const other = mirrorWithLog().mirror;
    other.exit('cancelled');
    expect(other.terminal).toBe(true);
  });
});
