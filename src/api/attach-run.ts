// attachRun: a durable run's later parent: finds its directory and record, checks the child and the lease, and supervises it again with the same Run handle.
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { durableDirectoryOf, durableRunIds, isDurableRunId } from '../channel/index.js';
import { readDurableRecord } from '../run/durable-record.js';
import { childStateOf, leaseHolderOf, takeOver } from '../run/durable-tenure.js';
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';
import type { AttachOptions, Run } from './types.js';
import { refuseUnknownKeys } from './option-checks.js';
import { protocolNamed } from './registry.js';
import { resolveOptions, startRun } from './spawn-run.js';
import { openJournal } from './journal-option.js';

/** Why attachRun refused a run. */
export type AttachErrorCode =
  /** No durable run of that id under `stateDir` (never started there, or ended and removed). */
  | 'not-found'
  /** The directory holds no durable run's record (not a durable run, or one that did not finish starting). */
  | 'not-durable'
  /** Another live parent holds the run's lease: it is attached to it. */
  | 'lease-held'
  /** The child is gone (its files are left for its lease to expire, or for the reaper). */
  | 'gone'
  /** The recorded pid names another process now (the child is gone and its pid was reused). */
  | 'pid-reused';

/** Thrown by {@link attachRun} (synchronously, before anything is done) when it cannot re-attach. */
export class AttachError extends Error {
  readonly code: AttachErrorCode;
  readonly runId: string;
  constructor(code: AttachErrorCode, runId: string, message: string) {
    super(message);
    this.name = 'AttachError';
    this.code = code;
    this.runId = runId;
  }
}

/** The keys of {@link AttachOptions}: the compiler checks that this list and the type agree. */
const ATTACH_KEYS = Object.keys({
  runId: true,
  stateDir: true,
  signal: true,
  ackTimeoutMs: true,
  retainEvents: true,
  highWaterMark: true,
  highWaterBytes: true,
  latencyBudgetMs: true,
  handleParentSignals: true,
  journal: true,
} satisfies Record<keyof AttachOptions, true>);

/** spawnRun's options that belong to the run, not to a parent: a re-attaching parent cannot change them. */
const RUN_KEPT_KEYS = new Set([
  'protocol', 'command', 'args', 'task', 'resume', 'cwd', 'env', 'timeoutMs', 'deadline', 'killGraceMs', 'finalizeGraceMs', 'readyTimeoutMs',
  'stallTimeoutMs', 'requestTimeoutMs', 'keepAlive', 'maxFinalTextBytes', 'outputTailBytes', 'durable', 'keepFiles', 'budget', 'outputSchema',
]);

/**
 * Re-attaches to a durable run (`spawnRun({ durable })`) whose parent is gone, and returns the same
 * {@link Run} handle as `spawnRun`: its events from the start of the event file (then live), the state
 * mirrored again from the acks and turn-completes in it, controls stamped after the last seq written,
 * one outcome, the kill ladder owned again, the lease renewed. The child is the same process (same pid);
 * its exit code is not known to a parent that did not start it (`outcome.exitCode` is null).
 *
 * Throws {@link AttachError} (`not-found`, `not-durable`, `lease-held`, `gone`, `pid-reused`) or a
 * TypeError for invalid options, synchronously, before anything is done.
 */
export function attachRun(options: AttachOptions): Run {
  if (typeof options !== 'object' || options === null) throw new TypeError('attachRun needs an options object');
  const runOwn = Object.keys(options).find((key) => RUN_KEPT_KEYS.has(key));
  if (runOwn !== undefined) {
    throw new TypeError(`options.${runOwn} belongs to the run and is kept as its first parent set it: attachRun takes only this parent's handle options (see docs/durable.md)`);
  }
  refuseUnknownKeys(options, ATTACH_KEYS, 'attachRun');
  const { runId, stateDir = tmpdir(), ...handle } = options;
  if (typeof runId !== 'string' || !isDurableRunId(runId)) throw new TypeError('options.runId must be the run id of a durable run (1-128 of A-Z a-z 0-9 . _ -)');
  if (typeof stateDir !== 'string' || stateDir === '') throw new TypeError('options.stateDir must be a non-empty string');
  const dir = durableDirectoryOf(stateDir, runId);
  if (!existsSync(dir)) throw new AttachError('not-found', runId, `no durable run ${JSON.stringify(runId)} under ${stateDir}`);
  const record = readDurableRecord(dir);
  if (record === undefined || record.runId !== runId) {
    throw new AttachError('not-durable', runId, `${dir} holds no durable run's record (run.json): not a durable run, or one that never finished starting`);
  }
  const protocol = protocolNamed(record.options.protocol);
  if (protocol?.durable !== true) throw new AttachError('not-durable', runId, `run ${runId} speaks ${record.options.protocol}, which cannot be re-attached`);
  const state = childStateOf(record);
  if (state === 'gone') throw new AttachError('gone', runId, `the child of run ${runId} (pid ${record.pid}) is gone`);
  if (state === 'pid-reused') {
    throw new AttachError('pid-reused', runId, `pid ${record.pid} of run ${runId} now names another process: the child is gone`);
  }
  // Every option check before the lease is taken: a refused call leaves the run as it was.
  const { options: kept } = record;
  const common = resolveOptions(
    {
      ...handle,
      runId,
      stateDir,
      command: record.command,
      killGraceMs: kept.killGraceMs,
      finalizeGraceMs: kept.finalizeGraceMs,
      readyTimeoutMs: kept.readyTimeoutMs,
      requestTimeoutMs: kept.requestTimeoutMs,
      keepAlive: kept.keepAlive,
      maxFinalTextBytes: kept.maxFinalTextBytes,
      outputTailBytes: kept.outputTailBytes,
      ...(kept.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: kept.stallTimeoutMs }),
      ...(kept.deadlineMs === undefined ? { timeoutMs: Infinity } : { deadline: kept.deadlineMs }),
    },
    protocol,
  );
  // The journal before the lease: a journal that cannot be made leaves the run untaken.
  const journal = openJournal(common);
  const held = takeOver(dir, kept.leaseMs);
  if (held !== undefined) {
    journal?.discard();
    throw new AttachError('lease-held', runId, `run ${runId} is attached to a live parent: ${held.reason}`);
  }
  const resolved: ResolvedRunOptions = {
    ...common,
    protocol: kept.protocol,
    durable: { leaseMs: kept.leaseMs },
    attach: { dir, pid: record.pid, pidStart: record.pidStart, marker: record.marker, startedAt: record.startedAt },
  };
  return startRun(resolved, protocol, { journal, telemetry: { tracing: undefined, callerEnv: [] } });
}

/**
 * The durable runs under `stateDir` that `attachRun` would take now: a record, a live child, and no live
 * parent holding the lease (what a restarted orchestrator re-attaches to; see the pool's `reattach()`).
 */
export function attachableRuns(stateDir: string = tmpdir()): string[] {
  return durableRunIds(stateDir).filter((runId) => {
    const dir = durableDirectoryOf(stateDir, runId);
    const record = readDurableRecord(dir);
    return record !== undefined && record.runId === runId && childStateOf(record) === 'alive' && leaseHolderOf(dir) === undefined;
  });
}
