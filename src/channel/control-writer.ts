// The control writer: stamps, validates and appends whole control lines through one kept-open fd.
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { createSender } from '../wire/index.js';
import type { PayloadOf, Rejection, Sender, WireControl, WireControlType } from '../wire/index.js';

/** Result of {@link ControlWriter.send}: the line written, or why nothing was written. */
export type SendResult =
  | { ok: true; seq: number; line: string }
  | { ok: false; rejection: Rejection }
  | { ok: false; closed: true; reason: string };

/** The payload of a control of type `T`. */
export type ControlPayload<T extends WireControlType> = PayloadOf<Extract<WireControl, { type: T }>>;

/**
 * Appends control lines to the control file. Each line is encoded by the wire sender (so a control
 * the wire cannot carry is refused with no line written and no seq consumed) and written whole
 * (`line + '\n'`) with writeSync on an O_APPEND fd.
 */
export class ControlWriter {
  readonly #sender: Sender<'control'>;
  #fd: number | undefined;

  /** Opens `path` (which must exist) for appending; the first line gets `startAfter + 1`. Throws on I/O errors. */
  constructor(path: string, runId: string, startAfter = 0) {
    this.#sender = createSender('control', runId, startAfter);
    this.#fd = openSync(path, constants.O_WRONLY | constants.O_APPEND);
  }

  /** The seq of the last line written (0 before the first). */
  get lastSeq(): number {
    return this.#sender.lastSeq;
  }

  /** True once `close()` was called or a write failed. */
  get closed(): boolean {
    return this.#fd === undefined;
  }

  /**
   * Encodes and appends one control. Never throws: an encode rejection, a closed writer or a write error
   * is returned. A write error closes the writer (the channel is broken).
   */
  send<T extends WireControlType>(type: T, payload?: ControlPayload<T>): SendResult {
    const fd = this.#fd;
    if (fd === undefined) return { ok: false, closed: true, reason: 'the control channel is closed' };
    const encoded = this.#sender.next(type, payload ?? {});
    if (!encoded.ok) return encoded;
    const bytes = Buffer.from(encoded.line + '\n', 'utf8');
    try {
      let written = 0;
      while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    } catch (error) {
      this.close();
      return { ok: false, closed: true, reason: `writing the control file failed: ${(error as Error).message}` };
    }
    return { ok: true, seq: this.#sender.lastSeq, line: encoded.line };
  }

  /** Closes the fd; later sends are refused. Idempotent. */
  close(): void {
    const fd = this.#fd;
    if (fd === undefined) return;
    this.#fd = undefined;
    try {
      closeSync(fd);
    } catch {
      // The fd is gone either way.
    }
  }
}
