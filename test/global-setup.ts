// Suite-wide setup: builds dist/ when it is missing (the fake child runs from it), and after the suite
// fails the run if any fake-child process is still alive.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function liveFakeChildren(): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      if (state !== 'Z' && cmdline.includes(root) && cmdline.includes('fake-child')) found.push(`${entry}: ${cmdline}`);
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

export function setup(): void {
  if (!existsSync(`${root}dist/testing/fake-child.js`)) {
    execFileSync('npx', ['tsup', '--silent'], { cwd: root, stdio: 'inherit' });
  }
}

export async function teardown(): Promise<void> {
  // Children being reaped right now get a moment to go.
  for (let attempt = 0; attempt < 50 && liveFakeChildren().length > 0; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const survivors = liveFakeChildren();
  if (survivors.length > 0) {
    throw new Error(`fake-child processes outlived the test suite:\n${survivors.join('\n')}`);
  }
}
