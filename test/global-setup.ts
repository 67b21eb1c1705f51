// Suite-wide setup: builds dist/ when it is missing (the fake child runs from it), says once what a machine
// without redis-server or jq skips, tags this suite's processes and gives them a private TMPDIR through the
// environment they inherit, and after the suite fails the run if any process is still alive or any temp file
// or directory was left behind.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { missingToolsNote } from './helpers/optional-tools.js';

const root = fileURLToPath(new URL('..', import.meta.url));
/** Every process this suite starts inherits this variable, so other suites' processes are not counted. */
const SUITE_TAG = 'SUBVISOR_TEST_SUITE';
const suiteId = randomUUID();
/** os.tmpdir() of every test process and child: whatever is left in it at the end is a leak. */
let suiteTmp: string | undefined;

function liveSuiteProcesses(): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (!environ.includes(`${SUITE_TAG}=${suiteId}`)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (state !== 'Z' && !cmdline.includes('vitest')) found.push(`${entry}: ${cmdline}`);
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

export function setup(): void {
  process.env[SUITE_TAG] = suiteId;
  suiteTmp = mkdtempSync(join(tmpdir(), 'subvisor-suite-'));
  process.env['TMPDIR'] = suiteTmp;
  const missing = missingToolsNote();
  if (missing !== undefined) console.warn(missing);
  if (!existsSync(`${root}dist/testing/fake-child.js`)) {
    execFileSync('npx', ['tsup', '--silent'], { cwd: root, stdio: 'inherit' });
  }
}

export async function teardown(): Promise<void> {
  // Children being reaped right now get a moment to go.
  for (let attempt = 0; attempt < 50 && liveSuiteProcesses().length > 0; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const survivors = liveSuiteProcesses();
  const leftovers = suiteTmp === undefined ? [] : readdirSync(suiteTmp);
  if (suiteTmp !== undefined) rmSync(suiteTmp, { recursive: true, force: true });
  const problems: string[] = [];
  if (survivors.length > 0) problems.push(`processes started by the test suite outlived it:\n${survivors.join('\n')}`);
  if (leftovers.length > 0) problems.push(`the test suite left temp files behind: ${leftovers.join(', ')}`);
  if (problems.length > 0) {
    // vitest reports an error thrown here but still exits 0: set the exit code so the run fails.
    process.exitCode = 1;
    throw new Error(problems.join('\n'));
  }
}
