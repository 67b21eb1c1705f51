// The queue test files on a machine without redis-server, which CI (it installs Redis) never is: with redis-server
// hidden from PATH they skip what needs it, pass the rest, say so once and leave no temp file or process behind.
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));
/** All in the slow tier (test/tiers.ts), so the nested suite runs with its configuration. */
const QUEUE_FILES = [
  'test/process/queue/queue.test.ts',
  'test/process/queue/queue-faults.test.ts',
  'test/process/queue/queue-telemetry.test.ts',
  'test/process/queue/queue-dashboard.test.ts',
  'test/process/cli/cli-queue.test.ts',
  'test/process/cli/cli-dashboard.test.ts',
];

const isExecutable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/**
 * PATH with `program` gone: each directory that holds it is replaced by a directory (in `scratch`) of links to
 * everything else in it (node, sh and the rest of /usr/bin stay reachable).
 */
function pathWithout(program: string, scratch: string): string {
  return (process.env['PATH'] ?? '')
    .split(delimiter)
    .map((dir, index) => {
      if (!isExecutable(join(dir, program))) return dir;
      const shadow = join(scratch, `path-${index}`);
      mkdirSync(shadow);
      for (const entry of readdirSync(dir)) if (entry !== program) symlinkSync(join(dir, entry), join(shadow, entry));
      return shadow;
    })
    .join(delimiter);
}

interface VitestReport {
  success: boolean;
  numFailedTests: number;
  numPassedTests: number;
  numPendingTests: number;
  testResults: Array<{ name: string; assertionResults: Array<{ status: string }> }>;
}

describe('the queue test files with redis-server hidden from PATH', () => {
  it('skip what needs Redis, pass the rest, say it once and leave nothing behind (exit 0)', async () => {
    // Made here, not while vitest collects: a filtered-out test runs no hook that would remove it.
    const scratch = mkdtempSync(join(tmpdir(), 'without-redis-'));
    onTestFinished(() => rmSync(scratch, { recursive: true, force: true }));
    const report = join(scratch, 'report.json');
    const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
    // The nested suite has its own global setup: its teardown fails the run (exit 1) on any leftover.
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [vitest, 'run', '--config', 'vitest.slow.config.ts', ...QUEUE_FILES, '--reporter=json', `--outputFile=${report}`],
        { cwd: root, env: { ...process.env, PATH: pathWithout('redis-server', scratch) }, timeout: 120_000 },
        (_error, _stdout, stderr) => resolve({ code: child.exitCode, stderr }),
      );
    });
    expect(result.stderr).not.toMatch(/left temp files behind|outlived it/);
    expect(result.code, result.stderr).toBe(0);
    // Said once for the whole run, with the command that installs what is missing.
    expect(result.stderr.match(/not on PATH, so the suite skips/g), 'the note, said once').toHaveLength(1);
    expect(result.stderr).toMatch(/redis-server(?: and [\w-]+)* (?:is|are) not on PATH, so the suite skips the queue tests .* sudo apt-get install redis-server/);

    const parsed = JSON.parse(readFileSync(report, 'utf8')) as VitestReport;
    expect(parsed).toMatchObject({ success: true, numFailedTests: 0 });
    const statuses = (file: string) => parsed.testResults.find((r) => r.name.endsWith(`/${file}`))!.assertionResults.map((a) => a.status);
    // the files of test/process/queue/ need Redis throughout; cli-queue checks its usage errors without it.
    const needRedis = QUEUE_FILES.filter((file) => file.startsWith('test/process/queue/'));
    expect(new Set(needRedis.flatMap((file) => statuses(file)))).toEqual(new Set(['skipped']));
    expect(statuses('test/process/cli/cli-queue.test.ts')).toContain('passed');
    expect(statuses('test/process/cli/cli-dashboard.test.ts')).toContain('passed');
    expect(parsed.numPendingTests).toBeGreaterThan(10);
  }, 150_000);
});
