// Fen's answer: the result's inline text, or the untrusted final-text-path file it names.
import { constants } from 'node:fs';
import { lstat, open, unlink } from 'node:fs/promises';
import type { Answer } from '../../run/outcome.js';
import type { ResultEvent } from '../../wire/index.js';

/**
 * Reads the answer of a `result` event. `final-text` is the answer unless `final-text-path` names a
 * file: then that file is read and removed, but only when it is a regular file (lstat: no symlink),
 * owned by the current user and at most `maxBytes` long; it is opened with O_NOFOLLOW and checked
 * again on the open fd (same inode, still a regular file of an acceptable size), so it cannot be
 * swapped in between. Otherwise the file is neither read nor removed and the cut inline text is kept
 * with a note. Never throws.
 */
export async function readAnswer(result: ResultEvent, maxBytes: number): Promise<Answer> {
  const inline = result['final-text'];
  const path = result['final-text-path'];
  const cut = result['truncated?'] === true;
  if (path === undefined) {
    if (!cut) return inline === undefined ? { truncated: false } : { finalText: inline, truncated: false };
    return {
      ...(inline === undefined ? {} : { finalText: inline }),
      truncated: true,
      truncationNote: 'the child cut the answer to fit one line and wrote no file with the whole text',
    };
  }
  const read = await readAnswerFile(path, maxBytes);
  if (read.ok) return { finalText: read.text, truncated: false };
  return {
    ...(inline === undefined ? {} : { finalText: inline }),
    truncated: true,
    truncationNote: `the whole answer in ${JSON.stringify(path)} was not read: ${read.reason}; ${
      inline === undefined ? 'no inline text was sent' : 'only the cut inline text is kept'
    }`,
  };
}

type FileRead = { ok: true; text: string } | { ok: false; reason: string };

async function readAnswerFile(path: string, maxBytes: number): Promise<FileRead> {
  let link;
  try {
    link = await lstat(path);
  } catch (error) {
    return { ok: false, reason: `it cannot be examined (${(error as NodeJS.ErrnoException).code ?? String(error)})` };
  }
  if (link.isSymbolicLink()) return { ok: false, reason: 'it is a symbolic link' };
  if (!link.isFile()) return { ok: false, reason: 'it is not a regular file' };
  const uid = process.getuid?.();
  if (uid !== undefined && link.uid !== uid) return { ok: false, reason: `it is owned by uid ${link.uid}, not ${uid}` };
  if (link.size > maxBytes) return { ok: false, reason: `it is ${link.size} bytes, more than the ${maxBytes}-byte limit` };
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    return { ok: false, reason: `it cannot be opened (${(error as NodeJS.ErrnoException).code ?? String(error)})` };
  }
  try {
    const stat = await handle.stat();
    if (stat.ino !== link.ino || stat.dev !== link.dev || !stat.isFile()) {
      return { ok: false, reason: 'it was replaced while being checked' };
    }
    if (stat.size > maxBytes) return { ok: false, reason: `it grew past the ${maxBytes}-byte limit` };
    // Read at most one byte past the limit: a file still growing cannot make us hold more.
    const buffer = Buffer.allocUnsafe(Math.min(stat.size, maxBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) return { ok: false, reason: `it grew past the ${maxBytes}-byte limit` };
    const text = new TextDecoder('utf-8').decode(buffer.subarray(0, length));
    await handle.close();
    handle = undefined;
    try {
      await unlink(path);
    } catch {
      // Read whole; a file we could not remove is the child's temp dir's problem, not the answer's.
    }
    return { ok: true, text };
  } catch (error) {
    return { ok: false, reason: `reading it failed (${(error as Error).message})` };
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
