// A child that swaps its event file (rename over, delete and re-create, truncate and rewrite) fails the run promptly.
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../../src/index.js';
import { hostileRun } from '../../../helpers/hostile-run.js';
import { within } from '../../../helpers/spawn-harness.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

describe('the event file stays the same file', () => {
  it.each([
    { how: 'rename', codes: ['event-file-replaced'] },
    { how: 'recreate', codes: ['event-file-replaced'] },
    // Depending on when the parent looks, it sees the file shrunk or already rewritten past its offset.
    { how: 'truncate', codes: ['event-file-replaced', 'event-file-truncated'] },
  ])('$how: a fatal protocol failure, found while the child still runs (it waits for a cancel)', async ({ how, codes }) => {
    const hostile = hostileRun(
      [
        { ready: true },
        { ack: 'task' },
        { flood: { count: 20, bytes: 200 } },
        { sleep: 300 },
        { replace: how },
        // Forged lines in the new file, then the child waits: only detection (and its cancel) ends the run.
        { flood: { count: 40, bytes: 200 } },
        { hang: true },
      ],
      { keepAlive: true },
    );
    cleanups.push(hostile.cleanup);
    const events: RunEvent[] = [];
    hostile.run.on('event', (event) => events.push(event));
    const started = Date.now();
    const outcome = await within(hostile.run.outcome, 20_000, 'outcome');
    expect(outcome.status).toBe('failed');
    expect(codes).toContain(outcome.errorCode);
    expect(outcome.error).toContain('protocol failure');
    // Promptly: within a few safety polls (500 ms each), far from any timeout (none is set).
    expect(Date.now() - started).toBeLessThan(15_000);
    const rejected = events.filter((event) => event.type === 'rejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0]).toMatchObject({ fatal: true });
    // Nothing of the forged file was taken as events: 20 deltas before the swap, none after.
    expect(events.filter((event) => event.type === 'assistant-text-delta').length).toBeLessThanOrEqual(20);
    expect(events.at(-1)).toMatchObject({ type: 'exit' });
    expect(hostile.leftovers()).toEqual([]);
  });
});

describe('a last line without its newline', () => {
  it('is one rejected line, never decoded: an exit written so ends failed, no-exit-event, the result kept', async () => {
    const hostile = hostileRun([{ ready: true }, { ack: 'task' }, { result: 'the answer' }, { exitUnterminated: 'done' }]);
    cleanups.push(hostile.cleanup);
    const events: RunEvent[] = [];
    hostile.run.on('event', (event) => events.push(event));
    const outcome = await within(hostile.run.outcome, 20_000, 'outcome');
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'no-exit-event', finalText: 'the answer', rejectedLines: 1 });
    const rejected = events.filter((event) => event.type === 'rejected');
    expect(rejected).toEqual([expect.objectContaining({ code: 'malformed', fatal: false })]);
    expect(rejected[0]).toMatchObject({ reason: expect.stringContaining('incomplete line') });
    expect(events.filter((event) => event.type === 'exit')).toEqual([expect.objectContaining({ synthetic: true, status: 'failed' })]);
    expect(hostile.leftovers()).toEqual([]);
  });
});
