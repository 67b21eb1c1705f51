// The process-wide wake-up governor under hand-given times: when busy tails are coalesced, and when they watch again.
import { describe, expect, it } from 'vitest';
import { WakeGovernor } from '../src/channel/wake-governor.js';

/** 500/s to enter (125 per 250 ms window), 150/s to leave. */
const governor = () => new WakeGovernor({ enterPerSecond: 500, leavePerSecond: 150, windowMs: 250 });

/** `count` wake-ups spread evenly over [from, from + spanMs). */
function wakes(target: WakeGovernor, from: number, spanMs: number, count: number): void {
  for (let i = 0; i < count; i++) target.wake(from + (i * spanMs) / count);
}

describe('wake governor', () => {
  it('is not congested by a single fast stream (400 wake-ups/s)', () => {
    const g = governor();
    wakes(g, 0, 2000, 800);
    expect(g.congested(2000)).toBe(false);
  });

  it('turns congested within one window once wake-ups reach the entry rate, without waiting for the window to end', () => {
    const g = governor();
    wakes(g, 0, 100, 124);
    expect(g.congested(100)).toBe(false);
    g.wake(101);
    expect(g.congested(101)).toBe(true);
  });

  it('stays congested between the two rates (hysteresis), and leaves below the lower one', () => {
    const g = governor();
    wakes(g, 0, 250, 200);
    expect(g.congested(250)).toBe(true);
    // 200/s: below the entry rate, above the leaving one.
    wakes(g, 250, 1000, 200);
    expect(g.congested(1250)).toBe(true);
    // 100/s: below both, judged when its window ends.
    wakes(g, 1250, 200, 20);
    expect(g.congested(1450)).toBe(true);
    expect(g.congested(1500)).toBe(false);
  });

  it('judges a window by the time that really passed: a long silence after a burst ends congestion', () => {
    const g = governor();
    wakes(g, 0, 250, 200);
    expect(g.congested(250)).toBe(true);
    g.wake(260);
    expect(g.congested(10_000)).toBe(false);
  });

  it('a clock set back starts a new window instead of freezing the state until it catches up', () => {
    const g = governor();
    wakes(g, 10_000, 250, 200);
    expect(g.congested(10_250)).toBe(true);
    // An hour back: the next window is judged from there.
    wakes(g, 10_000 - 3_600_000, 250, 10);
    expect(g.congested(10_000 - 3_600_000 + 300)).toBe(false);
  });
});
