// Unit tests of the pending-request correlator: settled once by id through callbacks, typed unknown ids, timeouts, everything failed on close.
import { describe, expect, it } from 'vitest';
import { PendingRequests } from '../../../../src/drivers/shared/pending-requests.js';
import type { PendingFailure } from '../../../../src/drivers/shared/pending-requests.js';
import { manualTimers } from '../../../helpers/manual-timers.js';

function recorder() {
  const log: string[] = [];
  const handlers = (name: string) => ({
    settled: (result: unknown) => void log.push(`${name} settled ${JSON.stringify(result)}`),
    failed: (failure: PendingFailure) => void log.push(`${name} failed ${failure.kind}: ${failure.reason}`),
  });
  return { log, handlers };
}

describe('PendingRequests', () => {
  it('settles each id once, synchronously; numbers and strings are different ids; an unknown id is typed', () => {
    const { log, handlers } = recorder();
    const pending = new PendingRequests<unknown>();
    pending.add(1, handlers('one'));
    pending.add('1', handlers('"one"'));
    expect(pending.size).toBe(2);
    expect(pending.settle('1', { ok: true })).toEqual({ ok: true });
    expect(log).toEqual(['"one" settled {"ok":true}']);
    expect(pending.has(1)).toBe(true);
    expect(pending.settle(1, 'x')).toEqual({ ok: true });
    expect(pending.settle(1, 'again')).toEqual({ ok: false, kind: 'unknown-id', id: 1, reason: 'an answer to request 1, which is not pending' });
    expect(pending.settle('never', 'x')).toMatchObject({ ok: false, kind: 'unknown-id', id: 'never' });
    expect(log).toEqual(['"one" settled {"ok":true}', 'one settled "x"']);
    expect(() => pending.add(2, handlers('two'))).not.toThrow();
    expect(() => pending.add(2, handlers('two again'))).toThrow(/already pending/);
  });

  it('fails a request after its bound, and its late answer is an unknown id; the timer is gone once settled', () => {
    const clock = manualTimers();
    const { log, handlers } = recorder();
    const pending = new PendingRequests<unknown>(clock.setTimer);
    pending.add(7, handlers('slow'), 500);
    pending.add(8, handlers('quick'), 500);
    pending.add(9, handlers('unbounded'));
    pending.settle(8, 'fast');
    expect(clock.live).toBe(1);
    clock.advance(499);
    expect(log).toEqual(['quick settled "fast"']);
    clock.advance(1);
    expect(log).toEqual(['quick settled "fast"', 'slow failed timeout: no answer to request 7 within 500 ms']);
    expect(pending.settle(7, 'late').ok).toBe(false);
    expect(pending.size).toBe(1);
  });

  it('fails every pending request on close, in order, once; later ones fail at once; the driver can fail one', () => {
    const clock = manualTimers();
    const { log, handlers } = recorder();
    const pending = new PendingRequests<unknown>(clock.setTimer);
    pending.add(1, handlers('a'), 1000);
    pending.add(2, handlers('b'));
    pending.add(3, handlers('c'));
    expect(pending.fail(3, 'its answer could not be read')).toBe(true);
    expect(pending.fail(3, 'twice')).toBe(false);
    pending.close('the child exited');
    pending.close('again');
    expect(clock.live).toBe(0);
    pending.add(4, handlers('d'));
    expect(log).toEqual([
      'c failed failed: its answer could not be read',
      'a failed closed: the child exited',
      'b failed closed: the child exited',
      'd failed closed: the child exited',
    ]);
    expect(pending.size).toBe(0);
  });
});
