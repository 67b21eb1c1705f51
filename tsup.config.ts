// Build configuration: ESM-only bundles with declarations, one entry per public subpath and bin; the dashboard's page files beside them.
import { cpSync } from 'node:fs';
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'wire/index': 'src/wire/index.ts',
    'testing/index': 'src/testing/index.ts',
    'agent/index': 'src/agent/index.ts',
    'child/index': 'src/child/index.ts',
    'queue/index': 'src/queue/index.ts',
    'queue/run-host-thread': 'src/queue/run-host-thread.ts',
    'testing/fake-child': 'src/testing/fake-child.ts',
    'testing/fake-fa': 'src/testing/fake-fa.ts',
    'testing/fake-fuseraft': 'src/testing/fake-fuseraft.ts',
    'testing/fake-mew': 'src/testing/fake-mew.ts',
    'cli/supervise': 'src/cli/supervise.ts',
    'process/reaper': 'src/process/reaper.ts',
  },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  clean: true,
  sourcemap: false,
  splitting: true,
  shims: false,
  // The dashboard's page is served as it is written (no front-end build): its files are copied next to the bundles.
  onSuccess: async () => {
    cpSync('src/dashboard/page', 'dist/dashboard/page', { recursive: true });
  },
});
