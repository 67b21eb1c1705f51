// Test configuration of `npm test`: three projects that follow test/'s folders (test/unit: in-process files that
// share workers; test/process: files that start real processes, a fresh worker each, except the .shared.test.ts ones,
// which reap every process within their test and share workers), two workers per core, the longest files first.
// test/ mirrors src/ below those folders. The checks that take minutes (test/slow/ and the files test/tiers.ts names)
// are vitest.slow.config.ts's.
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { SLOW_GLOBS, longestFirst } from './test/tiers.js';

/**
 * test/unit: files that start no process, server or timer left running and touch no process-wide state: they
 * share workers (no fresh fork and module load per file, about 0.4 s of CPU each).
 */
const UNIT = 'test/unit/**/*.test.ts';

/**
 * test/process/, files named *.shared.test.ts: files that start real processes but reap every one within its test and
 * install no signal handler, environment variable or watchdog of their own: they share workers too (a fresh
 * fork and module load cost about 0.8 s of CPU per file). A file that breaks that rule is a plain .test.ts.
 */
const SHARED_PROCESS = 'test/process/**/*.shared.test.ts';

/**
 * The longest files (2-core run), about longest first. On a clean clone vitest knows no durations and starts
 * the largest files first; a long file that starts last decides the wall time alone. A stale entry only
 * costs ordering, never a result.
 */
const LONGEST_FIRST = [
  'hostile-matrix', 'spawn-teardown', 'cli-batch', 'cli-controls', 'spawn-watchdog', 'fuseraft-scripted', 'fake-child-misbehaviour',
  'spawn-faults', 'pool-shutdown', 'journal-replay', 'fake-child-states', 'child-serve-agent', 'last-output', 'pool-warm',
];

// Real child processes need generous timeouts on a shared 2-core machine.
const shared = { testTimeout: 60_000, hookTimeout: 60_000, pool: 'forks' as const };

export default defineConfig({
  test: {
    // Declared here only (not in the projects), so it runs once for the whole suite.
    globalSetup: ['test/global-setup.ts'],
    // Two workers per core: most files spend much of their time waiting on real processes (grace periods,
    // exits), so a worker per core left the CPUs half idle. On a quiet 2-core machine: 2 workers 180 s,
    // 3 workers 134 s, 4 workers 115 s; 4 workers beside one busy-looping process 130 s, beside two 148 s.
    maxWorkers: 2 * availableParallelism(),
    sequence: { sequencer: longestFirst(LONGEST_FIRST) },
    projects: [
      { test: { ...shared, name: 'processes', include: ['test/process/**/*.test.ts'], exclude: [SHARED_PROCESS, ...SLOW_GLOBS] } },
      { test: { ...shared, name: 'processes-shared', include: [SHARED_PROCESS], exclude: SLOW_GLOBS, isolate: false } },
      { test: { ...shared, name: 'unit', include: [UNIT], exclude: SLOW_GLOBS, isolate: false } },
    ],
  },
});
