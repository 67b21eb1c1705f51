// The queue carries the caller's trace context to the worker: each attempt's span is a child of the span active at spawn(), and the child gets the attempt's context.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { context, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQueueSupervisor, startWorker } from '../../../src/queue/index.js';
import { haveRedis, startRedis } from '../../helpers/redis-server.js';
import type { RedisServer } from '../../helpers/redis-server.js';
import { cleanupQueueKit, fakeProfile, profileOf } from '../../helpers/queue-kit.js';
import { installTelemetry, isChildOf, traceparentOf } from '../../helpers/telemetry.js';
import type { TestTelemetry } from '../../helpers/telemetry.js';

// Without redis-server this is skipped; the suite says so once (test/global-setup.ts).
describe.skipIf(!haveRedis())('subvisor/queue and OpenTelemetry', () => {
  let redis: RedisServer;
  let telemetry: TestTelemetry;
  let dir: string;

  beforeAll(async () => {
    redis = await startRedis();
    telemetry = installTelemetry();
    dir = mkdtempSync(join(tmpdir(), 'queue-telemetry-'));
  });

  afterAll(async () => {
    await telemetry?.uninstall();
    await redis?.dispose();
    cleanupQueueKit();
    rmSync(dir, { recursive: true, force: true });
  });

  it("parents each attempt's span under the producer's active span, across Redis, and hands it to the child", async () => {
    const seen = join(dir, 'traceparent');
    const demo = profileOf(fakeProfile('demo'));
    // The profile's command, wrapped to write down the TRACEPARENT the child was started with.
    const profile = { ...demo, command: '/bin/sh', args: ['-c', 'printf %s "$TRACEPARENT" > "$0"; exec "$@"', seen, demo.command, ...(demo.args ?? [])] };
    const worker = startWorker({ connection: redis.url, queue: 'traced', profiles: { demo: profile } });
    const qs = createQueueSupervisor({ connection: redis.url, queue: 'traced' });
    try {
      await Promise.all([worker.ready(), qs.ready()]);
      const caller = trace.getTracer('test').startSpan('caller');
      const run = context.with(trace.setSpan(context.active(), caller), () => qs.spawn({ profile: 'demo', task: 'Inspect the README' }));
      caller.end();
      const outcome = await run.outcome;
      expect(outcome.status).toBe('done');
    } finally {
      await qs.close();
      await worker.close();
    }
    const callerSpan = telemetry.named('caller')[0]!;
    const [attempt] = telemetry.named('invoke_agent');
    expect(isChildOf(attempt!, callerSpan)).toBe(true);
    expect(attempt!.attributes).toMatchObject({ 'subvisor.protocol': 'fen', 'subvisor.run.attempt': 1, 'subvisor.run.status': 'done' });
    expect(readFileSync(seen, 'utf8')).toBe(traceparentOf(attempt!));
    const turns = telemetry.named('turn');
    expect(turns.length).toBeGreaterThan(0);
    expect(turns.every((turn) => isChildOf(turn, attempt!))).toBe(true);
    const tools = telemetry.spans().filter((span) => span.name.startsWith('execute_tool '));
    expect(tools.map((tool) => tool.name)).toEqual(['execute_tool read_file', 'execute_tool grep']);
    // The task's ack and the states came through the run host thread's messages.
    expect(attempt!.events.some((event) => event.name === 'subvisor.control' && event.attributes?.['subvisor.control.origin'] === 'task')).toBe(true);
    // The task prompt's writing, also relayed from the thread, comes before its answer.
    const taskEvents = attempt!.events.filter((event) => event.name.startsWith('subvisor.control') && event.attributes?.['subvisor.control.origin'] === 'task').map((event) => event.name);
    expect(taskEvents).toEqual(['subvisor.control.sent', 'subvisor.control']);
  });
});
