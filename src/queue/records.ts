// The Redis side of a queued run: key names, the job's data, the control messages and the stream records, with their checks.
import type { Ack, AckOrigin, Delivery, Outcome, RunEvent, RunHandleState } from '../api/types.js';
import { checkedCarrier } from '../observe/carriers.js';

/** The Redis keys and channel of one queue. */
export interface QueueKeys {
  /** BullMQ's prefix (its keys are `<prefix>:<queue>:...`). */
  prefix: string;
  queue: string;
  /** The pub/sub channel that carries controls from producers to workers. */
  controls: string;
  /** The stream of one run's records. */
  events(runId: string): string;
  /** Set when a run is cancelled: a worker that starts it later ends it at once. */
  cancelled(runId: string): string;
}

export const DEFAULT_PREFIX = 'subvisor';

export function queueKeys(queue: string, prefix = DEFAULT_PREFIX): QueueKeys {
  if (typeof queue !== 'string' || queue.length === 0 || /[\s:]/.test(queue)) {
    throw new TypeError('queue must be a non-empty name without spaces or colons');
  }
  if (typeof prefix !== 'string' || prefix.length === 0 || /\s/.test(prefix)) throw new TypeError('prefix must be a non-empty string without spaces');
  const base = `${prefix}:${queue}:sv`;
  return {
    prefix,
    queue,
    controls: `${base}:controls`,
    events: (runId) => `${base}:events:${runId}`,
    cancelled: (runId) => `${base}:cancelled:${runId}`,
  };
}

export const DEFAULT_RETENTION = { maxEvents: 10_000, ttlMs: 3_600_000 } as const;
const MAX_EVENTS_CAP = 1_000_000;
const TTL_CAP_MS = 30 * 24 * 3_600_000;

/** What a job carries: everything the producer may choose. Read back on the worker as untrusted input. */
export interface JobData {
  v: 1;
  profile: string;
  task?: string;
  timeoutMs?: number;
  keepAlive?: boolean;
  attempts: number;
  maxEvents: number;
  ttlMs: number;
  /** Attempts given back to the queue by a worker shutting down (they do not count). */
  handedBack?: number;
  /** The producer's trace context (`traceparent`, `tracestate`): each attempt's span is its child. */
  trace?: Record<string, string>;
}

/** Checks a job's data as a worker receives it; returns a reason when it is unusable. */
export function checkJobData(data: unknown): { ok: true; data: JobData } | { ok: false; reason: string } {
  if (typeof data !== 'object' || data === null) return { ok: false, reason: 'the job data is not an object' };
  const d = data as Record<string, unknown>;
  if (d['v'] !== 1) return { ok: false, reason: `the job data has version ${String(d['v'])}; this worker reads version 1` };
  if (typeof d['profile'] !== 'string' || d['profile'].length === 0) return { ok: false, reason: 'the job names no profile' };
  if (d['task'] !== undefined && typeof d['task'] !== 'string') return { ok: false, reason: 'the job task is not a string' };
  if (d['timeoutMs'] !== undefined && !positive(d['timeoutMs'])) return { ok: false, reason: 'the job timeoutMs is not a positive number' };
  if (d['keepAlive'] !== undefined && typeof d['keepAlive'] !== 'boolean') return { ok: false, reason: 'the job keepAlive is not a boolean' };
  if (!isCount(d['attempts'], 1_000)) return { ok: false, reason: 'the job attempts is not an integer from 1 to 1000' };
  if (!isCount(d['maxEvents'], MAX_EVENTS_CAP)) return { ok: false, reason: `the job maxEvents is not an integer from 1 to ${MAX_EVENTS_CAP}` };
  if (!positive(d['ttlMs']) || (d['ttlMs'] as number) > TTL_CAP_MS) return { ok: false, reason: 'the job ttlMs is not a positive number of at most 30 days' };
  if (d['handedBack'] !== undefined && !isCount(d['handedBack'], Number.MAX_SAFE_INTEGER, 0)) return { ok: false, reason: 'the job handedBack is not a count' };
  // A trace context that is not one is dropped, never fatal: the run goes on, untraced.
  const { trace, ...rest } = d;
  const carrier = checkedCarrier(trace);
  return { ok: true, data: (carrier === undefined ? rest : { ...rest, trace: carrier }) as unknown as JobData };
}

/** Checks retention options on the producer (throws, like any invalid spawn option). */
export function resolveRetention(...layers: Array<{ maxEvents?: number; ttlMs?: number } | undefined>): { maxEvents: number; ttlMs: number } {
  const out: { maxEvents: number; ttlMs: number } = { ...DEFAULT_RETENTION };
  for (const layer of layers) {
    if (layer === undefined) continue;
    if (typeof layer !== 'object' || layer === null) throw new TypeError('retention must be an object');
    if (layer.maxEvents !== undefined) {
      if (!isCount(layer.maxEvents, MAX_EVENTS_CAP)) throw new RangeError(`retention.maxEvents must be an integer from 1 to ${MAX_EVENTS_CAP}`);
      out.maxEvents = layer.maxEvents;
    }
    if (layer.ttlMs !== undefined) {
      if (!positive(layer.ttlMs) || layer.ttlMs > TTL_CAP_MS) throw new RangeError('retention.ttlMs must be a positive number of milliseconds, at most 30 days');
      out.ttlMs = layer.ttlMs;
    }
  }
  return out;
}

