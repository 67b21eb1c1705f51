// Fen's answer: the result's inline text, or the untrusted final-text-path file it names (checked, read bounded, removed).
import { constants } from 'node:fs';
import type { Stats } from 'node:fs';
import { lstat, open, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import type { Answer } from '../../protocol/results.js';
import type { FinalTextFileRefusal, FinalTextRefusalCode } from '../../protocol/index.js';
import type { ResultEvent } from '../../wire/index.js';

/**
 * File timestamps come from the kernel's coarse clock (one tick, a few ms, behind `Date.now()`): a file
 * the child made right at the start may carry a time this much before the recorded run start.
 */
const CLOCK_SLACK_MS = 50;
const READ_CHUNK_BYTES = 64 * 1024;

/** The limits a `final-text-path` file must meet. */
export interface AnswerFileRules {
  /** Largest file read (`maxFinalTextBytes`). */
  maxBytes: number;
  /** Wall time (ms) the run started: a file changed before it is not the child's. */
  runStartedAt: number;
}

/**
 * Reads the answer of a `result` event. `final-text` is the answer unless `final-text-path` names a
 * file: that file is the answer only when it is the child's private temp file (see
 * {@link readAnswerFile}); otherwise the cut inline text is kept, `truncated`, with a note and a typed
 * `fileRefusal`. Never throws.
 */
export async function readAnswer(result: ResultEvent, rules: AnswerFileRules): Promise<Answer> {
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
  // The spec's file holds the uncut text and the line a cut UTF-8 prefix of it: a file shorter than that
  // prefix cannot be the whole answer (an empty file, a /proc file of a process that just ended).
  const read = await readAnswerFile(path, rules, cut && inline !== undefined ? Buffer.byteLength(inline) : 0);
  if (read.ok) return { finalText: read.text, truncated: false };
  return {
    ...(inline === undefined ? {} : { finalText: inline }),
    truncated: true,
    truncationNote: `the whole answer in ${JSON.stringify(path)} was not read: ${read.refusal.reason}; ${
      inline === undefined ? 'no inline text was sent' : 'only the cut inline text is kept'
    }`,
    fileRefusal: read.refusal,
  };
}

type FileRead = { ok: true; text: string } | { ok: false; refusal: FinalTextFileRefusal };

/**
 * The file is read only when all of these hold (lstat first, then again on the descriptor opened with
 * O_NOFOLLOW, so a swap in between is seen): a regular file, owned by our uid, exactly one link (a hard
 * link to a file of ours elsewhere has two), not writable by group or others, its mtime, ctime and
 * (where the filesystem keeps one) birth time no earlier than the run's start, and at most `maxBytes`
 * long. It is read through the descriptor until end of file (never trusting `st_size` for the reading),
 * at most `maxBytes` + 1 bytes; what was read must then be exactly `st_size` bytes (a /proc or /sys
 * file reports 0 or a page, and holds something else) and at least `minBytes` (the cut inline text's).
 * A refused file is neither read nor removed, except one that passes every ownership check but is too
 * large: that is the child's temp file, removed as the spec says the parent does.
 */
async function readAnswerFile(path: string, rules: AnswerFileRules, minBytes: number): Promise<FileRead> {
  const refuse = (code: FinalTextRefusalCode, reason: string, removed = false): FileRead => ({
    ok: false,
    refusal: { code, reason, path, removed },
  });
  let link: Stats;
  try {
    link = await lstat(path);
  } catch (error) {
    return refuse('unreadable', `it cannot be examined (${errorCode(error)})`);
  }
  const foreign = ownershipProblem(link, rules);
  if (foreign !== undefined) return refuse(foreign.code, foreign.reason);
  if (link.size > rules.maxBytes) {
    const removed = await removeIfSame(path, link);
    return refuse('too-large', `it is ${link.size} bytes, more than the ${rules.maxBytes}-byte limit`, removed);
  }
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    return refuse('unreadable', `it cannot be opened (${errorCode(error)})`);
  }
  try {
    const stat = await handle.stat();
    if (stat.ino !== link.ino || stat.dev !== link.dev) return refuse('replaced', 'it was replaced while being checked');
    const changed = ownershipProblem(stat, rules);
    if (changed !== undefined) return refuse(changed.code, `${changed.reason} (seen on the opened file)`);
    if (stat.size > rules.maxBytes) {
      const removed = await removeIfSame(path, link);
      return refuse('too-large', `it grew past the ${rules.maxBytes}-byte limit`, removed);
    }
    const bytes = await readBounded(handle, rules.maxBytes);
    await handle.close();
    handle = undefined;
    if (bytes === undefined || bytes.length !== stat.size) {
      const held = bytes === undefined ? `more than ${rules.maxBytes} bytes` : `${bytes.length} bytes`;
      return refuse('size-mismatch', `it holds ${held} but reports ${stat.size}: not a file the child wrote (a /proc or /sys file, or one still being written)`);
    }
    if (bytes.length < minBytes) {
      return refuse('shorter-than-cut', `it holds ${bytes.length} bytes, fewer than the ${minBytes} of the result's cut text, so it is not the whole answer`);
    }
    await removeIfSame(path, link);
    return { ok: true, text: new TextDecoder('utf-8').decode(bytes) };
  } catch (error) {
    return refuse('unreadable', `reading it failed (${(error as Error).message})`);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** The first ownership rule `stat` breaks, or undefined when it is the child's private temp file. */
function ownershipProblem(stat: Stats, rules: AnswerFileRules): { code: FinalTextRefusalCode; reason: string } | undefined {
  if (stat.isSymbolicLink()) return { code: 'not-regular', reason: 'it is a symbolic link' };
  if (!stat.isFile()) return { code: 'not-regular', reason: 'it is not a regular file' };
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) return { code: 'foreign-owner', reason: `it is owned by uid ${stat.uid}, not ${uid}` };
  if (stat.nlink !== 1) return { code: 'hard-linked', reason: `it has ${stat.nlink} links, not 1` };
  if ((stat.mode & 0o022) !== 0) {
    return { code: 'shared-writable', reason: `its mode ${(stat.mode & 0o777).toString(8)} lets group or others write it` };
  }
  const since = rules.runStartedAt - CLOCK_SLACK_MS;
  const changedAt = Math.min(stat.mtimeMs, stat.ctimeMs);
  if (changedAt < since) {
    return { code: 'older-than-run', reason: `it was last changed ${Math.round(since - changedAt)} ms before the run started` };
  }
  // Touching an existing file moves its mtime and ctime to now, but not its birth time (0 where the
  // filesystem keeps none, as procfs).
  if (stat.birthtimeMs > 0 && stat.birthtimeMs < since) {
    return { code: 'older-than-run', reason: `it was created ${Math.round(since - stat.birthtimeMs)} ms before the run started` };
  }
  return undefined;
}

/** Reads to end of file; undefined when there is more than `maxBytes` (never holds more than `maxBytes` + one chunk). */
async function readBounded(handle: FileHandle, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, maxBytes + 1 - total));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) break;
    chunks.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead));
    total += bytesRead;
    if (total > maxBytes) return undefined;
  }
  return Buffer.concat(chunks, total);
}

/** Removes `path` if it still names the file that was checked; whether it was removed. */
async function removeIfSame(path: string, checked: Stats): Promise<boolean> {
  try {
    const now = await lstat(path);
    if (now.ino !== checked.ino || now.dev !== checked.dev) return false;
    await unlink(path);
    return true;
  } catch {
    return false;
  }
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}
