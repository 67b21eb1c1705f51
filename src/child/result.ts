// The run's result payload: the whole answer when it fits one line, else a cut answer plus a private file with all of it.
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_LINE_BYTES } from '../wire/index.js';
import { utf8Prefix } from '../text/utf8.js';

/**
 * Builds the `result` payload. `fits` says whether a payload encodes to a legal line. A text that does not
 * fit is written whole to a new 0600 temp file (the parent owns and removes it), then cut at a UTF-8
 * boundary to the longest prefix whose line fits, with `truncated?`. Returns undefined when even the cut
 * line cannot fit (the child then sends no result).
 */
export function resultPayload(
  base: Record<string, unknown>,
  text: string | undefined,
  fits: (payload: Record<string, unknown>) => boolean,
  onFileError: (message: string) => void,
): Record<string, unknown> | undefined {
  // Without room for even an empty text no result can be sent: write no file that nobody would remove.
  if (!fits(base)) return undefined;
  if (text === undefined) return base;
  const whole = { ...base, 'final-text': text };
  if (fits(whole)) return whole;
  let extra: Record<string, unknown> = {};
  try {
    extra = { 'final-text-path': writePrivateFile(text) };
  } catch (error) {
    onFileError((error as Error).message);
  }
  const cutPayload = (bytes: number) => ({ ...base, 'final-text': utf8Prefix(text, bytes), 'truncated?': true, ...extra });
  // Binary search over byte lengths for the longest prefix whose line fits.
  let low = 0;
  let high = Math.min(Buffer.byteLength(text), MAX_LINE_BYTES);
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (fits(cutPayload(middle))) low = middle;
    else high = middle - 1;
  }
  const payload = cutPayload(low);
  return fits(payload) ? payload : undefined;
}

function writePrivateFile(text: string): string {
  const path = join(tmpdir(), `fen-final-text-${randomBytes(6).toString('hex')}.txt`);
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  return path;
}
