// Synchronous, whole writes to a file descriptor (the fakes' stdout): every line reaches the pipe before the next step.
import { writeSync } from 'node:fs';

const waitCell = new Int32Array(new SharedArrayBuffer(4));

/**
 * Writes all of `text` to `fd` now, like a program that flushes every line. A full non-blocking pipe
 * (EAGAIN) is waited out; a reader that went away (EPIPE) is reported as false, never thrown.
 */
export function writeAllSync(fd: number, text: string): boolean {
  const bytes = Buffer.from(text, 'utf8');
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN') {
        Atomics.wait(waitCell, 0, 0, 2);
        continue;
      }
      if (code === 'EPIPE' || code === 'EBADF') return false;
      throw error;
    }
  }
  return true;
}
