// Which test files `npm test` leaves to `npm run test:slow`: the whole-package checks, the sweeps and the checks that
// need a server, a browser or minutes of CPU. Both configurations read this list, so a file runs in exactly one.
import { basename } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';


/**
 * Files (by name, without `.test.ts` / `.shared.test.ts`) that run in `npm run test:slow`, not in `npm test`. The
 * README's test command must stay under 150 s on 2 cores; these are about 45 % of its CPU. CI runs both.
 */
export const SLOW_FILES = [
  // The package as a user gets it: the tarball installed into an app, with and without redis; docs and examples run.
  'package', 'without-redis', 'docs', 'examples',
  // subvisor/queue on a real redis-server, and the dashboard (served from a queue's runs, and in a real Chromium).
  'queue', 'queue-faults', 'queue-dashboard', 'queue-telemetry', 'pool-queue', 'cli-queue', 'cli-dashboard', 'dashboard-browser',
  // Property sweeps and the testing kit's exhaustive checks (the quick suite keeps one of each kind of child).
  'wire-properties', 'fake-child-random', 'fake-child-kit', 'fake-fuseraft', 'fake-fa', 'agent-conformance',
  // Minutes of CPU by design: many trees at once, memory and CPU hogs, bubblewrap, durable runs across parents.
  'spawn-scale', 'hostile-backpressure', 'tree-limits', 'sandbox', 'durable',
] as const;

/** The glob of each slow file under test/ (for `include` in the slow configuration and `exclude` in the quick one). */
export const SLOW_GLOBS = SLOW_FILES.flatMap((name) => [`test/**/${name}.test.ts`, `test/**/${name}.shared.test.ts`]);

/**
 * A sequencer that starts the named files first, in that order (the longest, from a 2-core run). On a clean clone
 * vitest knows no durations and starts the largest files first; a long file that starts last decides the wall time
 * alone. A stale name only costs ordering, never a result.
 */
export function longestFirst(names: readonly string[]): typeof BaseSequencer {
  return class LongestFirstSequencer extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const rank = (file: TestSpecification) => {
        const index = names.indexOf(basename(file.moduleId).replace(/(\.shared)?\.test\.ts$/, ''));
        return index === -1 ? names.length : index;
      };
      // Array.prototype.sort is stable: the files not listed keep vitest's own order after the listed ones.
      return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
    }
  };
}
