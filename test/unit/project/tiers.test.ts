// test/tiers.ts: every name it moves to `npm run test:slow` is a test file that exists, so no file silently drops out
// of both suites and no stale name stays in the list.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SLOW_FILES } from '../../tiers.js';

const testRoot = join(import.meta.dirname, '..', '..');

function testFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? testFiles(join(folder, entry.name)) : entry.name.endsWith('.test.ts') ? [entry.name] : [],
  );
}

describe('the slow tier', () => {
  it('names only test files that exist, each once', () => {
    const names = testFiles(testRoot).map((file) => file.replace(/(\.shared)?\.test\.ts$/, ''));
    for (const slow of SLOW_FILES) expect(names, `${slow} names no test file`).toContain(slow);
    expect(new Set(SLOW_FILES).size).toBe(SLOW_FILES.length);
  });
});
