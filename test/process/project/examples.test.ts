// Runs every script in examples/ against the built package: the documentation's examples must stay runnable.
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const examplesDir = fileURLToPath(new URL('../../../examples/', import.meta.url));
const scripts = readdirSync(examplesDir).filter((name) => name.endsWith('.mjs'));

describe('examples', () => {
  it('has at least one example', () => {
    expect(scripts.length).toBeGreaterThan(0);
  });

  // Each example is its own processes and temp files: they run side by side (vitest's maxConcurrency bounds how many).
  it.concurrent.each(scripts)('%s runs to completion', async (script) => {
    const { stdout } = await run(process.execPath, [examplesDir + script], {
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      timeout: 60_000,
    });
    expect(stdout.trim().length).toBeGreaterThan(0);
  });
});
