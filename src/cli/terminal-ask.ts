// Asks the user one question at a time on the terminal (readline), for supervise --approve ask.
import { createInterface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import type { AskLine } from './approval-policy.js';

/** A terminal asker; `close()` abandons a question still waiting (the run ended), answering it with ''. */
export interface TerminalAsker {
  ask: AskLine;
  close(): void;
}

/**
 * Each question opens a readline interface on `input` (standard input, a terminal), writes the prompt
 * to `output` (stderr: stdout carries only the run's output) and closes it after the answer, so
 * standard input is not held once nothing is asked. `hold()` suspends the live progress line meanwhile.
 */
export function terminalAsker(input: () => Readable, output: Writable, hold: () => () => void): TerminalAsker {
  const pending = new Set<AbortController>();
  let closed = false;
  return {
    ask: async (question) => {
      if (closed) return '';
      const abort = new AbortController();
      pending.add(abort);
      const release = hold();
      const lines = createInterface({ input: input(), output, terminal: true });
      try {
        return await lines.question(question, { signal: abort.signal });
      } catch {
        return ''; // abandoned: the caller's default (deny) applies
      } finally {
        lines.close();
        release();
        pending.delete(abort);
      }
    },
    close: () => {
      closed = true;
      for (const abort of pending) abort.abort();
    },
  };
}
