// Test configuration of the checks that take minutes: test/slow/ (the benchmarks' smoke run) and the files
// test/tiers.ts names (the package as installed, the queue on Redis, the browser, property sweeps, scale, limits and
// sandbox): `npm run test:slow`, which .ci/run runs after the README's test command (`npm test` leaves them out to
// stay under 150 s on 2 cores).
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { SLOW_GLOBS, longestFirst } from './test/tiers.js';

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    include: ['test/slow/**/*.test.ts', ...SLOW_GLOBS],
    pool: 'forks',
    // As in `npm test`: most of these files wait on real processes and servers.
    maxWorkers: 2 * availableParallelism(),
    sequence: { sequencer: longestFirst(['bench-smoke', 'package', 'queue', 'wire-properties', 'docs', 'tree-limits', 'queue-faults']) },
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
