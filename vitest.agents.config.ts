// Test configuration of `npm run test:agents`: the matrix of every real agent (installed in .agents/ by `npm run
// agents:install`) against fakeModel, test/agents/. The same suite-wide checks as `npm test` (no process or temp
// file left); generous timeouts (an agent takes 1-2 s to start on a loaded machine); one worker per core (each
// cell runs a real agent, a few hundred MB and a busy second of CPU at its start).
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    include: ['test/agents/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: availableParallelism(),
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