function positive(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

function isCount(value: unknown, max: number, min = 1): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** The controls a producer can relay. `kill` is the handle's `kill()` (no wire control). */
export type RelayedControl = 'prompt' | 'steer' | 'follow-up' | 'finalize' | 'cancel' | 'close' | 'kill';
export const RELAYED_CONTROLS: readonly RelayedControl[] = ['prompt', 'steer', 'follow-up', 'finalize', 'cancel', 'close', 'kill'];

/** A control on the pub/sub channel. */
export interface ControlMessage {
  runId: string;
  /** The producer's request id: the worker's `ack` record names it. */
  req: string;
  control: RelayedControl;
  text?: string;
}

export function parseControlMessage(text: string): ControlMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const m = value as Record<string, unknown>;
  if (typeof m['runId'] !== 'string' || typeof m['req'] !== 'string') return undefined;
  if (!(RELAYED_CONTROLS as readonly unknown[]).includes(m['control'])) return undefined;
  if (m['text'] !== undefined && typeof m['text'] !== 'string') return undefined;
  return m as unknown as ControlMessage;
}

/** The acks that cross Redis: the delivery promise travels as its own record. */
export interface AckRecordBody {
  status: Ack['status'];
  reason?: string;
  seq: number;
  /** The ack had a delivery promise: a `delivery` record with the same seq follows. */
  delivers?: boolean;
}

/**
 * One record of a run's stream, as JSON in the field `r`. Every record but `outcome` names its attempt `a`;
 * every record written by a worker carries `n`, its number within the attempt (from 1), so a reader sees
 * what MAXLEN trimmed before it read.
 * - `attempt`: a worker started attempt `a`; `lost` says why the previous one ended without an outcome.
 * - `event`: a run event; `t` is when the worker got it (epoch ms).
 * - `state`: the mirrored state.
 * - `ack`: a control's answer; `req` is the producer's request id (absent for the task's and subvisor's own).
 * - `delivery`: what became of an accepted steer/follow-up.
 * - `retry`: attempt `a` ended (`outcome`) and is retried.
 * - `handed-back`: the worker shut down and gave the run back to the queue.
 * - `outcome`: the final outcome: the last record of a run.
 */
export type StreamRecord =
  | { k: 'attempt'; a: number; worker: string; previous?: 'lost' | 'retried' | 'handed-back' }
  | { k: 'event'; a: number; t: number; e: RunEvent }
  | { k: 'state'; a: number; s: RunHandleState }
  | { k: 'ack'; a: number; req?: string; control: string; origin: AckOrigin; ack: AckRecordBody }
  | { k: 'delivery'; a: number; seq: number; d: Delivery }
  | { k: 'retry'; a: number; outcome: Outcome; backoffMs: number }
  | { k: 'handed-back'; a: number; worker: string }
  | { k: 'outcome'; outcome: Outcome };

/** A record as read back: `n` when a worker wrote it. */
export type ReadRecord = StreamRecord & { n?: number };

const KINDS = new Set(['attempt', 'event', 'state', 'ack', 'delivery', 'retry', 'handed-back', 'outcome']);

/** Parses a stream record; a reason when it is not one (the producer reports it as a `rejected` event). */
export function parseRecord(text: string): { ok: true; record: ReadRecord } | { ok: false; reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'a stream record is not JSON' };
  }
  if (typeof value !== 'object' || value === null) return { ok: false, reason: 'a stream record is not an object' };
  const r = value as Record<string, unknown>;
  if (!KINDS.has(r['k'] as string)) return { ok: false, reason: `a stream record has an unknown kind ${JSON.stringify(r['k'])}` };
  if (r['k'] === 'outcome') {
    return isOutcome(r['outcome']) ? { ok: true, record: r as unknown as ReadRecord } : { ok: false, reason: 'an outcome record has no valid outcome' };
  }
  if (!isCount(r['a'], Number.MAX_SAFE_INTEGER)) return { ok: false, reason: `a ${String(r['k'])} record has no attempt number` };
  switch (r['k']) {
    case 'event':
      if (typeof r['e'] !== 'object' || r['e'] === null || typeof (r['e'] as { type?: unknown }).type !== 'string') {
        return { ok: false, reason: 'an event record has no event' };
      }
      break;
    case 'ack': {
      const ack = r['ack'] as Record<string, unknown> | null;
      if (typeof ack !== 'object' || ack === null || typeof ack['status'] !== 'string' || typeof ack['seq'] !== 'number') {
        return { ok: false, reason: 'an ack record has no valid ack' };
      }
      break;
    }
    case 'retry':
      if (!isOutcome(r['outcome'])) return { ok: false, reason: 'a retry record has no valid outcome' };
      break;
    case 'delivery':
      if (typeof r['seq'] !== 'number' || (r['d'] !== 'injected' && r['d'] !== 'dropped')) return { ok: false, reason: 'a delivery record is invalid' };
      break;
    case 'state':
      if (typeof r['s'] !== 'string') return { ok: false, reason: 'a state record has no state' };
      break;
  }
  if (r['n'] !== undefined && !isCount(r['n'], Number.MAX_SAFE_INTEGER)) return { ok: false, reason: 'a stream record has an invalid number n' };
  return { ok: true, record: r as unknown as ReadRecord };
}

function isOutcome(value: unknown): value is Outcome {
  if (typeof value !== 'object' || value === null) return false;
  const o = value as Record<string, unknown>;
  return typeof o['runId'] === 'string' && ['done', 'cancelled', 'failed', 'timed-out'].includes(o['status'] as string);
}
