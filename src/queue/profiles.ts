// Worker profiles: checking them, reading a profiles file, and turning a job into run options within a profile's limits.
import { readFileSync } from 'node:fs';
import { PROTOCOLS } from '../api/registry.js';
import { RUN_DEFAULTS } from '../api/spawn-run.js';
import { resolveLimits, resolveSandbox } from '../api/tree-options.js';
import type { Protocol } from '../protocol/driver.js';
import type { RunOptions } from '../api/types.js';
import type { JobData } from './records.js';
import type { ProfileLimits, WorkerProfile } from './types.js';

const PROFILE_KEYS = new Set(['command', 'args', 'env', 'protocol', 'cwd', 'limits', 'treeLimits', 'sandbox']);
const LIMIT_KEYS = new Set(['timeoutMs', 'maxTimeoutMs', 'killGraceMs', 'readyTimeoutMs', 'finalizeGraceMs', 'stallTimeoutMs', 'maxAnswerBytes']);

/**
 * A profile's protocol: a registered spawnRun protocol whose runs need nothing a profile cannot give
 * (a protocol whose command starts a daemon also needs that daemon's `url`).
 */
function checkProtocol(where: string, profile: Record<string, unknown>): void {
  const usable = Object.entries(PROTOCOLS).filter(([, protocol]) => (protocol as Protocol).spawnsDaemon !== true).map(([name]) => name);
  if (!usable.includes(profile['protocol'] as string)) throw new TypeError(`${where}: protocol must be one of ${usable.join(', ')}`);
}

/** Checks every profile; throws a TypeError naming the profile and the field. */
export function checkProfiles(profiles: unknown): Record<string, WorkerProfile> {
  if (typeof profiles !== 'object' || profiles === null || Array.isArray(profiles)) throw new TypeError('profiles must be an object of named profiles');
  const names = Object.keys(profiles);
  if (names.length === 0) throw new TypeError('profiles is empty: give at least one profile');
  for (const name of names) checkProfile(name, (profiles as Record<string, unknown>)[name]);
  return profiles as Record<string, WorkerProfile>;
}

function checkProfile(name: string, value: unknown): void {
  const where = `profile ${JSON.stringify(name)}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`${where} must be an object`);
  const p = value as Record<string, unknown>;
  for (const key of Object.keys(p)) if (!PROFILE_KEYS.has(key)) throw new TypeError(`${where} has an unknown field ${JSON.stringify(key)}`);
  if (typeof p['command'] !== 'string' || p['command'].length === 0) throw new TypeError(`${where}: command must be a non-empty string`);
  if (p['args'] !== undefined && !(Array.isArray(p['args']) && p['args'].every((arg) => typeof arg === 'string'))) {
    throw new TypeError(`${where}: args must be an array of strings`);
  }
  if (p['env'] !== undefined) {
    const env = p['env'];
    if (typeof env !== 'object' || env === null || Array.isArray(env) || !Object.values(env).every((v) => typeof v === 'string')) {
      throw new TypeError(`${where}: env must be an object of strings`);
    }
  }
  if (p['protocol'] !== undefined) checkProtocol(where, p);
  if (p['cwd'] !== undefined && typeof p['cwd'] !== 'string') throw new TypeError(`${where}: cwd must be a string`);
  if (p['limits'] !== undefined) {
    const limits = p['limits'];
    if (typeof limits !== 'object' || limits === null) throw new TypeError(`${where}: limits must be an object`);
    for (const [key, limit] of Object.entries(limits)) {
      if (!LIMIT_KEYS.has(key)) throw new TypeError(`${where}: limits has an unknown field ${JSON.stringify(key)}`);
      if (typeof limit !== 'number' || !Number.isFinite(limit) || limit < 0) throw new TypeError(`${where}: limits.${key} must be a number >= 0`);
    }
  }
  // spawnRun's own checks, so a bad tree limit or sandbox stops the worker at start, not each job at run time.
  for (const [key, check] of [['treeLimits', resolveLimits], ['sandbox', resolveSandbox]] as const) {
    try {
      check(p[key]);
    } catch (error) {
      throw new TypeError(`${where}: ${(error as Error).message.replace(/^options\.\w+/, key)}`);
    }
  }
}

/** Reads and checks a profiles file (JSON: `{ "name": { "command": ..., ... } }`). */
export function readProfilesFile(path: string): Record<string, WorkerProfile> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new TypeError(`cannot read the profiles file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new TypeError(`the profiles file ${path} is not JSON: ${(error as Error).message}`);
  }
  return checkProfiles(parsed);
}

/** The run options of a job under its profile: the producer chooses only the task, the time budget (capped) and keepAlive. */
export function runOptionsFor(profile: WorkerProfile, data: JobData, runId: string, stateDir: string | undefined): RunOptions {
  const limits: ProfileLimits = profile.limits ?? {};
  const options: RunOptions = { command: profile.command, runId, handleParentSignals: false };
  if (profile.args !== undefined) options.args = [...profile.args];
  if (profile.env !== undefined) options.env = { ...profile.env };
  if (profile.protocol !== undefined) options.protocol = profile.protocol;
  if (profile.cwd !== undefined) options.cwd = profile.cwd;
  if (profile.treeLimits !== undefined) options.limits = { ...profile.treeLimits };
  if (profile.sandbox !== undefined) options.sandbox = typeof profile.sandbox === 'boolean' ? profile.sandbox : structuredClone(profile.sandbox);
  if (stateDir !== undefined) options.stateDir = stateDir;
  if (data.task !== undefined) options.task = data.task;
  if (data.keepAlive !== undefined) options.keepAlive = data.keepAlive;
  // Every queued run has a deadline (JSON carries no Infinity, and a hung child would hold its worker's slot and job
  // lock for ever): the producer's, else the profile's, else spawnRun's default, always within the profile's cap.
  const timeoutMs = data.timeoutMs ?? limits.timeoutMs ?? RUN_DEFAULTS.timeoutMs;
  options.timeoutMs = limits.maxTimeoutMs === undefined ? timeoutMs : Math.min(timeoutMs, limits.maxTimeoutMs);
  if (limits.killGraceMs !== undefined) options.killGraceMs = limits.killGraceMs;
  if (limits.readyTimeoutMs !== undefined) options.readyTimeoutMs = limits.readyTimeoutMs;
  if (limits.finalizeGraceMs !== undefined) options.finalizeGraceMs = limits.finalizeGraceMs;
  if (limits.stallTimeoutMs !== undefined) options.stallTimeoutMs = limits.stallTimeoutMs;
  return options;
}
