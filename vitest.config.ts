// Test configuration of `npm test`: three projects that follow test/'s folders (test/unit: in-process files that
// share workers; test/process: files that start real processes, a fresh worker each, except the .shared.test.ts ones,
// which reap every process within their test and share workers), two workers per core, the longest files first.
// test/ mirrors src/ below those folders. The checks that take minutes (test/slow/) are vitest.slow.config.ts's.
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

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
  // With redis-server, the queue files are among the longest too.
  'package', 'queue', 'wire-properties', 'hostile-matrix', 'agent-conformance', 'queue-faults', 'docs', 'spawn-teardown', 'examples',
  'cli-queue', 'fuseraft-scripted', 'spawn-faults', 'pool-queue', 'cli-output', 'fake-child-kit', 'spawn-scale', 'cli-batch',
];

class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = LONGEST_FIRST.indexOf(basename(file.moduleId).replace(/(\.shared)?\.test\.ts$/, ''));
      return index === -1 ? LONGEST_FIRST.length : index;
    };
    // Array.prototype.sort is stable: the files not listed keep vitest's own order after the listed ones.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

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
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      { test: { ...shared, name: 'processes', include: ['test/process/**/*.test.ts'], exclude: [SHARED_PROCESS] } },
      { test: { ...shared, name: 'processes-shared', include: [SHARED_PROCESS], isolate: false } },
      { test: { ...shared, name: 'unit', include: [UNIT], isolate: false } },
    ],
  },
});
