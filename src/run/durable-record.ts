// A durable run's record (run.json in its directory): what a later parent needs to re-attach to the child the first one started.
import { readFileSync } from 'node:fs';
import { writeWholeFile } from '../process/whole-file.js';
import { join } from 'node:path';
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';

/** The record's file name, beside the run's channel files. */
export const RECORD_FILE = 'run.json';
/** The child's stdout and stderr of a durable run (no pipe: the parent may die). */
export const OUTPUT_FILE = 'output.log';

/** The options a re-attaching parent takes over as they were (its own handle options come from its call). */
export type DurableOptions = Pick<
  ResolvedRunOptions,
  'protocol' | 'killGraceMs' | 'finalizeGraceMs' | 'readyTimeoutMs' | 'requestTimeoutMs' | 'keepAlive' | 'maxFinalTextBytes' | 'outputTailBytes'
> & { deadlineMs?: number; stallTimeoutMs?: number; leaseMs: number };

/** What run.json holds. */
export interface DurableRecord {
  version: 1;
  runId: string;
  /** When the run started (epoch ms). */
  startedAt: number;
  /** The child: its pid, which is also its process group; its start time; its tree marker. */
  pid: number;
  pidStart: string;
  marker: string;
  /** The command started, for display (never its environment). */
  command: string;
  /** The control seq written last when the record was made (the control file itself is the authority). */
  lastControlSeq: number;
  options: DurableOptions;
}

/** Writes the record whole (a temp file renamed over it), 0600. */
export function writeDurableRecord(dir: string, record: DurableRecord): void {
  writeWholeFile(dir, RECORD_FILE, JSON.stringify(record));
}

/** The record in `dir`, checked field by field; undefined when there is none or it is not one. */
export function readDurableRecord(dir: string): DurableRecord | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(join(dir, RECORD_FILE), 'utf8'));
  } catch {
    return undefined;
  }
  const record = parsed as Partial<DurableRecord> | null;
  if (typeof record !== 'object' || record === null || record.version !== 1) return undefined;
  const { runId, startedAt, pid, pidStart, marker, command, lastControlSeq, options } = record;
  const ok =
    typeof runId === 'string' &&
    Number.isFinite(startedAt) &&
    Number.isSafeInteger(pid) &&
    (pid as number) > 1 &&
    typeof pidStart === 'string' &&
    typeof marker === 'string' &&
    typeof command === 'string' &&
    Number.isSafeInteger(lastControlSeq) &&
    typeof options === 'object' &&
    options !== null &&
    typeof options.protocol === 'string' &&
    Number.isFinite(options.leaseMs) &&
    Number.isFinite(options.killGraceMs);
  return ok ? (record as DurableRecord) : undefined;
}

/** The record's options of a run, from its resolved options. */
export function durableOptionsOf(options: ResolvedRunOptions, leaseMs: number): DurableOptions {
  const kept: DurableOptions = {
    protocol: options.protocol,
    killGraceMs: options.killGraceMs,
    finalizeGraceMs: options.finalizeGraceMs,
    readyTimeoutMs: options.readyTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs,
    keepAlive: options.keepAlive,
    maxFinalTextBytes: options.maxFinalTextBytes,
    outputTailBytes: options.outputTailBytes,
    leaseMs,
  };
  if (options.deadlineMs !== undefined) kept.deadlineMs = options.deadlineMs;
  if (options.stallTimeoutMs !== undefined) kept.stallTimeoutMs = options.stallTimeoutMs;
  return kept;
}
