// The /proc reader: whole files through one reused buffer, larger ones the slow way, errors as readFileSync's.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readProcText, withProcFile } from '../../../src/process/proc-files.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(os.tmpdir(), 'subvisor-proc-files-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('withProcFile', () => {
  it.runIf(process.platform === 'linux')('reads a /proc file whole (they report size 0)', () => {
    const stat = readProcText('/proc/self/stat');
    expect(stat.startsWith(`${process.pid} (`)).toBe(true);
    expect(stat.endsWith('\n')).toBe(true);
  });

  it.each([0, 1, 4096, 65535, 65536, 65537, 300_000])('a file of %i bytes comes back byte for byte', (size) => {
    const path = join(dir, 'file');
    const content = Buffer.alloc(size);
    for (let i = 0; i < size; i++) content[i] = (i * 7 + 3) & 0xff;
    writeFileSync(path, content);
    expect(withProcFile(path, (bytes) => Buffer.from(bytes)).equals(content)).toBe(true);
  });

  it('a read nested inside another gets its own buffer (the outer view is not overwritten)', () => {
    const outer = join(dir, 'outer');
    const inner = join(dir, 'inner');
    writeFileSync(outer, 'outer bytes');
    writeFileSync(inner, 'INNER');
    const seen = withProcFile(outer, (bytes) => {
      const nested = withProcFile(inner, (other) => other.toString('latin1'));
      return [bytes.toString('latin1'), nested];
    });
    expect(seen).toEqual(['outer bytes', 'INNER']);
    // The shared buffer is back for the next call.
    expect(readProcText(outer)).toBe('outer bytes');
  });

  it.runIf(process.platform === 'linux')('throws what opening or reading throws, and closes what it opened', () => {
    const openDescriptors = () => readdirSync('/proc/self/fd').length;
    const before = openDescriptors();
    // Gone (a process that ended while the table was read): opening fails.
    expect(() => withProcFile(join(dir, 'missing'), () => 1)).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    // A directory opens but cannot be read: the descriptor must still be closed.
    for (let i = 0; i < 20; i++) expect(() => readProcText(dir)).toThrow(expect.objectContaining({ code: 'EISDIR' }));
    expect(openDescriptors()).toBe(before);
  });
});
