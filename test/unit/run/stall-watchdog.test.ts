// The stall watchdog's rules on a fake clock: armed only while a turn is open, measured from the last line,
// one timer per period (not per line), and silent after stop().
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StallWatchdog } from '../../../src/run/stall-watchdog.js';
import type { WatchdogClock } from '../../../src/run/stall-watchdog.js';

/** A manual clock: `advance(ms)` fires the timers that come due, in order. */
function fakeClock(): WatchdogClock & { advance(ms: number): void; timersSet: number; pending(): number } {
  let now = 1_000_000;
  let nextId = 0;
  const timers = new Map<number, { at: number; callback: () => void }>();
  const clock = {
    timersSet: 0,
    now: () => now,
    setTimeout(callback: () => void, ms: number) {
      clock.timersSet++;
      const id = ++nextId;
      timers.set(id, { at: now + ms, callback });
      return id;
    },
    clearTimeout(handle: unknown) {
      timers.delete(handle as number);
    },
    pending: () => timers.size,
    advance(ms: number) {
      const until = now + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, timer]) => timer.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
        if (due === undefined) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].callback();
      }
      now = until;
    },
  };
  return clock;
}

describe('StallWatchdog', () => {
  it('reports a turn with no line for the timeout, once, with the silence measured', () => {
    const clock = fakeClock();
    const stalls: number[] = [];
    const watchdog = new StallWatchdog(1000, (silent) => stalls.push(silent), clock);
    watchdog.turnStarted();
    clock.advance(999);
    expect(stalls).toEqual([]);
    clock.advance(1);
    expect(stalls).toEqual([1000]);
    clock.advance(10_000);
    expect(stalls).toHaveLength(1);
    expect(clock.pending()).toBe(0);
  });

  it('measures from the last line, re-arming once per period however many lines arrive', () => {
    const clock = fakeClock();
    const stalls: number[] = [];
    const watchdog = new StallWatchdog(1000, (silent) => stalls.push(silent), clock);
    watchdog.turnStarted();
    for (let i = 0; i < 900; i++) {
      clock.advance(1);
      watchdog.seen();
    }
    expect(watchdog.lastEventAt).toBe(clock.now());
    clock.advance(999);
    expect(stalls).toEqual([]);
    clock.advance(1);
    expect(stalls).toEqual([1000]);
    expect(clock.timersSet).toBeLessThanOrEqual(3);
  });

  it('is not armed outside a turn (starting, ready), and a completed turn disarms it', () => {
    const clock = fakeClock();
    const stalls: number[] = [];
    const watchdog = new StallWatchdog(1000, (silent) => stalls.push(silent), clock);
    expect(watchdog.lastEventAt).toBeUndefined();
    clock.advance(5000);
    watchdog.turnStarted();
    clock.advance(500);
    watchdog.turnCompleted();
    clock.advance(5000);
    expect(stalls).toEqual([]);
    // A new turn counts from its own start, not from the line before it.
    watchdog.seen();
    clock.advance(3000);
    watchdog.turnStarted();
    clock.advance(999);
    expect(stalls).toEqual([]);
    clock.advance(1);
    expect(stalls).toEqual([1000]);
  });

  it('without a timeout only keeps lastEventAt; after stop() it never fires', () => {
    const clock = fakeClock();
    const off = new StallWatchdog(undefined, () => expect.fail('no timeout, no stall'), clock);
    off.turnStarted();
    off.seen();
    clock.advance(100_000);
    expect(off.lastEventAt).toBe(clock.now() - 100_000);
    expect(clock.pending()).toBe(0);
    const stopped = new StallWatchdog(1000, () => expect.fail('stopped'), clock);
    stopped.turnStarted();
    stopped.stop();
    stopped.turnStarted();
    clock.advance(10_000);
    expect(clock.pending()).toBe(0);
  });

  describe('on the real clock', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('reads the wall clock once per synchronous job: lines handed over together share one time, the next job reads it again', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(5_000);
      const watchdog = new StallWatchdog(undefined, () => {});
      watchdog.seen();
      expect(watchdog.lastEventAt).toBe(5_000);
      vi.setSystemTime(9_000);
      watchdog.seen();
      expect(watchdog.lastEventAt).toBe(5_000);
      await Promise.resolve();
      watchdog.seen();
      expect(watchdog.lastEventAt).toBe(9_000);
    });
  });
});
