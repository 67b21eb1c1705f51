// Suite-wide setup: builds dist/ when it is missing (the fake child runs from it), tags this suite's
// processes through the environment they inherit, and after the suite fails the run if any is still alive.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** Every process this suite starts inherits this variable, so other suites' processes are not counted. */
const SUITE_TAG = 'SUBVISOR_TEST_SUITE';
const suiteId = randomUUID();

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
  if (survivors.length > 0) {
    throw new Error(`processes started by the test suite outlived it:\n${survivors.join('\n')}`);
  }
}
