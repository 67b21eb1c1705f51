// A durable run's directory: named after its run id so a later parent finds it, never swept as an orphan, opened again by attachRun.
import { closeSync, constants, lstatSync, mkdirSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { WireControlType } from '../wire/index.js';
import { WIRE_CONTROL_TYPES } from '../wire/index.js';
import type { RunDirectory } from './directory.js';

const CONTROL_FILE = 'control.jsonl';
const EVENT_FILE = 'events.jsonl';
/** The prefix of every durable run's directory: `subvisor-durable-<run id>`. */
export const DURABLE_PREFIX = 'subvisor-durable-';
/** A run id that can name a directory: no separator, no dot-dot, no control character. */
const SAFE_RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Flags for a file that must not exist yet. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;

/** Whether `runId` can name a durable run's directory. */
export function isDurableRunId(runId: string): boolean {
  return SAFE_RUN_ID.test(runId);
}

/** Where the durable run `runId` lives under `stateDir`. */
export function durableDirectoryOf(stateDir: string, runId: string): string {
  return join(stateDir, `${DURABLE_PREFIX}${runId}`);
}

/**
 * Creates the durable run's directory (0700) with empty 0600 control and event files. A directory of
 * that name that exists already is refused (EEXIST): a run id names one durable run at a time.
 */
export function createDurableDirectory(stateDir: string, runId: string): RunDirectory {
  const dir = durableDirectoryOf(stateDir, runId);
  mkdirSync(dir, { mode: 0o700 });
  const directory = { dir, controlPath: join(dir, CONTROL_FILE), eventPath: join(dir, EVENT_FILE) };
  closeSync(openSync(directory.controlPath, CREATE_NEW, 0o600));
  closeSync(openSync(directory.eventPath, CREATE_NEW, 0o600));
  return directory;
}

/**
 * Opens a durable run's directory again: it must be a real directory (not a link) owned by this user,
 * not readable or writable by anyone else, with its two channel files. Throws an Error saying what is
 * wrong otherwise.
 */
export function openDurableDirectory(dir: string): RunDirectory {
  const stat = lstatSync(dir);
  if (!stat.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (stat.uid !== process.getuid?.()) throw new Error(`${dir} belongs to another user`);
  if ((stat.mode & 0o077) !== 0) throw new Error(`${dir} is open to other users (mode ${(stat.mode & 0o777).toString(8)})`);
  const directory = { dir, controlPath: join(dir, CONTROL_FILE), eventPath: join(dir, EVENT_FILE) };
  for (const path of [directory.controlPath, directory.eventPath]) {
    if (!lstatSync(path).isFile()) throw new Error(`${path} is not a regular file`);
  }
  return directory;
}

/** The run ids of every durable run directory under `stateDir` (none when it cannot be read). */
export function durableRunIds(stateDir: string): string[] {
  try {
    return readdirSync(stateDir)
      .filter((entry) => entry.startsWith(DURABLE_PREFIX))
      .map((entry) => entry.slice(DURABLE_PREFIX.length))
      .filter(isDurableRunId);
  } catch {
    return [];
  }
}

/**
 * The controls written to a control file so far (seq and type, in order): a parent re-attaching stamps
 * its own after the last one, and mirrors the acks the child gave the earlier ones. A line it cannot read
 * (one cut by a parent killed mid-write) is skipped; the seq after it is still the highest seen plus one.
 */
export function writtenControls(controlPath: string): Array<{ seq: number; type: WireControlType }> {
  const controls: Array<{ seq: number; type: WireControlType }> = [];
  for (const line of readFileSync(controlPath, 'utf8').split('\n')) {
    if (line === '') continue;
    try {
      const message = JSON.parse(line) as { seq?: unknown; type?: unknown };
      if (Number.isSafeInteger(message.seq) && (WIRE_CONTROL_TYPES as readonly unknown[]).includes(message.type)) {
        controls.push({ seq: message.seq as number, type: message.type as WireControlType });
      }
    } catch {
      // a line cut short: nothing of it was a control the child could read
    }
  }
  return controls;
}
