// spawnRun's `limits` and `sandbox` options: checked, with their defaults, and refused where they cannot hold (a durable run, a daemon the parent must reach).
import type { Protocol } from '../protocol/driver.js';
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';
import type { SandboxOptions, TreeLimits } from '../protocol/tree-limits.js';
import { sampledLimitsRefusal } from '../run/tree-limiter.js';
import { refuseNul } from './option-checks.js';

/** How often a tree is sampled without `limits.sampleIntervalMs`. */
export const DEFAULT_SAMPLE_INTERVAL_MS = 1000;
/** Below this a tree would be sampled more often than a process-table pass is worth. */
const MIN_SAMPLE_INTERVAL_MS = 10;

const LIMIT_NAMES = ['memoryBytes', 'cpuSeconds', 'processes', 'openFiles'] as const;

/** `limits`: an object of integers >= 1 (and `sampleIntervalMs`); undefined when none is set. */
export function resolveLimits(value: unknown): TreeLimits | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError('options.limits must be an object ({ memoryBytes?, cpuSeconds?, processes?, openFiles?, sampleIntervalMs? })');
  }
  const given = value as Record<string, unknown>;
  const limits: TreeLimits = {};
  for (const [key, figure] of Object.entries(given)) {
    if (figure === undefined) continue;
    if (key === 'sampleIntervalMs') {
      if (typeof figure !== 'number' || !Number.isFinite(figure) || figure < MIN_SAMPLE_INTERVAL_MS) {
        throw new RangeError(`options.limits.sampleIntervalMs must be a number of milliseconds >= ${MIN_SAMPLE_INTERVAL_MS}`);
      }
      limits.sampleIntervalMs = Math.min(figure, 2 ** 31 - 1);
      continue;
    }
    if (!(LIMIT_NAMES as readonly string[]).includes(key)) {
      throw new TypeError(`options.limits.${key} is not a limit (${LIMIT_NAMES.join(', ')}, sampleIntervalMs)`);
    }
    if (typeof figure !== 'number' || !Number.isSafeInteger(figure) || figure < 1) throw new RangeError(`options.limits.${key} must be an integer >= 1`);
    limits[key as (typeof LIMIT_NAMES)[number]] = figure;
  }
  const sampled = limits.memoryBytes !== undefined || limits.cpuSeconds !== undefined || limits.processes !== undefined;
  if (!sampled) {
    if (limits.openFiles === undefined) return undefined;
    delete limits.sampleIntervalMs;
    return limits;
  }
  const refusal = sampledLimitsRefusal();
  if (refusal !== undefined) throw new TypeError(`options.limits: ${refusal}`);
  limits.sampleIntervalMs ??= DEFAULT_SAMPLE_INTERVAL_MS;
  return limits;
}

/** `sandbox`: `true` (the defaults), or `{ writable?, network? }`; undefined or `false` for none. */
export function resolveSandbox(value: unknown): ResolvedRunOptions['sandbox'] {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { writable: [], network: false };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError('options.sandbox must be a boolean or { writable?, network? }');
  const { writable = [], network = false, ...rest } = value as SandboxOptions & Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new TypeError(`options.sandbox.${unknown[0]} is not a sandbox option (writable, network)`);
  if (!Array.isArray(writable) || !writable.every((path) => typeof path === 'string' && path !== '')) {
    throw new TypeError('options.sandbox.writable must be an array of non-empty paths');
  }
  writable.forEach((path, index) => refuseNul(`sandbox.writable[${index}]`, path));
  if (typeof network !== 'boolean') throw new TypeError('options.sandbox.network must be a boolean');
  return { writable: [...writable], network };
}

/**
 * What `limits` and `sandbox` cannot go with: a durable run outlives its parent, whose samples and
 * bubblewrap (`--die-with-parent`) do not; a daemon the parent connects to over TCP cannot be reached in
 * a network namespace of its own.
 */
export function refuseTreeConflicts(resolved: Pick<ResolvedRunOptions, 'limits' | 'sandbox' | 'durable' | 'protocol'>, protocol: Protocol | undefined): void {
  const { limits, sandbox } = resolved;
  if (resolved.durable !== undefined && (limits !== undefined || sandbox !== undefined)) {
    throw new TypeError(
      `options.${sandbox !== undefined ? 'sandbox' : 'limits'} does not apply to a durable run: it outlives its parent, whose samples of the tree and whose sandbox (bubblewrap dies with its parent) would not`,
    );
  }
  if (sandbox !== undefined && !sandbox.network && protocol?.spawnsDaemon === true) {
    throw new TypeError(
      `protocol '${resolved.protocol}' starts a daemon that the parent connects to over TCP: in a sandbox without network (its own network namespace) its port cannot be reached; give options.sandbox.network: true (the filesystem is still confined)`,
    );
  }
}
