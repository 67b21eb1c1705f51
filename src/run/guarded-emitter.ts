// An EventEmitter whose listeners cannot break the emitter's own bookkeeping: a throwing listener's error is rethrown later.
import { EventEmitter } from 'eventemitter3';

/** Rethrows `error` on a later tick: an uncaught exception, as from any callback, outside the caller's state changes. */
export function rethrowLater(error: unknown): void {
  setImmediate(() => {
    throw error;
  });
}

/**
 * Listeners run inside the emitter's bookkeeping (a run's, a pool's): one that throws must not leave it
 * half updated. Its error is rethrown on a later tick instead.
 */
export class GuardedEmitter<Events extends EventEmitter.ValidEventTypes> extends EventEmitter<Events> {
  override emit<T extends EventEmitter.EventNames<Events>>(event: T, ...args: EventEmitter.EventArgs<Events, T>): boolean {
    try {
      return super.emit(event, ...args);
    } catch (error) {
      rethrowLater(error);
      return true;
    }
  }
}
