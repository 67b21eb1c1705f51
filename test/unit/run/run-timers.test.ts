// Unit tests of RunTimers under vitest's fake clock: one timer per name, kept once fired, far deadlines re-armed.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RunTimers } from '../../../src/run/run-timers.js';

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(0);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('RunTimers', () => {
  it('fires once after the wait, and stays set until cleared', () => {
    const timers = new RunTimers();
    const fire = vi.fn();
    timers.after('ready', 100, fire);
    vi.advanceTimersByTime(99);
    expect(fire).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fire).toHaveBeenCalledTimes(1);
    expect(timers.isSet('ready')).toBe(true);
    timers.clear('ready');
    expect(timers.isSet('ready')).toBe(false);
    vi.advanceTimersByTime(1_000);
    expect(fire).toHaveBeenCalledTimes(1);
  });

  it('a timer of the same name replaces the first; clearAll stops every one', () => {
    const timers = new RunTimers();
    const first = vi.fn();
    const second = vi.fn();
    const other = vi.fn();
    timers.after('finalize', 100, first);
    timers.after('finalize', 200, second);
    timers.after('ready', 150, other);
    vi.advanceTimersByTime(120);
    timers.clearAll();
    vi.advanceTimersByTime(1_000);
    expect(first).not.toHaveBeenCalled();
    expect(second).not.toHaveBeenCalled();
    expect(other).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a deadline past setTimeout\'s limit (2^31-1 ms) fires at its instant, not at once', () => {
    const timers = new RunTimers();
    const fire = vi.fn();
    const at = 3 * 2 ** 31;
    timers.at('deadline', at, fire);
    vi.advanceTimersByTime(2 ** 31);
    expect(fire).not.toHaveBeenCalled();
    vi.advanceTimersByTime(at - 2 ** 31 - 1);
    expect(fire).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fire).toHaveBeenCalledTimes(1);
    // A deadline already passed fires on the next turn.
    timers.at('deadline', 0, fire);
    vi.advanceTimersByTime(0);
    expect(fire).toHaveBeenCalledTimes(2);
  });
});
