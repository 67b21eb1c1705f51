// A linked in-memory stdio pair: the ProcessIO a driver attaches to, and the peer's end a test plays the child with (no process).
import { PassThrough } from 'node:stream';
import type { ProcessIO } from '../protocol/driver.js';

/** The child's end of a {@link linkedStdio} pair. */
export interface StdioPeer {
  /** Every line the driver wrote to the child's stdin, in order (without newlines). */
  readonly lines: readonly string[];
  /** Every signal the driver sent the child (`ProcessIO.signal`), in order. */
  readonly signals: readonly NodeJS.Signals[];
  /** Whether the driver ended the child's stdin. */
  readonly inputEnded: boolean;
  /** Writes one line to the child's stdout: a string as it is, anything else as JSON; a newline is added. */
  send(line: unknown): void;
  /** Writes raw text to the child's stdout (no newline added: a line cut mid-way, several lines at once). */
  sendRaw(text: string): void;
  /** Calls `listener` with each line the driver writes from now on. */
  onLine(listener: (line: string) => void): void;
  /** The next line the driver writes (or the first of those written and not yet taken by an earlier call). */
  nextLine(): Promise<string>;
  /** Ends the child's stdout (EOF), as a child that exits does. */
  end(): void;
  /** Makes the next write to the child's stdin fail with `code` (EPIPE: a child that exited while being written to). */
  failInput(code?: string): void;
}

/** A driver's ProcessIO linked to a {@link StdioPeer}. */
export interface LinkedStdio {
  io: ProcessIO;
  peer: StdioPeer;
}

/**
 * A stdio pair in memory, like MCP's `InMemoryTransport.createLinkedPair()`: the driver attaches to `io`
 * (`stdin` piped, `stdout` read by the driver) and the test plays the child through `peer`. `signal`
 * records the signal and answers true until `end()`.
 */
export function linkedStdio(pid = 4242): LinkedStdio {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const lines: string[] = [];
  const signals: NodeJS.Signals[] = [];
  const listeners: Array<(line: string) => void> = [];
  let taken = 0;
  let pending = '';
  let ended = false;
  let inputEnded = false;
  let failWith: string | undefined;
  stdin.setEncoding('utf8');
  // Like a pipe, neither side sees a write within the call that made it: both directions go through one FIFO of turns.
  const later = (fn: () => void) => void setImmediate(fn);
  stdin.on('data', (chunk: string) => later(() => {
    pending += chunk;
    for (let newline = pending.indexOf('\n'); newline !== -1; newline = pending.indexOf('\n')) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      lines.push(line);
      for (const listener of [...listeners]) listener(line);
    }
  }));
  stdin.on('end', () => later(() => (inputEnded = true)));
  const originalWrite = stdin.write.bind(stdin);
  stdin.write = ((...args: Parameters<PassThrough['write']>) => {
    if (failWith === undefined) return originalWrite(...args);
    const error = Object.assign(new Error(`write ${failWith}`), { code: failWith });
    process.nextTick(() => stdin.destroy(error));
    return false;
  }) as PassThrough['write'];
  const peer: StdioPeer = {
    lines,
    signals,
    get inputEnded() {
      return inputEnded;
    },
    send: (line) => {
      const text = `${typeof line === 'string' ? line : JSON.stringify(line)}\n`;
      later(() => void stdout.write(text));
    },
    sendRaw: (text) => later(() => void stdout.write(text)),
    onLine: (listener) => void listeners.push(listener),
    nextLine: () => {
      if (taken < lines.length) return Promise.resolve(lines[taken++]!);
      return new Promise((resolve) => {
        const listener = (line: string) => {
          listeners.splice(listeners.indexOf(listener), 1);
          taken++;
          resolve(line);
        };
        listeners.push(listener);
      });
    },
    end: () => {
      ended = true;
      later(() => stdout.end());
    },
    failInput: (code = 'EPIPE') => void (failWith = code),
  };
  const io: ProcessIO = {
    pid,
    stdin,
    stdout,
    signal: (signal) => {
      if (ended) return false;
      signals.push(signal);
      return true;
    },
  };
  return { io, peer };
}
