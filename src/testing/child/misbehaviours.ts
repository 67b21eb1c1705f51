// Misbehaviour helpers: matching points, grandchildren that ignore SIGTERM, and event floods.
import { spawn } from 'node:child_process';
import type { JsonObject } from '../../wire/index.js';
import type { MisbehaviourPoint } from '../scenario.js';
import type { FakeEventWriter } from './event-writer.js';
import type { Lifeline } from './lifeline.js';

/** Grandchildren live at most this long, so no test can leak them for good. */
export const GRANDCHILD_MAX_LIFE_MS = 60_000;
/** How long the child waits for a grandchild to install its SIGTERM handler (a loaded machine starts Node slowly). */
const GRANDCHILD_READY_MS = 30_000;
/** The argument that turns the fake-child program into a grandchild. */
export const GRANDCHILD_FLAG = '--grandchild';

export function pointMatches(point: MisbehaviourPoint, at: MisbehaviourPoint): boolean {
  if (typeof point === 'string' || typeof at === 'string') return point === at;
  if ('turn' in point && 'turn' in at) return point.turn === at.turn;
  if ('control' in point && 'control' in at) return point.control === at.control;
  return false;
}

export interface GrandchildReport {
  pid?: number;
  ownSession: boolean;
  ready: boolean;
  error?: string;
}

/**
 * Spawns one grandchild running this program with `--grandchild`. It reports `ready` on its stdout once its
 * SIGTERM handler is in place; `settled` is called then (or on failure or after 30 s), so a test's SIGTERM can
 * never land before the handler.
 */
export function spawnGrandchild(options: { session: boolean; lifeMs: number }, settled: (report: GrandchildReport) => void): void {
  const lifeMs = Math.min(Math.max(0, options.lifeMs), GRANDCHILD_MAX_LIFE_MS);
  const child = spawn(process.execPath, [process.argv[1] ?? '', GRANDCHILD_FLAG, String(lifeMs)], {
    detached: options.session,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let done = false;
  const settle = (ready: boolean, error?: string) => {
    if (done) return;
    done = true;
    clearTimeout(timeout);
    child.stdout?.destroy();
    const report: GrandchildReport = { ownSession: options.session, ready };
    if (child.pid !== undefined) report.pid = child.pid;
    if (error !== undefined) report.error = error;
    settled(report);
  };
  const timeout = setTimeout(() => settle(false, 'not ready in time'), GRANDCHILD_READY_MS);
  child.stdout?.once('data', () => settle(true));
  child.on('error', (error) => settle(false, error.message));
  child.on('exit', () => settle(false, 'exited before it was ready'));
  child.unref();
}

/** The grandchild program: ignores SIGTERM, says ready, and exits on its own after its capped life. */
export function runGrandchild(lifeArgument: string | undefined): void {
  const lifeMs = Math.min(Math.max(0, Number(lifeArgument) || GRANDCHILD_MAX_LIFE_MS), GRANDCHILD_MAX_LIFE_MS);
  process.on('SIGTERM', () => undefined);
  setTimeout(() => process.exit(0), lifeMs);
  // Nobody reads after `ready`, so nothing else is written (and a closed pipe is no error).
  process.stdout.on('error', () => undefined);
  process.stdout.write('ready\n');
}

/**
 * Writes `count` assistant-text-delta lines of about `bytes` bytes (newline included), as fast as possible or
 * at `rate` per second; `stamp` adds `"mono-ns"` (CLOCK_MONOTONIC via hrtime) taken right before each write.
 * Returns what the transcript records instead of one entry per line.
 */
export function flood(
  writer: FakeEventWriter,
  lifeline: Lifeline,
  runId: string,
  options: { count: number; bytes?: number; rate?: number; stamp?: boolean },
): JsonObject {
  const count = Math.max(0, Math.floor(options.count));
  const target = Math.max(0, options.bytes ?? 200);
  const sample = {
    v: 1,
    seq: writer.lastSeq + count,
    type: 'assistant-text-delta',
    run: runId,
    timestamp: new Date().toISOString(),
    'content-index': 0,
    delta: '',
    ...(options.stamp ? { 'mono-ns': process.hrtime.bigint().toString() } : {}),
  };
  const overhead = Buffer.byteLength(JSON.stringify(sample)) + 1;
  const delta = 'x'.repeat(Math.max(0, target - overhead));
  const startedAt = Date.now();
  let written = 0;
  for (let index = 0; index < count; index += 1) {
    if (options.rate !== undefined && options.rate > 0) {
      const wait = startedAt + (index * 1000) / options.rate - Date.now();
      if (wait >= 1 && !lifeline.sleep(wait)) break;
    }
    const payload: Record<string, unknown> = { 'content-index': 0, delta };
    if (options.stamp) payload['mono-ns'] = process.hrtime.bigint().toString();
    if (writer.emit('assistant-text-delta', payload, true)) written += 1;
    if ((index & 1023) === 1023 && lifeline.parentGone()) break;
  }
  return { count, written, bytes: target, ms: Date.now() - startedAt };
}
