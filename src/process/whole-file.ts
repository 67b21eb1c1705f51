// Writing a small private file whole: a temp file (0600) renamed over it, so a reader never sees half of it.
import { closeSync, constants, openSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Writes `text` to `dir/name` whole, 0600: a temp file of this process renamed over the old one. */
export function writeWholeFile(dir: string, name: string, text: string): void {
  const temp = join(dir, `${name}.${process.pid}`);
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, join(dir, name));
}
