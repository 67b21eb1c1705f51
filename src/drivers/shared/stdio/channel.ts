// The one stdio JSONL channel of every driver that speaks lines to its child: stdout read as bounded lines under the core's backpressure, JSON lines written to stdin, a bounded drain at the end.
import type { ProcessIO } from '../../../protocol/driver.js';
import { LineSplitter } from '../../../text/line-splitter.js';
import type { LineReceiver } from '../../../text/line-splitter.js';
import type { JsonValue } from '../../../wire/index.js';
import { overlongRejection } from '../json-line.js';
import type { FrameRejection } from '../json-line.js';
import { nodeTimer } from '../pending-requests.js';
import type { SetTimer } from '../pending-requests.js';

/**
 * How long {@link StdioChannel.finish} waits for stdout to end once the child has exited. What the child
 * wrote before it went is in the pipe already and is read within a turn of the event loop; only a process
 * that left the tree and holds stdout open makes the drain wait, and the core's reap closes the pipes
 * 1 s after the tree is gone (`PIPE_DRAIN_MS`). One rule for every stdio driver: wait for the end, but
 * never more than this (HEP waited on the core's close alone, fuseraft 2 s).
 */
export const STDOUT_DRAIN_MS = 2000;

/** Where the channel hands what it reads. */
export interface StdioLines {
  /** One whole stdout line, without its newline; `lineNumber` counts from 1. */
  line(text: string, lineNumber: number): void;
  /**
   * A line passed the bound and is skipped: its rejection (`too-large`, its `type` sniffed when it starts
   * with one), and its first bytes (`head`, decoded) for a protocol that must sniff more (a request's id).
   */
  overlong(rejection: FrameRejection, lineNumber: number, head: string): void;
}

export interface StdioChannelOptions {
  /** The longest line read, and written, in bytes (`maxFrameBytes`). */
  maxLineBytes: number;
  /** The core's backpressure (DriverContext.shouldPause): stdout is paused while it says so, until `resume()`. */
  shouldPause(): boolean;
  lines: StdioLines;
  /**
   * stdin failed (EPIPE: the child is exiting; the error's code or message in `what`), reported once;
   * every later write is refused (`closed`). Usually the child's exit then decides the outcome.
   */
  inputFailed?(what: string): void;
  /** How long the final drain waits for stdout's end (default {@link STDOUT_DRAIN_MS}). */
  drainMs?: number;
  setTimer?: SetTimer;
}

/** What became of a write. */
export type WriteResult =
  | { ok: true }
  /** Not written: the line is longer than `maxLineBytes` (the peer could not read it), or stdin is closed, ended or failed. */
  | { ok: false; code: 'too-large' | 'closed'; reason: string };

/**
 * One child's stdio as a JSON-lines channel. `attach` starts reading stdout; each line goes to
 * `lines.line`, an overlong one (skipped to its newline, memory bounded by `maxLineBytes`) to
 * `lines.overlong`; reading pauses after a chunk when `shouldPause()` says so. `write` sends one JSON
 * value as one line. `finish` drains stdout (bounded) and hands back the text after the last newline.
 */
export class StdioChannel {
  readonly #options: StdioChannelOptions;
  readonly #splitter: LineSplitter;
  readonly #receiver: LineReceiver;
  readonly #setTimer: SetTimer;
  #io: ProcessIO | undefined;
  #stdoutClosed: Promise<void> | undefined;
  #inputFailed = false;
  #inputEnded = false;
  #finished = false;
  /** Ends the drain's wait at once (dispose): its timer is cleared. */
  #stopDrain: (() => void) | undefined;

  constructor(options: StdioChannelOptions) {
    this.#options = options;
    this.#splitter = new LineSplitter(options.maxLineBytes);
    this.#setTimer = options.setTimer ?? nodeTimer;
    const lines = options.lines;
    this.#receiver = {
      line: (text, lineNumber) => lines.line(text, lineNumber),
      tooLong: (lineNumber, limit, head) => lines.overlong(overlongRejection(head, `stdout line ${lineNumber}`, limit), lineNumber, head),
    };
  }

  /** Whether a write can go out now (stdin piped, not ended, not failed). */
  get inputOpen(): boolean {
    const stdin = this.#io?.stdin;
    return stdin !== undefined && !this.#inputFailed && !this.#inputEnded && !stdin.destroyed && !stdin.writableEnded;
  }

  /** The child was spawned: read its stdout, watch its stdin. */
  attach(io: ProcessIO): void {
    this.#io = io;
    io.stdin?.on('error', (error: NodeJS.ErrnoException) => this.#onInputError(error));
    const stdout = io.stdout;
    if (stdout === undefined) return;
    this.#stdoutClosed = new Promise((resolve) => stdout.once('close', () => resolve()));
    stdout.on('data', (chunk: Buffer) => {
      if (this.#finished) return;
      this.#splitter.write(chunk, this.#receiver);
      if (this.#options.shouldPause()) stdout.pause();
    });
    // A read error ends the stream like EOF; what was read stands.
    stdout.on('error', () => undefined);
  }

  /** Writes `message` as one JSON line. */
  write(message: JsonValue): WriteResult {
    if (!this.inputOpen) return { ok: false, code: 'closed', reason: "the child's stdin is closed" };
    const line = `${JSON.stringify(message)}\n`;
    const bytes = Buffer.byteLength(line) - 1;
    if (bytes > this.#options.maxLineBytes) {
      return { ok: false, code: 'too-large', reason: `the line is ${bytes} bytes, longer than the ${this.#options.maxLineBytes}-byte line bound (maxFrameBytes)` };
    }
    this.#io!.stdin!.write(line);
    return { ok: true };
  }

  /** Ends the child's stdin (EOF); idempotent. */
  endInput(): void {
    if (this.#inputEnded) return;
    this.#inputEnded = true;
    this.#io?.stdin?.end();
  }

  /** Sends `signal` to the child's root process; false when it is gone (or never started). */
  signal(signal: NodeJS.Signals): boolean {
    return this.#io?.signal(signal) ?? false;
  }

  /** The core eased backpressure, or awaits an answer: read on. */
  resume(): void {
    if (!this.#finished) this.#io?.stdout?.resume();
  }

  /**
   * The child is gone: reads what stdout still holds until it ends (at most `drainMs`), then stops
   * reading. Resolves with the text after the last newline (a line cut by the exit), or undefined.
   */
  async finish(): Promise<string | undefined> {
    const stdout = this.#io?.stdout;
    if (stdout !== undefined && this.#stdoutClosed !== undefined && !this.#finished) {
      stdout.resume();
      await Promise.race([
        this.#stdoutClosed,
        new Promise<void>((resolve) => {
          const timer = this.#setTimer(resolve, this.#options.drainMs ?? STDOUT_DRAIN_MS);
          this.#stopDrain = () => {
            timer.clear();
            resolve();
          };
        }),
      ]);
      this.#stopDrain?.();
      this.#stopDrain = undefined;
    }
    this.#finished = true;
    stdout?.destroy();
    return this.#splitter.finish();
  }

  /** Releases the pipes and the drain's timer, synchronously; idempotent. */
  dispose(): void {
    this.#finished = true;
    this.#stopDrain?.();
    this.#io?.stdout?.destroy();
    this.#io?.stdin?.destroy();
  }

  #onInputError(error: NodeJS.ErrnoException): void {
    if (this.#inputFailed) return;
    this.#inputFailed = true;
    this.#options.inputFailed?.(error.code ?? error.message);
  }
}
