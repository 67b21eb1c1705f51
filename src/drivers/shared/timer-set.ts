// The timers one driver holds (Node's, unref'd), each dropped when it fires or is cleared, all cleared at once when the run ends.
import { nodeTimer } from './pending-requests.js';
import type { SetTimer } from './pending-requests.js';

export class TimerSet {
  readonly #timers = new Set<{ clear(): void }>();

  /** A `SetTimer` (for a session, a peer, a correlator) whose timers this set holds until they fire or are cleared. */
  readonly set: SetTimer = (fn, ms) => {
    const timer = nodeTimer(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    this.#timers.add(timer);
    return {
      clear: () => {
        timer.clear();
        this.#timers.delete(timer);
      },
    };
  };

  /** Clears every timer still pending (the run is over). */
  clear(): void {
    for (const timer of this.#timers) timer.clear();
    this.#timers.clear();
  }
}
