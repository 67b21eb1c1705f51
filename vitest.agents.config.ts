// Test configuration of the real-agent matrix (test/agents/: the pinned claude, codex and gemini, installed by
// `npm run agents:install`, against fakeModel): `npm run test:agents`, which .ci/run runs after the other suites.
// The same suite-wide setup as `npm test` (no process or temp file may outlive it). Each agent is a heavy process
// tree (Gemini CLI alone is two Node processes), so two files run at a time.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    include: ['test/agents/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 180_000,
    hookTimeout: 60_000,
  },
});
