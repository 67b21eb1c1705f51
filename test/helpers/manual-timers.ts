// A clock a unit test moves by hand: the SetTimer of the drivers' shared layer, whose timers fire (in time order) when the test advances it.
import type { SetTimer } from '../../src/drivers/shared/pending-requests.js';

export function manualTimers() {
  const timers = new Set<{ at: number; fn: () => void }>();
  let now = 0;
  const setTimer: SetTimer = (fn, ms) => {
    const timer = { at: now + ms, fn };
    timers.add(timer);
    return { clear: () => void timers.delete(timer) };
  };
  const advance = (ms: number) => {
    now += ms;
    for (const timer of [...timers].sort((a, b) => a.at - b.at)) {
      if (timer.at > now || !timers.has(timer)) continue;
      timers.delete(timer);
      timer.fn();
    }
  };
  return { setTimer, advance, get live() { return timers.size; } };
}
