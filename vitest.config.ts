// Test configuration: real child processes need generous timeouts on a shared 2-core machine, and the suite runs
// at least two files at once (its tests mostly wait on real processes, and users run suites in parallel too).
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // vitest's default is one worker less than the cores: a single worker on 2 cores.
    maxWorkers: Math.max(2, availableParallelism()),
    globalSetup: ['test/global-setup.ts'],
  },
});
