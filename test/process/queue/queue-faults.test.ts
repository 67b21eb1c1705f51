// subvisor/queue under worker shutdown and a Redis outage longer than the lock (a partition), on a real redis-server.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createQueueSupervisor } from '../../../src/queue/index.js';
import type { QueueSupervisor, WorkerProfile } from '../../../src/queue/index.js';
import type { RunEvent } from '../../../src/index.js';
import { liveFakeProcesses } from '../../../src/testing/index.js';
import { haveRedis, redisClients, startRedis } from '../../helpers/redis-server.js';
import type { RedisServer } from '../../helpers/redis-server.js';
import { cleanupQueueKit, eventually, fakeProfile, pausing, profileOf, startWorkerProcess, stopWorkerProcess } from '../../helpers/queue-kit.js';
import type { WorkerProcess } from '../../helpers/queue-kit.js';

// Without redis-server these are skipped; the suite says so once (test/global-setup.ts).
const redisMissing = !haveRedis();

describe.skipIf(redisMissing)('subvisor/queue: shutdown and outages', () => {
  let redis: RedisServer;
  let queueIndex = 0;
  const producers: QueueSupervisor[] = [];
  const workers: WorkerProcess[] = [];
  const tokens: string[] = [];

  async function worker(queue: string, profiles: Record<string, WorkerProfile & { token: string }>, extra: Record<string, unknown> = {}): Promise<WorkerProcess> {
    for (const profile of Object.values(profiles)) tokens.push(profile.token);
    const plain = Object.fromEntries(Object.entries(profiles).map(([name, profile]) => [name, profileOf(profile)]));
    const started = await startWorkerProcess({ connection: redis.url, queue, profiles: plain, ...extra });
    workers.push(started);
    return started;
  }

  function producer(queue: string): QueueSupervisor {
    const qs = createQueueSupervisor({ connection: redis.url, queue, checkIntervalMs: 500 });
    producers.push(qs);
    return qs;
  }

  beforeAll(async () => {
    redis = await startRedis({ persistent: true });
  });

  afterEach(async () => {
    await Promise.all(producers.splice(0).map((qs) => qs.close()));
    await Promise.all(workers.splice(0).map((w) => stopWorkerProcess(w)));
    await eventually(() => redisClients(redis.port) === 0, 5000, 'Redis connections to close');
    for (const token of tokens.splice(0)) await eventually(() => liveFakeProcesses(token).length === 0, 15_000, `fake children of ${token} to be gone`);
    cleanupQueueKit();
  });

  afterAll(async () => {
    await redis?.dispose();
  });

  it('SIGTERM (shutdown finish): the worker takes no new job, lets its run end, and exits 0', async () => {
    const queue = `f${++queueIndex}`;
    const profile = fakeProfile(pausing(1500));
    const w = await worker(queue, { slow: profile });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'slow', task: 'finish me' });
    await w.waitFor(new RegExp(`^START ${run.id} 1$`));
    w.proc.kill('SIGTERM');
    const later = qs.spawn({ profile: 'slow', task: 'not on this worker' });
    expect(await w.exited).toBe(0);
    expect((await run.outcome).status).toBe('done');
    expect(w.lines.some((line) => line.startsWith(`START ${later.id}`))).toBe(false);
    expect(later.state).toBe('queued');
    // Another worker takes the queued one.
    await worker(queue, { slow: profile });
    expect((await later.outcome).finalText).toBe('Done: not on this worker');
  });

  it('SIGTERM (shutdown hand-back): the run goes back to the queue and another worker runs it, as the same attempt', async () => {
    const queue = `f${++queueIndex}`;
    const profile = fakeProfile(pausing(30_000));
    const quick = fakeProfile(pausing(300));
    const a = await worker(queue, { slow: profile }, { shutdown: 'hand-back' });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'slow', task: 'hand me back' });
    const events: RunEvent[] = [];
    run.on('event', (event) => events.push(event));
    await eventually(() => run.state === 'running', 20_000, 'the run to be running');
    a.proc.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    await a.waitFor(new RegExp(`^END ${run.id} handed-back$`));
    await eventually(() => events.some((e) => e.type === 'info' && e['queue'] === 'handed-back'), 5000, 'the hand-back notice');
    expect(run.state).toBe('queued');
    // The next worker's profile of that name finishes quickly.
    const b = await worker(queue, { slow: quick });
    const outcome = await run.outcome;
    expect(outcome.status).toBe('done');
    expect(run.attempt).toBe(1);
    expect(run.worker).toBe(b.name);
    expect(events.filter((e) => e.type === 'exit')).toHaveLength(1);
  });

  it('a Redis outage longer than the lock (a partition): the worker stops its run, and the run is retried as a new attempt', async () => {
    const queue = `f${++queueIndex}`;
    const profile = fakeProfile(pausing(5000));
    const w = await worker(queue, { slow: profile }, { lockDurationMs: 1000, stalledIntervalMs: 300 });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'slow', task: 'partitioned', attempts: 2 });
    await eventually(() => run.state === 'running', 20_000, 'the run to be running');
    await redis.restart(2500);
    const outcome = await run.outcome;
    expect(outcome.status).toBe('done');
    expect(run.attempt).toBe(2);
    expect(w.lines.filter((line) => line.startsWith(`START ${run.id}`))).toEqual([`START ${run.id} 1`, `START ${run.id} 2`]);
    expect(w.lines).toContain(`END ${run.id} lost`);
  });

  it('retries an attempt that ended failed, up to attempts, as a new attempt after the backoff', async () => {
    const queue = `f${++queueIndex}`;
    const w = await worker(queue, { crash: fakeProfile('crash') });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'crash', task: 'fail twice', attempts: 2, backoffMs: 100 });
    const events: RunEvent[] = [];
    for await (const event of run) events.push(event);
    const outcome = await run.outcome;
    expect(outcome.status).toBe('failed');
    expect(run.attempt).toBe(2);
    expect(events.find((e) => e.type === 'info' && e['queue'] === 'retry')).toMatchObject({ attempt: 1 });
    expect(events.find((e) => e.type === 'info' && e['queue'] === 'attempt')).toMatchObject({ attempt: 2, previous: 'retried' });
    expect(events.filter((e) => e.type === 'exit')).toHaveLength(1);
    expect(w.lines.filter((line) => line.startsWith(`START ${run.id}`))).toEqual([`START ${run.id} 1`, `START ${run.id} 2`]);
    // The producer's ledger has both attempts: the retried one's outcome came with its retry record.
    expect(qs.usage().byStatus.failed?.runs).toBe(2);
  });
});
