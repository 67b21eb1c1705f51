// The shared grid ticker under a hand-driven clock: one timer for all members, on the period's grid, only while needed.
import { describe, expect, it } from 'vitest';
import { GridTicker } from '../../../src/channel/grid-ticker.js';
import type { TickerClock } from '../../../src/channel/grid-ticker.js';

/** A clock whose time moves only by `advance`, firing due timers in order. */
function manualClock(start = 0) {
  let now = start;
  let nextId = 0;
  const timers = new Map<number, { at: number; callback: () => void }>();
  const clock: TickerClock = {
    now: () => now,
    setTimeout: (callback, ms) => {
      const id = nextId++;
      timers.set(id, { at: now + ms, callback });
      return id;
    },
    clearTimeout: (handle) => void timers.delete(handle as number),
  };
  return {
    clock,
    timers,
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
}

describe('grid ticker', () => {
  it('ticks members added at different times together, on multiples of the period', () => {
    const time = manualClock(1003);
    const ticker = new GridTicker(30, time.clock);
    const ticks: string[] = [];
    const member = (name: string) => ({ tick: (now: number) => (ticks.push(`${name}@${now}`), true) });
    ticker.add(member('a'));
    time.advance(10);
    ticker.add(member('b'));
    expect(time.timers.size).toBe(1);
    time.advance(60);
    expect(ticks).toEqual(['a@1020', 'b@1020', 'a@1050', 'b@1050']);
  });

  it('drops a member whose tick returns false, and disarms with the last one', () => {
    const time = manualClock(0);
    const ticker = new GridTicker(10, time.clock);
    let left = 3;
    ticker.add({ tick: () => --left > 0 });
    time.advance(100);
    expect(left).toBe(0);
    expect(ticker.size).toBe(0);
    expect(ticker.armed).toBe(false);
    expect(time.timers.size).toBe(0);
  });

  it('delete() clears the timer at once; a member may delete itself inside its tick', () => {
    const time = manualClock(5);
    const ticker = new GridTicker(10, time.clock);
    const quiet = { tick: () => true };
    ticker.add(quiet);
    expect(ticker.armed).toBe(true);
    ticker.delete(quiet);
    expect(ticker.armed).toBe(false);
    expect(time.timers.size).toBe(0);
    const selfRemoving = { tick: () => (ticker.delete(selfRemoving), true) };
    ticker.add(selfRemoving);
    time.advance(50);
    expect(ticker.has(selfRemoving)).toBe(false);
    expect(time.timers.size).toBe(0);
  });
});
