// Reads /proc files into one reused buffer: the process-table scans read thousands of them at a time.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

/**
 * Big enough for any stat file and nearly any children file or environment. `readFileSync` cannot know
 * the size of a /proc file (they all report 0), so it allocates 64 KiB for each one: a rescan with 1000
 * runs read about 1000 stat files and allocated 68 MB. Through this buffer a stat scan of 2000 processes
 * took 30-34 ms instead of 36-51.
 */
const BUFFER_BYTES = 64 * 1024;
let shared: Buffer | undefined;

/**
 * Calls `use` with the bytes of the /proc file at `path` (a view valid only during the call) and
 * returns what it returns. Throws what opening or reading throws (ENOENT: the process is gone; EACCES:
 * not ours), as `readFileSync` would. A file larger than the buffer is read with `readFileSync`.
 */
export function withProcFile<T>(path: string, use: (bytes: Buffer) => T): T {
  const buffer = (shared ??= Buffer.allocUnsafe(BUFFER_BYTES));
  const fd = openSync(path, 'r');
  let length = 0;
  try {
    // A /proc file comes in pieces of at most a page: read until the end, not just once.
    while (length < BUFFER_BYTES) {
      const got = readSync(fd, buffer, length, BUFFER_BYTES - length, null);
      if (got === 0) break;
      length += got;
    }
  } finally {
    closeSync(fd);
  }
  // Full: there may be more (a huge environment); such a file is rare enough to read the slow way.
  if (length === BUFFER_BYTES) return use(readFileSync(path));
  // Taken from the shared buffer for the call: a `use` that reads another /proc file (none does) gets its own.
  shared = undefined;
  try {
    return use(buffer.subarray(0, length));
  } finally {
    shared = buffer;
  }
}

/** The text of the /proc file at `path` (latin1: the kernel writes bytes, and pids and fields are ASCII). Throws as {@link withProcFile}. */
export function readProcText(path: string): string {
  return withProcFile(path, (bytes) => bytes.toString('latin1'));
}
