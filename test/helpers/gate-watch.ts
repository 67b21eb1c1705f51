// Test helper: a pool's rate-limit gate and its runs' starts on one timeline, and the checks that nothing started while it was shut and it reopened one run first.
import { expect } from 'vitest';
import type { RateLimitGateState, Supervisor } from '../../src/index.js';

/** A gate's change and when the test heard it (epoch ms). */
export type HeardGate = RateLimitGateState & { heardAt: number };

/**
 * Records every change of `sup`'s gates and every run start (epoch ms) from now on. A real-agent test (fakeModel
 * answering 429 to the first N requests) uses it as the Fen one does: `const watch = watchGate(sup)`, then, once
 * every run ended, `watch.expectHeldWhileShut()`.
 */
export function watchGate(sup: Supervisor) {
  const changes: HeardGate[] = [];
  const starts: number[] = [];
  sup.on('rate-limit', (gate) => changes.push({ ...gate, heardAt: Date.now() }));
  sup.on('start', () => starts.push(Date.now()));
  return {
    changes,
    starts,
    /** Each change of a gate's state (runs coming and going aside): `[state, allowance]`. */
    steps(): Array<[string, number | undefined]> {
      return changes
        .filter((change, index) => index === 0 || change.state !== changes[index - 1]!.state || change.allowance !== changes[index - 1]!.allowance)
        .map((change) => [change.state, change.allowance]);
    },
    /**
     * The gate shut at least once; no run started between its shutting and the time it named; and of the runs
     * that started after, at most one before the reopening's second step.
     */
    expectHeldWhileShut(): void {
      const shut = changes.find((change) => change.state === 'shut');
      expect(shut, 'the gate never shut').toBeDefined();
      const until = Math.max(...changes.filter((change) => change.state === 'shut').map((change) => change.until!));
      expect(starts.filter((at) => at >= shut!.heardAt && at < until)).toEqual([]);
      const secondStep = changes.find((change) => change.heardAt >= until && (change.state === 'open' || (change.allowance ?? 0) >= 2));
      expect(starts.filter((at) => at >= until && at < (secondStep?.heardAt ?? Infinity)).length).toBeLessThanOrEqual(1);
    },
  };
}
