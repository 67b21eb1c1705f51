// Test configuration of the checks that take minutes (test/slow/: the benchmarks' smoke run): `npm run test:slow`,
// which .ci/run runs after the README's test command (`npm test` leaves them out to stay within minutes on 2 cores).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    include: ['test/slow/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
