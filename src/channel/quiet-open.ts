// Opens a file for reading without updating its access time (Linux O_NOATIME), falling back to a plain open.
import { constants, openSync } from 'node:fs';

/** `O_NOATIME` where the platform has it (Linux), else 0 (a plain open). */
const NOATIME = constants.O_NOATIME ?? 0;

/**
 * Opens `path` read-only. On Linux the reads through this descriptor leave the file's access time alone:
 * on a disk file system mounted `relatime` (the default), each read of a file written since the last
 * read updates it, and that update dirties the inode, a journal write per read. A busy tail reads its
 * file after every write, so that was half the kernel time of its `pread`s. Only the file's owner (or a
 * process with CAP_FOWNER) may ask: for anyone else the open fails with EPERM, and a plain one follows.
 * `open` is the open call (tests pass one that refuses).
 */
export function openQuietly(path: string, open: typeof openSync = openSync): number {
  if (NOATIME !== 0) {
    try {
      return open(path, constants.O_RDONLY | NOATIME);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
    }
  }
  return open(path, 'r');
}
