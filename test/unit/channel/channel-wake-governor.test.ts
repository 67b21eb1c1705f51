// The process-wide wake-up governor under hand-given times: when busy tails are coalesced, on which level, and when they watch again.
import { describe, expect, it } from 'vitest';
import { WakeGovernor } from '../../../src/channel/wake-governor.js';

/** 500/s to enter (125 per 250 ms window), 150/s to leave. */
const governor = () => new WakeGovernor({ levels: [{ enterPerSecond: 500, leavePerSecond: 150 }], windowMs: 250 });
/** The process's two levels: congested from 500/s (left below 150/s), crowded from 2000/s (left below 1000/s). */
const twoLevels = () =>
  new WakeGovernor({
    levels: [
      { enterPerSecond: 500, leavePerSecond: 150 },
      { enterPerSecond: 2000, leavePerSecond: 1000 },
    ],
    windowMs: 250,
  });

/** `count` wake-ups spread evenly over [from, from + spanMs). */
function wakes(target: WakeGovernor, from: number, spanMs: number, count: number): void {
  for (let i = 0; i < count; i++) target.wake(from + (i * spanMs) / count);
}

describe('wake governor', () => {
  it('is not congested by a single fast stream (400 wake-ups/s)', () => {
    const g = governor();
    wakes(g, 0, 2000, 800);
    expect(g.level(2000)).toBe(0);
  });

  it('turns congested within one window once wake-ups reach the entry rate, without waiting for the window to end', () => {
    const g = governor();
    wakes(g, 0, 100, 124);
    expect(g.level(100)).toBe(0);
    g.wake(101);
    expect(g.level(101)).toBe(1);
  });

  it('stays congested between the two rates (hysteresis), and leaves below the lower one', () => {
    const g = governor();
    wakes(g, 0, 250, 200);
    expect(g.level(250)).toBe(1);
    // 200/s: below the entry rate, above the leaving one.
    wakes(g, 250, 1000, 200);
    expect(g.level(1250)).toBe(1);
    // 100/s: below both, judged when its window ends.
    wakes(g, 1250, 200, 20);
    expect(g.level(1450)).toBe(1);
    expect(g.level(1500)).toBe(0);
  });

  it('judges a window by the time that really passed: a long silence after a burst ends congestion', () => {
    const g = governor();
    wakes(g, 0, 250, 200);
    expect(g.level(250)).toBe(1);
    g.wake(260);
    expect(g.level(10_000)).toBe(0);
  });

  it('a clock set back starts a new window instead of freezing the state until it catches up', () => {
    const g = governor();
    wakes(g, 10_000, 250, 200);
    expect(g.level(10_250)).toBe(1);
    // An hour back: the next window is judged from there.
    wakes(g, 10_000 - 3_600_000, 250, 10);
    expect(g.level(10_000 - 3_600_000 + 300)).toBe(0);
  });

  it('climbs both levels from one count, within a window, and steps down one level at a time', () => {
    const g = twoLevels();
    // 125 wake-ups in a window reach the first level, 500 the second, without waiting for the window to end.
    wakes(g, 0, 100, 125);
    expect(g.level(100)).toBe(1);
    wakes(g, 100, 100, 375);
    expect(g.level(200)).toBe(2);
    // 1200/s: below crowded's entry, above its leaving rate: still crowded.
    wakes(g, 250, 1000, 1200);
    expect(g.level(1250)).toBe(2);
    // 600/s: below crowded's leaving rate, above congestion's: back to congested only.
    wakes(g, 1250, 250, 150);
    expect(g.level(1500)).toBe(1);
    // 40/s: calm.
    wakes(g, 1500, 250, 10);
    expect(g.level(1750)).toBe(0);
  });

  it('refuses levels that do not rise, or that are left above the rate that enters them', () => {
    expect(() => new WakeGovernor({ levels: [{ enterPerSecond: 100, leavePerSecond: 200 }], windowMs: 250 })).toThrow(RangeError);
    expect(() =>
      new WakeGovernor({
        levels: [
          { enterPerSecond: 500, leavePerSecond: 150 },
          { enterPerSecond: 400, leavePerSecond: 300 },
        ],
        windowMs: 250,
      }),
    ).toThrow(RangeError);
  });
});
