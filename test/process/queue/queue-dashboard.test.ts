// A queue producer's dashboard: with runs: 'queue' it finds the runs another producer enqueued, follows them to their end, and cancels one through the relayed control.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueueSupervisor, startWorker } from '../../../src/queue/index.js';
import { haveRedis, startRedis } from '../../helpers/redis-server.js';
import type { RedisServer } from '../../helpers/redis-server.js';
import { cleanupQueueKit, eventually, fakeProfile, pausing, profileOf } from '../../helpers/queue-kit.js';
import { call, control } from '../../helpers/dashboard-client.js';

interface Row {
  id: string;
  label: string;
  task: string;
  state: string;
  status: string | null;
}

// Without redis-server this is skipped; the suite says so once (test/global-setup.ts).
describe.skipIf(!haveRedis())('a queue dashboard', () => {
  let redis: RedisServer;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis?.dispose();
    cleanupQueueKit();
  });

  it("shows every run of the queue, whoever enqueued it, and cancels one from the page's API", async () => {
    const queue = 'board';
    const worker = startWorker({
      connection: redis.url,
      queue,
      concurrency: 2,
      profiles: { echo: profileOf(fakeProfile('echo')), slow: profileOf(fakeProfile(pausing(60_000), { killGraceMs: 300 })) },
    });
    const enqueuer = createQueueSupervisor({ connection: redis.url, queue });
    const watcher = createQueueSupervisor({ connection: redis.url, queue });
    const dash = await watcher.serveDashboard({ runs: 'queue', discoverIntervalMs: 200 });
    try {
      await Promise.all([worker.ready(), enqueuer.ready(), watcher.ready()]);
      const quick = enqueuer.spawn({ profile: 'echo', task: 'hello from the other producer' });
      const slow = enqueuer.spawn({ profile: 'slow', task: 'take your time' });
      const rows = async () => (JSON.parse((await call(dash.url, '/api/board')).body) as { kind: string; rows: Row[] }).rows;
      await eventually(async () => (await rows()).some((row) => row.id === quick.id && row.status === 'done'), 20_000, 'the quick run to show done');
      await eventually(async () => (await rows()).some((row) => row.id === slow.id && row.state === 'running'), 20_000, 'the slow run to show running');
      const shown = await rows();
      expect(shown.find((row) => row.id === quick.id)).toMatchObject({ label: 'echo', task: 'hello from the other producer' });
      expect(shown.find((row) => row.id === slow.id)).toMatchObject({ label: 'slow', task: 'take your time' });

      const cancel = await control(dash.url, slow.id, 'cancel');
      expect(JSON.parse(cancel.body)).toMatchObject({ ack: { status: 'accepted' } });
      // The enqueuing producer sees the same end.
      expect(await slow.outcome).toMatchObject({ status: 'cancelled' });
      await eventually(async () => (await rows()).some((row) => row.id === slow.id && row.status === 'cancelled'), 10_000, 'the cancel to show');
    } finally {
      await dash.close();
      await Promise.all([enqueuer.close(), watcher.close()]);
      // A misspelt mode is refused (it would otherwise close in the default mode), and the worker still closes.
      await expect(worker.close('hand-bak' as never)).rejects.toThrow(`close(mode): mode must be 'finish' or 'hand-back', not "hand-bak"`);
      await worker.close();
    }
  });
});
