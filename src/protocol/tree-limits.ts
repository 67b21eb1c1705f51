// Limits on what a run's process tree may use (memory, CPU time, processes, open files), the sandbox it may run in, and the outcome's report of them.

/**
 * `RunOptions.limits`: bounds on the run's whole process tree (the child and everything it starts). Each
 * is an integer >= 1. See docs/api.md#limits for how each is enforced and what it cannot see.
 */
export interface TreeLimits {
  /** Resident memory of the whole tree (each process's RssAnon, summed), sampled: over it the tree is killed (`memory-limit`). */
  memoryBytes?: number;
  /**
   * CPU seconds: each process's own RLIMIT_CPU (SIGXCPU at this many seconds of its own CPU time), and the
   * whole tree's CPU time, sampled: over either, the run ends `cpu-limit`.
   */
  cpuSeconds?: number;
  /** Live processes of the tree, sampled: over it the tree is killed (`process-limit`). */
  processes?: number;
  /** Each process's RLIMIT_NOFILE: an open past it fails with EMFILE (the run is not ended for it). */
  openFiles?: number;
  /** How often the tree is sampled for `memoryBytes`, `cpuSeconds` and `processes`, in ms (at least 10). Default 1000. */
  sampleIntervalMs?: number;
}

/** A limit a sample can find exceeded. */
export type SampledLimit = 'memoryBytes' | 'cpuSeconds' | 'processes';

/** The figures a tree is sampled for. */
export type TreeFigures = Record<SampledLimit, number>;

/** The limit that ended a run, and what was seen. */
export interface TreeLimitExceeded {
  limit: SampledLimit;
  /** The limit that was set. */
  max: number;
  /**
   * The figure seen: the tree's at the sample that crossed the limit (`sampled`), or, for the child's own
   * RLIMIT_CPU (`rlimit`: it died of SIGXCPU), the limit it reached.
   */
  seen: number;
  source: 'sampled' | 'rlimit';
}

/** `outcome.limits`: present on every run that had `limits`. */
export interface TreeLimitsReport {
  /** The limits as given (`sampleIntervalMs` included). */
  limits: TreeLimits;
  /** The highest figures the samples saw (absent when no sample was taken: a run shorter than one interval). */
  peak?: TreeFigures;
  /** How many samples were taken. */
  samples: number;
  /** The limit that ended the run, when one did. */
  exceeded?: TreeLimitExceeded;
}

/**
 * `RunOptions.sandbox` spelled out: the child runs under bubblewrap with `/` read-only, only its `cwd`,
 * the run's own directory, a private tmp and `writable` writable, and no network unless `network`.
 */
export interface SandboxOptions {
  /** More paths the tree may write (absolute, or relative to `cwd`; each must exist). Default none. */
  writable?: readonly string[];
  /**
   * `false` (default): a network namespace of its own: a private loopback and nothing else (not even the
   * host's 127.0.0.1). `true`: the host's network, loopback included (an agent that talks to its model).
   */
  network?: boolean;
}
