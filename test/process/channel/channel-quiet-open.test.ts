// The event file is opened for reading without access-time updates (O_NOATIME), and opened plainly when the kernel refuses.
import { appendFileSync, closeSync, constants, mkdtempSync, openSync, readSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LineTail } from '../../../src/channel/index.js';
import { openQuietly } from '../../../src/channel/quiet-open.js';
import { tailRecorder } from '../../helpers/tail-recorder.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'subvisor-quiet-open-test-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const LONG_AGO = new Date('2001-01-01T00:00:00Z');

/** A file whose access time is long ago (older than a day: `relatime` updates it on the next read). */
function fileReadLongAgo(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  utimesSync(path, LONG_AGO, new Date());
  return path;
}

function readFirstByte(fd: number): void {
  readSync(fd, Buffer.alloc(1), 0, 1, 0);
}

function refusing(code: string) {
  const calls: Array<string | number> = [];
  const open = ((path: string, flags: string | number) => {
    calls.push(flags);
    if (typeof flags === 'number' && (flags & (constants.O_NOATIME ?? 0)) !== 0) {
      throw Object.assign(new Error(`${code}: refused, open '${path}'`), { code });
    }
    return openSync(path, flags);
  }) as typeof openSync;
  return { open, calls };
}

describe('quiet open', () => {
  it.runIf(process.platform === 'linux')("a tail's reads leave the event file's access time alone", (ctx) => {
    // The control: a plain read of the same kind of file updates its access time on this file system.
    const control = fileReadLongAgo('control', 'x\n');
    const fd = openSync(control, 'r');
    readFirstByte(fd);
    closeSync(fd);
    if (statSync(control).atimeMs === LONG_AGO.getTime()) ctx.skip(); // mounted noatime: nothing to tell apart

    const path = fileReadLongAgo('events.jsonl', '{"a":1}\n');
    const { lines, reports, handlers } = tailRecorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    appendFileSync(path, '{"b":2}\n');
    tail.drain();
    tail.close();
    expect(lines).toEqual(['{"a":1}', '{"b":2}']);
    expect(reports).toEqual([]);
    expect(statSync(path).atimeMs).toBe(LONG_AGO.getTime());
  });

  it.runIf(constants.O_NOATIME !== undefined)('opens plainly when the kernel refuses O_NOATIME (EPERM: not the owner)', () => {
    const path = fileReadLongAgo('events.jsonl', 'x\n');
    const { open, calls } = refusing('EPERM');
    const fd = openQuietly(path, open);
    try {
      const byte = Buffer.alloc(1);
      readSync(fd, byte, 0, 1, 0);
      expect(byte.toString()).toBe('x');
    } finally {
      closeSync(fd);
    }
    expect(calls).toEqual([constants.O_RDONLY | constants.O_NOATIME, 'r']);
  });

  it('passes on a missing file as it is', () => {
    expect(() => openQuietly(join(dir, 'missing.jsonl'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });

  it.runIf(constants.O_NOATIME !== undefined)('passes on any refusal but EPERM without a second open', () => {
    const { open, calls } = refusing('EACCES');
    const path = fileReadLongAgo('events.jsonl', 'x\n');
    expect(() => openQuietly(path, open)).toThrow(expect.objectContaining({ code: 'EACCES' }));
    expect(calls).toHaveLength(1);
  });
});
