// mew liveness: a `ping` at an interval, and the verdict "silent" when a `pong` does not come back in time.
import type { MewTimer } from './session-types.js';

export interface LivenessOptions {
  /** Time between a `pong` and the next `ping`. */
  intervalMs: number;
  /** How long a `ping` may go unanswered before the daemon counts as gone. */
  timeoutMs: number;
}

export interface LivenessIo {
  /** Sends one `ping`; false when the connection is down. */
  ping(): boolean;
  setTimer(fn: () => void, ms: number): MewTimer;
}

/**
 * One ping in flight at a time: `start()` pings at once (the handshake learns the wire revision from
 * its pong), each `pong()` schedules the next ping after the interval, and a ping unanswered for
 * `timeoutMs` calls `onSilent` once. `stop()` clears every timer (a lost connection, the end).
 */
export class Liveness {
  readonly #io: LivenessIo;
  readonly #options: LivenessOptions;
  readonly #onSilent: (waitedMs: number) => void;
  #next: MewTimer | undefined;
  #deadline: MewTimer | undefined;
  #stopped = true;

  constructor(io: LivenessIo, options: LivenessOptions, onSilent: (waitedMs: number) => void) {
    this.#io = io;
    this.#options = options;
    this.#onSilent = onSilent;
  }

  /** True while a ping waits for its pong. */
  get awaitingPong(): boolean {
    return this.#deadline !== undefined;
  }

  start(): void {
    this.stop();
    this.#stopped = false;
    this.#ping();
  }

  /** A pong came (any pong answers the ping in flight). */
  pong(): void {
    if (this.#stopped) return;
    this.#clear();
    this.#next = this.#io.setTimer(() => {
      this.#next = undefined;
      this.#ping();
    }, this.#options.intervalMs);
  }

  stop(): void {
    this.#stopped = true;
    this.#clear();
  }

  #ping(): void {
    if (this.#stopped) return;
    this.#io.ping();
    this.#deadline = this.#io.setTimer(() => {
      this.#deadline = undefined;
      if (this.#stopped) return;
      this.#stopped = true;
      this.#onSilent(this.#options.timeoutMs);
    }, this.#options.timeoutMs);
  }

  #clear(): void {
    this.#next?.clear();
    this.#deadline?.clear();
    this.#next = undefined;
    this.#deadline = undefined;
  }
}
