// Interrupts fuseraft's running turn: the `interrupt` line, and SIGINT when the line cannot go out or goes unheeded.
import type { FuseraftIo } from './session-io.js';

/**
 * fuseraft cancels its running turn on an `interrupt` line, and on SIGINT ("elsewhere, sending
 * SIGINT to the process does the same", seed 002). The line comes first (it is ordered with the
 * approval responses before it); when stdin is already gone, or the turn is still running
 * `graceMs` later (a tool call that does not read stdin), SIGINT follows. The run core's kill ladder
 * (SIGTERM, SIGKILL) stays the last resort.
 */
export class Interrupter {
  readonly #io: FuseraftIo;
  readonly #graceMs: number;
  #timer: { clear(): void } | undefined;
  #signalled = false;

  constructor(io: FuseraftIo, graceMs: number) {
    this.#io = io;
    this.#graceMs = graceMs;
  }

  /** Sends `interrupt`, then SIGINT unless `settled()` is called within the grace. */
  interrupt(inputOpen: boolean): void {
    const written = inputOpen && this.#io.write({ type: 'interrupt' });
    if (!written) {
      this.#signal();
      return;
    }
    if (this.#timer !== undefined || this.#signalled) return;
    this.#timer = this.#io.setTimer(() => {
      this.#timer = undefined;
      this.#signal();
    }, this.#graceMs);
  }

  /** The interrupted turn ended (or the process is gone): no SIGINT needed. */
  settled(): void {
    this.#timer?.clear();
    this.#timer = undefined;
  }

  #signal(): void {
    if (this.#signalled) return;
    this.#signalled = true;
    this.#io.interrupt();
  }
}
