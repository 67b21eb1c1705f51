// Opens the --controls source (regular file, named pipe or standard input) and delivers its lines until closed.
import { constants, openSync, closeSync, statSync, createReadStream } from 'node:fs';
import { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { LineSplitter, type SplitLine } from '../text/line-splitter.js';
import { UsageError } from './usage-error.js';

/** Longer control lines cannot fit one wire line anyway (65535 bytes); this bound only caps memory. */
export const MAX_CONTROL_LINE_BYTES = 256 * 1024;

export interface ControlsSourceHandlers {
  line(line: SplitLine): void;
  /** The source ended (end of file, stdin closed) or failed; no more lines will come. */
  end(error?: Error): void;
}

export interface ControlsSource {
  /** Stops reading and releases the file descriptor; idempotent. */
  close(): void;
}

/**
 * A named pipe is opened read-write and non-blocking: the open does not wait for a writer, writers may come and go
 * (our own write end means the reader never sees end of file between them), and reads go through a libuv pipe handle
 * that closing really stops. A regular file is read once to its end.
 */
function openStream(path: string): Readable {
  if (path === '-') return process.stdin;
  let kind: 'fifo' | 'file';
  try {
    const stats = statSync(path);
    if (stats.isFIFO()) kind = 'fifo';
    else if (stats.isFile()) kind = 'file';
    else throw new UsageError(`--controls ${path} is neither a regular file nor a named pipe; use a file, a FIFO (mkfifo) or '-'.`);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`--controls ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)}).`);
  }
  let fd: number;
  try {
    fd = openSync(path, kind === 'file' ? constants.O_RDONLY : constants.O_RDWR | constants.O_NONBLOCK);
  } catch (error) {
    throw new UsageError(`--controls ${path}: cannot open it (${(error as NodeJS.ErrnoException).code ?? String(error)}).`);
  }
  if (kind === 'file') return createReadStream(path, { fd });
  try {
    return new Socket({ fd, readable: true, writable: false });
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Throws UsageError when the source cannot be opened. */
export function openControlsSource(path: string, handlers: ControlsSourceHandlers): ControlsSource {
  const stream = openStream(path);
  const splitter = new LineSplitter(MAX_CONTROL_LINE_BYTES);
  let closed = false;

  const finish = (error?: Error): void => {
    if (closed) return;
    closed = true;
    stream.off('data', onData);
    if (error === undefined) for (const line of splitter.end()) handlers.line(line);
    handlers.end(error);
  };
  const onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (const line of splitter.push(bytes)) handlers.line(line);
  };
  stream.on('data', onData);
  stream.once('end', () => finish());
  stream.once('error', (error: Error) => finish(error));
  // Errors after close (a destroyed pipe) must not crash the process.
  stream.on('error', () => undefined);

  return {
    close(): void {
      if (!closed) {
        closed = true;
        stream.off('data', onData);
      }
      stream.destroy();
    },
  };
}
