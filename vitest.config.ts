// Test configuration of `npm test`: three projects (in-process unit files and well-behaved process files share
// workers; the other files that start real processes get a fresh worker each), two workers per core, and the longest
// files first. The checks that take minutes (test/slow/) are left to vitest.slow.config.ts, which .ci/run runs after.
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * Files that start no process, server or timer left running and touch no process-wide state: they share
 * workers (no fresh fork and module load per file, about 0.4 s of CPU each). A file missing here still
 * runs, isolated.
 */
const UNIT_FILES = [
  'agent-mapping', 'architecture', 'channel-files', 'channel-grid-ticker', 'channel-tail', 'channel-wake-governor',
  'cli-approval-policy', 'connect-options', 'event-types', 'fen-event-conversion', 'fen-transport-note', 'fuseraft-bounded-text',
  'fuseraft-bridge-session', 'fuseraft-frames', 'hep-session', 'fuseraft-prompt-desk', 'fuseraft-repl-session', 'hep-frames',
  'line-splitter', 'mew-fake-daemon', 'mew-request-desk', 'mew-session', 'queue-records', 'run-backpressure',
  'pool-memory', 'run-core-memory', 'run-ledger-mirror', 'run-outcome', 'run-timers', 'stall-watchdog', 'wire-codec', 'wire-fixtures',
  'wire-properties', 'wire-sequence', 'wire-state',
].map((name) => `test/${name}.test.ts`);

/**
 * Files that start real processes but reap every one within its test and install no signal handler,
 * environment variable or watchdog of their own: they share workers too (a fresh fork and module load cost
 * about 0.8 s of CPU per file, measured on these 13 together). A file that breaks that rule stays out.
 */
const SHARED_PROCESS_FILES = [
  'ending-controls', 'fake-child-misbehaviour', 'fake-child-random', 'fake-child-states', 'hostile-answer-file',
  'hostile-event-file', 'run-core', 'run-text', 'spawn-answer', 'spawn-controls', 'spawn-faults', 'spawn-hep',
  'spawn-states',
].map((name) => `test/${name}.test.ts`);

/**
 * The longest files (2-core run), about longest first. On a clean clone vitest knows no durations and starts
 * the largest files first; a long file that starts last decides the wall time alone. A stale entry only
 * costs ordering, never a result.
 */
const LONGEST_FIRST = [
  // With redis-server, the queue files are among the longest too.
  'package', 'queue', 'wire-properties', 'hostile-matrix', 'agent-conformance', 'queue-faults', 'docs', 'spawn-teardown', 'examples',
  'cli-queue', 'fuseraft-scripted', 'spawn-faults', 'pool-queue', 'cli-output', 'fake-child-kit', 'spawn-scale', 'cli-batch',
].map((name) => `${name}.test.ts`);

class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = LONGEST_FIRST.indexOf(basename(file.moduleId));
      return index === -1 ? LONGEST_FIRST.length : index;
    };
    // Array.prototype.sort is stable: the files not listed keep vitest's own order after the listed ones.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

/** The checks that take minutes: not part of `npm test` (see vitest.slow.config.ts). */
const SLOW_FILES = 'test/slow/**';

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
      { test: { ...shared, name: 'processes', include: ['test/**/*.test.ts'], exclude: [...UNIT_FILES, ...SHARED_PROCESS_FILES, SLOW_FILES] } },
      { test: { ...shared, name: 'processes-shared', include: SHARED_PROCESS_FILES, isolate: false } },
      { test: { ...shared, name: 'unit', include: UNIT_FILES, isolate: false } },
    ],
  },
});
