// subvisor/queue end to end on a real redis-server: producer in this process, workers as separate processes.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createQueueSupervisor } from '../../../src/queue/index.js';
import type { QueueSupervisor, RemoteRun, WorkerProfile } from '../../../src/queue/index.js';
import { spawnRun, totalTokens } from '../../../src/index.js';
import type { RunEvent } from '../../../src/index.js';
import { liveFakeProcesses } from '../../../src/testing/index.js';
import { haveRedis, redisClients, startRedis } from '../../helpers/redis-server.js';
import type { RedisServer } from '../../helpers/redis-server.js';
import {
  cleanupQueueKit,
  eventually,
  fakeProfile,
  pausing,
  profileOf,
  startWorkerProcess,
  stopWorkerProcess,
} from '../../helpers/queue-kit.js';
import type { WorkerProcess } from '../../helpers/queue-kit.js';

// Without redis-server these are skipped; the suite says so once (test/global-setup.ts).
const redisMissing = !haveRedis();

async function collect(run: RemoteRun): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of run) events.push(event);
  return events;
}

describe.skipIf(redisMissing)('subvisor/queue on a real Redis', () => {
  let redis: RedisServer;
  let queueIndex = 0;
  const producers: QueueSupervisor[] = [];
  const workers: WorkerProcess[] = [];
  const tokens: string[] = [];

  function producer(queue: string, extra: { checkIntervalMs?: number } = {}): QueueSupervisor {
    const qs = createQueueSupervisor({ connection: redis.url, queue, ...extra });
    producers.push(qs);
    return qs;
  }

  async function worker(queue: string, profiles: Record<string, WorkerProfile & { token?: string }>, extra: Record<string, unknown> = {}): Promise<WorkerProcess> {
    for (const profile of Object.values(profiles)) if (profile.token !== undefined) tokens.push(profile.token);
    const plain = Object.fromEntries(Object.entries(profiles).map(([name, profile]) => [name, profileOf(profile)]));
    const started = await startWorkerProcess({ connection: redis.url, queue, profiles: plain, ...extra });
    workers.push(started);
    return started;
  }

  const nextQueue = () => `q${++queueIndex}`;

  beforeAll(async () => {
    redis = await startRedis({ persistent: true });
  });

  afterEach(async () => {
    await Promise.all(producers.splice(0).map((qs) => qs.close()));
    const codes = await Promise.all(workers.splice(0).map((w) => stopWorkerProcess(w)));
    for (const code of codes) expect([0, null]).toContain(code);
    // Every worker's and producer's Redis connection is closed, every fake child is gone.
    await eventually(() => redisClients(redis.port) === 0, 5000, 'Redis connections to close');
    for (const token of tokens.splice(0)) await eventually(() => liveFakeProcesses(token).length === 0, 15_000, `fake children of ${token} to be gone`);
    cleanupQueueKit();
  });

  afterAll(async () => {
    await redis?.dispose();
  });

  it('runs a task on a worker process: the same events and outcome as a local run', async () => {
    const queue = nextQueue();
    const echo = fakeProfile('echo');
    const w = await worker(queue, { echo });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'echo', task: 'hello over Redis' });
    expect(run.state).toBe('queued');
    const events = await collect(run);
    const outcome = await run.outcome;
    expect(outcome.status).toBe('done');
    expect(outcome.finalText).toBe('hello over Redis');
    // The same event types, in the same order, as the same profile run locally.
    const profile = profileOf(echo);
    const local = spawnRun({ command: profile.command, args: profile.args, env: profile.env, task: 'hello over Redis' });
    const localEvents: RunEvent[] = [];
    for await (const event of local) localEvents.push(event);
    expect(events.map((e) => e.type)).toEqual(localEvents.map((e) => e.type));
    expect(events.filter((e) => e.type === 'exit')).toHaveLength(1);
    expect(run.attempt).toBe(1);
    expect(run.worker).toBe(w.name);
    expect(run.state).toBe('done');
    expect((await run.taskAck)?.status).toBe('accepted');
    await w.waitFor(new RegExp(`^END ${run.id} done$`));
    // The producer's ledger: the outcome's protocol, model and usage, as the worker reported them.
    const tokens = totalTokens(outcome.usage);
    expect(tokens).toBeGreaterThan(0);
    expect(qs.usage()).toMatchObject({ total: { runs: 1, tokens, withoutUsage: 0 }, byProtocol: { fen: { runs: 1, tokens } }, byModel: { 'fake-1': { runs: 1 } }, byStatus: { done: { runs: 1 } }, complete: true });
  });

  it("applies the profile's tree limits on the worker: a child over memoryBytes ends memory-limit, its tree gone", async () => {
    const queue = nextQueue();
    const hog = { ...fakeProfile({ turns: [{ steps: [{ misbehave: { hog: { allocateBytes: 400 * 1024 * 1024 } } }, { pause: 60_000 }] }] }), treeLimits: { memoryBytes: 250 * 1024 * 1024, sampleIntervalMs: 100 } };
    await worker(queue, { hog });
    const outcome = await producer(queue).spawn({ profile: 'hog', task: 'allocate' }).outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'memory-limit', killed: true, limits: { exceeded: { limit: 'memoryBytes', max: 250 * 1024 * 1024 } } });
    await eventually(() => liveFakeProcesses(hog.token).length === 0, 15_000, 'the hog and its child gone');
  });

  it('relays controls to the worker and resolves them to the acks of the child', async () => {
    const queue = nextQueue();
    await worker(queue, { demo: fakeProfile('demo') });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'demo', task: 'Inspect the README' });
    await eventually(() => run.state === 'running', 20_000, 'the run to be running');
    const steer = await run.steer('mention the license too');
    expect(steer.status).toBe('accepted');
    expect(steer.seq).toBeGreaterThan(0);
    expect(await steer.delivery).toBe('injected');
    const outcome = await run.outcome;
    expect(outcome.status).toBe('done');
    await expect(run.steer('too late')).rejects.toMatchObject({ code: 'run-ended' });
  });

  it('cancels a running run within a second, and a cancelled run is not retried', async () => {
    const queue = nextQueue();
    const w = await worker(queue, { slow: fakeProfile(pausing(30_000)) });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'slow', task: 'take your time', attempts: 3 });
    await eventually(() => run.state === 'running', 20_000, 'the run to be running');
    const sent = Date.now();
    const ack = await run.cancel();
    const ackMs = Date.now() - sent;
    expect(ack.status).toBe('accepted');
    expect(ackMs).toBeLessThan(1000);
    const outcome = await run.outcome;
    expect(outcome.status).toBe('cancelled');
    expect(outcome.errorCode).toBe('aborted');
    await w.waitFor(new RegExp(`^END ${run.id} cancelled$`));
    const client = new Redis(redis.url);
    try {
      const { Queue } = await import('bullmq');
      const bull = new Queue(queue, { connection: client, prefix: 'subvisor' });
      expect(await bull.getJobState(run.id)).toBe('completed');
      await bull.close();
    } finally {
      client.disconnect();
    }
    expect(w.lines.filter((line) => line.startsWith(`START ${run.id}`))).toHaveLength(1);
  });

  it('cancels a queued run: removed from the queue, never started', async () => {
    const queue = nextQueue();
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'echo', task: 'never' });
    expect(qs.attach(run.id)).toBe(run);
    const ack = await run.cancel();
    expect(ack).toEqual({ status: 'accepted', seq: 0 });
    const outcome = await run.outcome;
    expect(outcome.status).toBe('cancelled');
    expect(outcome.error).toMatch(/never started/);
    expect(qs.usage()).toMatchObject({ total: { runs: 1, tokens: 0 }, byStatus: { cancelled: { runs: 1 } }, byProtocol: {}, complete: true });
    // A worker started afterwards does not run it.
    const w = await worker(queue, { echo: fakeProfile('echo') });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(w.lines.some((line) => line.startsWith('START'))).toBe(false);
  });

  it('starts one run for a duplicate enqueue (same run id), and both producers see it', async () => {
    const queue = nextQueue();
    const w = await worker(queue, { slow: fakeProfile(pausing(800)) });
    const a = producer(queue);
    const b = producer(queue);
    const first = a.spawn({ profile: 'slow', task: 'once', runId: 'dup-1' });
    const second = b.spawn({ profile: 'slow', task: 'twice?', runId: 'dup-1' });
    const [one, two] = await Promise.all([first.outcome, second.outcome]);
    expect(one.status).toBe('done');
    expect(two).toEqual(one);
    // Whichever enqueue reached Redis first is the run; the other one joined it.
    expect(['Done: once', 'Done: twice?']).toContain(one.finalText);
    expect(w.lines.filter((line) => line.startsWith('START dup-1'))).toHaveLength(1);
    // Still a duplicate after it finished (the job is kept for the retention time).
    const third = a.spawn({ profile: 'slow', task: 'thrice?', runId: 'dup-1' });
    expect((await third.outcome).finalText).toBe(one.finalText);
    const c = producer(queue);
    const fourth = c.spawn({ profile: 'slow', task: 'again?', runId: 'dup-1' });
    expect((await fourth.outcome).finalText).toBe(one.finalText);
    expect(w.lines.filter((line) => line.startsWith('START dup-1'))).toHaveLength(1);
  });

  it('fails a job naming an unknown profile clearly, without retrying it', async () => {
    const queue = nextQueue();
    const w = await worker(queue, { echo: fakeProfile('echo') });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'no-such-profile', task: 'x', attempts: 3 });
    const events = await collect(run);
    const outcome = await run.outcome;
    expect(outcome.status).toBe('failed');
    expect(outcome.spawnFailed).toBe(true);
    expect(outcome.error).toMatch(/unknown profile "no-such-profile".*"echo"/);
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'failed' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const client = new Redis(redis.url);
    try {
      const { Queue } = await import('bullmq');
      const bull = new Queue(queue, { connection: client, prefix: 'subvisor' });
      const job = await bull.getJob(run.id);
      expect(await job!.getState()).toBe('failed');
      expect(job!.attemptsStarted).toBe(1);
      await bull.close();
    } finally {
      client.disconnect();
    }
    expect(w.lines.some((line) => line.startsWith('START'))).toBe(false);
  });

  it('retries a run whose worker was killed (kill -9) on another worker, as a new attempt; the dead worker\'s tree is reaped', async () => {
    const queue = nextQueue();
    // Worker a's run must still be running when a is killed, however long worker b takes to start on a loaded
    // machine: a's 'slow' outlasts the test; b's, the retry, is a 3 s turn.
    const onA = fakeProfile(pausing(60_000));
    const onB = fakeProfile(pausing(3000));
    const fast = { lockDurationMs: 1500, stalledIntervalMs: 500 };
    const a = await worker(queue, { slow: onA }, fast);
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'slow', task: 'survive', attempts: 2 });
    const attempts: Array<[number, string]> = [];
    run.on('attempt', (attempt, name) => attempts.push([attempt, name]));
    const events: RunEvent[] = [];
    run.on('event', (event) => events.push(event));
    await a.waitFor(new RegExp(`^START ${run.id} 1$`));
    await eventually(() => run.state === 'running', 20_000, 'the run to be running');
    const b = await worker(queue, { slow: onB }, fast);
    const treeOfA = liveFakeProcesses(onA.token);
    expect(treeOfA.length).toBeGreaterThan(0);
    a.proc.kill('SIGKILL');
    const killedAt = Date.now();
    await a.exited;
    // subvisor's watchdog on the dead worker's machine reaps its child tree.
    await eventually(() => liveFakeProcesses(onA.token).length === 0, 15_000, 'the dead worker\'s tree to be reaped');
    const outcome = await run.outcome;
    const pickUpMs = Date.now() - killedAt;
    expect(outcome.status).toBe('done');
    expect(outcome.finalText).toBe('Done: survive');
    expect(attempts).toEqual([[1, a.name], [2, b.name]]);
    const notice = events.find((e) => e.type === 'info' && e['queue'] === 'attempt');
    expect(notice).toMatchObject({ attempt: 2, previous: 'lost', worker: b.name });
    expect(events.filter((e) => e.type === 'exit')).toHaveLength(1);
    await b.waitFor(new RegExp(`^START ${run.id} 2$`));
    console.log(`kill -9 to a done retry: ${pickUpMs} ms (lock 1500 ms, stalled check 500 ms, a 3 s turn)`);
  });

  it('fails a run whose worker died when its attempts are used up (worker-lost)', async () => {
    const queue = nextQueue();
    const profile = fakeProfile(pausing(3000));
    const fast = { lockDurationMs: 1000, stalledIntervalMs: 300 };
    const a = await worker(queue, { slow: profile }, fast);
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'slow', task: 'once only' });
    await a.waitFor(new RegExp(`^START ${run.id} 1$`));
    await worker(queue, { slow: profile }, fast);
    a.proc.kill('SIGKILL');
    const outcome = await run.outcome;
    expect(outcome.status).toBe('failed');
    expect(outcome.errorCode).toBe('worker-lost');
    expect(outcome.error).toMatch(/attempt 1 of 1 was lost/);
  });

  it('goes through a Redis restart mid-run: the run ends done, nothing lost, no second attempt', async () => {
    const queue = nextQueue();
    await worker(queue, { slow: fakeProfile(pausing(2500)) });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'slow', task: 'across a restart', attempts: 2 });
    const events: RunEvent[] = [];
    run.on('event', (event) => events.push(event));
    await eventually(() => run.state === 'running', 20_000, 'the run to be running');
    await redis.restart(300);
    const outcome = await run.outcome;
    expect(outcome.status).toBe('done');
    expect(outcome.finalText).toBe('Done: across a restart');
    expect(run.attempt).toBe(1);
    const types = events.map((e) => e.type);
    expect(types).toContain('ready');
    expect(types).toContain('result');
    expect(types.at(-1)).toBe('exit');
  });

  it('re-attaches after the producer went away and replays the run from its start', async () => {
    const queue = nextQueue();
    await worker(queue, { slow: fakeProfile(pausing(1500)) });
    const first = producer(queue);
    const run = first.spawn({ profile: 'slow', task: 'follow me' });
    await eventually(() => run.state === 'running', 20_000, 'the run to be running');
    await first.close();
    const second = producer(queue);
    const again = second.attach(run.id);
    const events = await collect(again);
    const outcome = await again.outcome;
    expect(outcome.status).toBe('done');
    expect(events.map((e) => e.type)).toContain('ready');
    expect(events.at(-1)?.type).toBe('exit');
    // Attaching after the end replays it all again.
    const third = producer(queue);
    const replay = await collect(third.attach(run.id));
    expect(replay.map((e) => e.type)).toEqual(events.map((e) => e.type));
    // An unknown run id ends failed, it does not hang.
    const ghost = third.attach('no-such-run');
    expect((await ghost.outcome).errorCode).toBe('worker-lost');
  });

  it('bounds each run stream (MAXLEN) and ships a large answer within the size limit', async () => {
    const queue = nextQueue();
    const chatty: WorkerProfile & { token: string } = fakeProfile({ name: 'chatty', turns: [{ steps: [{ text: 'x'.repeat(400), chunks: 400 }], answer: 'said a lot' }] });
    await worker(queue, { chatty, huge: fakeProfile('huge-answer', { maxAnswerBytes: 1000 }) });
    const qs = producer(queue);
    const run = qs.spawn({ profile: 'chatty', task: 'talk', retention: { maxEvents: 50 } });
    expect((await run.outcome).status).toBe('done');
    const client = new Redis(redis.url);
    try {
      expect(await client.xlen(`subvisor:${queue}:sv:events:${run.id}`)).toBeLessThanOrEqual(50);
      expect(await client.pttl(`subvisor:${queue}:sv:events:${run.id}`)).toBeGreaterThan(0);
    } finally {
      client.disconnect();
    }
    const late = await collect(producer(queue).attach(run.id));
    const trimmed = late.find((e) => e.type === 'info' && e['queue'] === 'trimmed');
    expect((trimmed as Record<string, unknown> | undefined)?.['missed'] as number).toBeGreaterThan(300);
    expect(late.at(-1)?.type).toBe('exit');

    const huge = qs.spawn({ profile: 'huge', task: 'write a lot' });
    const outcome = await huge.outcome;
    expect(outcome.status).toBe('done');
    expect(outcome.truncated).toBe(true);
    expect(Buffer.byteLength(outcome.finalText ?? '', 'utf8')).toBeLessThanOrEqual(1000);
    expect(Buffer.byteLength(outcome.finalText ?? '', 'utf8')).toBeGreaterThan(990);
    expect(outcome.truncationNote).toMatch(/cut to \d+ of its \d+ bytes/);
  });
});
