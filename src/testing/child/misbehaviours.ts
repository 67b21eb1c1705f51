// Misbehaviour helpers of the Fen fake child: matching points, event floods, a busy loop.
import type { JsonObject } from '../../wire/index.js';
import type { MisbehaviourPoint } from '../scenario.js';
import type { FakeEventWriter } from './event-writer.js';
import type { Lifeline } from '../process/lifeline.js';

export function pointMatches(point: MisbehaviourPoint, at: MisbehaviourPoint): boolean {
  if (typeof point === 'string' || typeof at === 'string') return point === at;
  if ('turn' in point && 'turn' in at) return point.turn === at.turn;
  if ('control' in point && 'control' in at) return point.control === at.control;
  return false;
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

/**
 * Burns `ms` of this process's own CPU time in a busy loop (its RLIMIT_CPU may end it: SIGXCPU), checking
 * for its parent's death every 50 ms. Returns what the transcript records.
 */
export function spin(ms: number, lifeline: Lifeline): JsonObject {
  const start = process.cpuUsage().user / 1000;
  let checked = Date.now();
  while (process.cpuUsage().user / 1000 - start < ms) {
    if (Date.now() - checked < 50) continue;
    checked = Date.now();
    if (lifeline.parentGone()) break;
  }
  return { ms: Math.round(process.cpuUsage().user / 1000 - start) };
}
