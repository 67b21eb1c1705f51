// A run's limits on its process tree: the rlimits its child gets, the samples compared with the limits, the verdict when one is exceeded, and the outcome's report.
import type { ChildRlimits } from '../process/confinement.js';
import { hasProcFs } from '../process/proc-table.js';
import type { ProcessExit, SupervisedProcess } from '../process/supervised-process.js';
import type { TreeUsage, UsageWatch } from '../process/tree-usage.js';
import type { SampledLimit, TreeFigures, TreeLimitExceeded, TreeLimits, TreeLimitsReport } from '../protocol/tree-limits.js';
import type { Verdict } from './outcome.js';

/** Why the sampled limits cannot hold here, or undefined where they can (spawnRun refuses them with it). */
export function sampledLimitsRefusal(): string | undefined {
  return hasProcFs() ? undefined : 'memoryBytes, cpuSeconds and processes are sampled from /proc (Linux), which this platform does not have';
}

/** The child's own rlimits among `limits` (undefined when none is set). */
export function rlimitsOf(limits: TreeLimits | undefined): ChildRlimits | undefined {
  if (limits?.cpuSeconds === undefined && limits?.openFiles === undefined) return undefined;
  const rlimits: ChildRlimits = {};
  if (limits.cpuSeconds !== undefined) rlimits.cpuSeconds = limits.cpuSeconds;
  if (limits.openFiles !== undefined) rlimits.openFiles = limits.openFiles;
  return rlimits;
}

/** SIGXCPU on Linux: bubblewrap reports a child killed by signal n as exit code 128 + n. */
const SIGXCPU_NUMBER = 24;

/** The sampled limits in the order a sample is checked, each with its error code and how its figure is told. */
const SAMPLED: ReadonlyArray<{ limit: SampledLimit; code: Verdict['code']; what: string; unit: (figure: number) => string }> = [
  { limit: 'memoryBytes', code: 'memory-limit', what: 'resident memory', unit: (bytes) => `${bytes} bytes (${(bytes / 1048576).toFixed(1)} MiB)` },
  { limit: 'cpuSeconds', code: 'cpu-limit', what: 'CPU time', unit: (seconds) => `${seconds.toFixed(2)} s` },
  { limit: 'processes', code: 'process-limit', what: 'process count', unit: (count) => `${count}` },
];

/**
 * Compares the tree's samples with the run's limits and says when one is exceeded (once); also reads a
 * child that died of its own RLIMIT_CPU. `exceed` is the run's: it returns false when the run is already
 * ending for another reason (the limit is then not recorded as what ended it).
 */
export class TreeLimiter {
  readonly #limits: TreeLimits;
  readonly #exceed: (verdict: Verdict) => boolean;
  #peak: TreeFigures | undefined;
  #samples = 0;
  #exceeded: TreeLimitExceeded | undefined;
  #watch: UsageWatch | undefined;

  constructor(limits: TreeLimits, exceed: (verdict: Verdict) => boolean) {
    this.#limits = limits;
    this.#exceed = exceed;
  }

  /** Starts sampling the child's tree when a sampled limit is set (resolveLimits set the interval then). */
  watch(child: SupervisedProcess): void {
    const interval = this.#limits.sampleIntervalMs;
    if (interval === undefined || this.#watch !== undefined) return;
    this.#watch = child.sampleUsage(interval, (usage) => this.#onSample(usage));
  }

  #onSample(usage: TreeUsage): void {
    this.#samples++;
    const peak = (this.#peak ??= { memoryBytes: 0, cpuSeconds: 0, processes: 0 });
    for (const { limit } of SAMPLED) peak[limit] = Math.max(peak[limit], usage[limit]);
    if (this.#exceeded !== undefined) return;
    for (const { limit, code, what, unit } of SAMPLED) {
      const max = this.#limits[limit];
      if (max === undefined || usage[limit] <= max) continue;
      const verdict: Verdict = {
        status: 'failed',
        code,
        error: `the tree's ${what} reached ${unit(usage[limit])}, over limits.${limit} (${unit(max)}); the tree was killed`,
      };
      if (this.#exceed(verdict)) this.#exceeded = { limit, max, seen: usage[limit], source: 'sampled' };
      return;
    }
  }

  /**
   * The verdict of a child that died of its own RLIMIT_CPU (SIGXCPU; in a sandbox bubblewrap's exit code
   * 152), when the run has `cpuSeconds` and no limit was recorded yet; else undefined.
   */
  exitVerdict(exit: ProcessExit, sandboxed: boolean): Verdict | undefined {
    const max = this.#limits.cpuSeconds;
    if (max === undefined || this.#exceeded !== undefined) return undefined;
    const bySignal = exit.signal === 'SIGXCPU' || (sandboxed && exit.exitCode === 128 + SIGXCPU_NUMBER);
    if (!bySignal) return undefined;
    this.#exceeded = { limit: 'cpuSeconds', max, seen: max, source: 'rlimit' };
    return {
      status: 'failed',
      code: 'cpu-limit',
      error: `the child's own CPU time reached limits.cpuSeconds (${max} s): its RLIMIT_CPU ended it (SIGXCPU), and the tree was killed`,
    };
  }

  /** Stops sampling (the run ended). */
  stop(): void {
    this.#watch?.stop();
    this.#watch = undefined;
  }

  /** `outcome.limits`. */
  report(): TreeLimitsReport {
    const report: TreeLimitsReport = { limits: { ...this.#limits }, samples: this.#samples };
    if (this.#peak !== undefined) report.peak = { ...this.#peak };
    if (this.#exceeded !== undefined) report.exceeded = { ...this.#exceeded };
    return report;
  }
}
