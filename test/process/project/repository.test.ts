// The tracked files are clean: no merge-conflict markers left behind by a merge.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const TEXT = /\.(ts|mjs|js|json|md|yml|yaml|sh)$|^\.ci\/run$/;
/** A conflict marker is seven of <, = or > at the start of a line (the `=` one alone on its line). */
const MARKER = /^(<{7} |={7}$|>{7} )/m;

describe('repository', () => {
  it('has no merge-conflict markers in its tracked text files', () => {
    const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((file) => TEXT.test(file));
    expect(files.length).toBeGreaterThan(100);
    const marked = files.filter((file) => MARKER.test(readFileSync(join(ROOT, file), 'utf8')));
    expect(marked).toEqual([]);
  });
});
