// Writes supervise's stdout (text, events or json mode), flushing as it goes and surviving a reader that went away.
import type { Writable } from 'node:stream';

/** stdout, as far as supervise needs it. */
export type OutputStream = Writable & { isTTY?: boolean };

/**
 * A stdout that never throws: an EPIPE (the reader closed the pipe, as `| head -1` does) marks it gone and
 * calls `onGone` once, and later writes are dropped. Every write resolves once the bytes left the process,
 * so supervise can exit without losing any.
 */
export class Stdout {
  private gone = false;
  private goneListeners: Array<(error: Error) => void> = [];

  constructor(private readonly stream: OutputStream) {
    stream.on('error', (error: Error) => this.markGone(error));
  }

  get isGone(): boolean {
    return this.gone;
  }

  get isTTY(): boolean {
    return this.stream.isTTY === true;
  }

  onGone(listener: (error: Error) => void): void {
    this.goneListeners.push(listener);
  }

  /** Resolves when the text was handed to the operating system or stdout is gone (the write callback runs either way). */
  write(text: string): Promise<void> {
    if (this.gone) return Promise.resolve();
    return new Promise((resolve) => {
      try {
        this.stream.write(text, (error) => {
          if (error) this.markGone(error);
          resolve();
        });
      } catch (error) {
        this.markGone(error as Error);
        resolve();
      }
    });
  }

  private markGone(error: Error): void {
    if (this.gone) return;
    this.gone = true;
    for (const listener of this.goneListeners) listener(error);
  }
}

/** A line of `--output events` that supervise itself adds (not from the child); see docs for the shapes. */
export type LocalEvent =
  | {
      type: 'supervise-control';
      /** Line number in the --controls source. */
      line: number;
      control: string;
      status: 'accepted' | 'applied' | 'rejected' | 'unanswered' | 'refused';
      /** The control line's seq (absent when refused locally: no line was written). */
      seq?: number;
      reason?: string;
    }
  | { type: 'supervise-delivery'; line: number; control: string; seq: number; delivery: 'injected' | 'dropped' }
  | { type: 'supervise-invalid-control'; line: number; reason: string };

/** What each output mode does with the run's events and its outcome. */
export interface OutputWriter {
  /** A run event (camelCase, as the Run API yields it). */
  event(event: object): Promise<void>;
  /** A line supervise adds about the controls it sent. */
  local(event: LocalEvent): Promise<void>;
  /** The end: the outcome object. */
  outcome(outcome: { finalText?: string }): Promise<void>;
}

class TextWriter implements OutputWriter {
  constructor(private readonly stdout: Stdout) {}

  async event(): Promise<void> {}

  async local(): Promise<void> {}

  /** The answer exactly as given; a newline is added only on a terminal, so pipes get the bytes unchanged. */
  async outcome(outcome: { finalText?: string }): Promise<void> {
    const text = outcome.finalText;
    if (text === undefined || text.length === 0) return;
    await this.stdout.write(this.stdout.isTTY && !text.endsWith('\n') ? `${text}\n` : text);
  }
}

class EventsWriter implements OutputWriter {
  constructor(private readonly stdout: Stdout) {}

  event(event: object): Promise<void> {
    return this.stdout.write(`${JSON.stringify(event)}\n`);
  }

  local(event: LocalEvent): Promise<void> {
    return this.stdout.write(`${JSON.stringify(event)}\n`);
  }

  outcome(outcome: object): Promise<void> {
    return this.stdout.write(`${JSON.stringify({ type: 'outcome', ...outcome })}\n`);
  }
}

class JsonWriter implements OutputWriter {
  constructor(private readonly stdout: Stdout) {}

  async event(): Promise<void> {}

  async local(): Promise<void> {}

  outcome(outcome: object): Promise<void> {
    return this.stdout.write(`${JSON.stringify(outcome)}\n`);
  }
}

export function createOutputWriter(mode: 'text' | 'events' | 'json', stdout: Stdout): OutputWriter {
  switch (mode) {
    case 'text':
      return new TextWriter(stdout);
    case 'events':
      return new EventsWriter(stdout);
    case 'json':
      return new JsonWriter(stdout);
  }
}
