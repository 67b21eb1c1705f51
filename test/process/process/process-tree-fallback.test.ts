// The process-tree path of systems without /proc (macOS, Windows), forced on Linux: the group plus tree-kill's walk from the root.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import type { RunEvent } from '../../../src/index.js';
import { useProcFs } from '../../../src/process/proc-table.js';
import { fakeChild, waitUntilGone } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { BOUND_MS, FAST_CHILD, grandchildPidOf, expectEmptyStateDir, freshStateDir, within } from '../../helpers/spawn-harness.js';
import { procInfo } from '../../helpers/spawn-procs.js';

beforeAll(() => {
  expect(useProcFs(false), 'this Linux has /proc to begin with').toBe(true);
});
afterAll(() => {
  useProcFs(true);
});

/** A child and grandchildren that ignore SIGTERM, one grandchild in its own session: only SIGKILL through a walk gets them all. */
const STUBBORN: Scenario = {
  ignore: ['cancel', 'sigterm'],
  turns: [
    {
      steps: [
        { misbehave: [{ grandchildren: { count: 1, session: false } }, { grandchildren: { count: 1, session: true } }] },
        { pause: 60_000 },
      ],
    },
  ],
};

describe('without /proc', () => {
  it('a run ends as usual', async () => {
    const stateDir = freshStateDir();
    const child = fakeChild({ turns: [{ answer: { echo: true, prefix: 'echo:' } }] }, FAST_CHILD);
    try {
      // A generous grace: without /proc an exiting group member counts until it is reaped, and a run that
      // ends by itself must not need the ladder even on a loaded machine.
      const run = spawnRun({ ...child, task: 'hi', stateDir, killGraceMs: 5_000 });
      const outcome = await within(run.outcome, BOUND_MS, 'outcome');
      expect(outcome).toMatchObject({ status: 'done', finalText: 'echo:hi', killed: false });
      expect(await waitUntilGone(() => child.livePids(), 5_000)).toEqual([]);
      expectEmptyStateDir(stateDir);
    } finally {
      child.cleanup();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('cancel of a stubborn tree: tree-kill walks from the live root and SIGKILL reaches the grandchild in its own session', async () => {
    const stateDir = freshStateDir();
    const child = fakeChild(STUBBORN, FAST_CHILD);
    const grandchildren: number[] = [];
    try {
      const run = spawnRun({ ...child, task: 'go', stateDir, killGraceMs: 150 });
      await within(
        new Promise<void>((resolve) =>
          run.on('event', (event: RunEvent) => {
            const pid = grandchildPidOf(event);
            if (pid !== undefined) grandchildren.push(pid);
            if (grandchildren.length === 2) resolve();
          }),
        ),
        BOUND_MS,
        'two grandchildren',
      );
      expect(grandchildren.filter((pid) => procInfo(pid)?.sid === pid), 'one grandchild leads its own session').toHaveLength(1);
      const outcome = await within(run.cancel().then(() => run.outcome), BOUND_MS, 'outcome');
      expect(outcome).toMatchObject({ status: 'cancelled', killed: true, escalated: true });
      expect(await waitUntilGone(() => [...grandchildren, ...child.livePids()], 5_000)).toEqual([]);
      expectEmptyStateDir(stateDir);
    } finally {
      for (const pid of [...grandchildren, ...child.livePids()]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      child.cleanup();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
