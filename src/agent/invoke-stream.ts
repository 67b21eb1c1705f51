// The iterator an invoke returns: one terminal, last; never throws; return() stops the turn without waiting on a pending next().
import { failed } from './terminal.js';
import type { StreamIterator } from '../api/types.js';
import type { AgentEvent } from './types.js';
import { isTerminalEvent } from './types.js';

/** Where an invoke's events come from: a fresh run, or one turn of a keep-alive run. */
export interface TurnSource {
  /** The next events; the array that ends the turn ends with its terminal. Never rejects. */
  pull(): Promise<AgentEvent[]>;
  /** The consumer stopped early: cancel the turn, kill what is left; resolves once the tree is gone. Never rejects. */
  stop(): Promise<void>;
}

const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };

/**
 * A single-use async iterator over one invoke. The source is opened on the first `next()`, so an invoke
 * that is never iterated starts nothing. `next()` calls are served one after another; `return()` is not
 * queued behind them: it wakes a pending `next()` (which then reports the end), stops the source and
 * resolves only when the source says everything is gone. Nothing is yielded after the terminal or after
 * `return()`.
 */
export class InvokeStream implements StreamIterator<AgentEvent> {
  readonly #open: () => Promise<TurnSource | AgentEvent[]>;
  #source: TurnSource | undefined;
  #opening: Promise<TurnSource | AgentEvent[]> | undefined;
  readonly #buffer: AgentEvent[] = [];
  #finished = false;
  #returned = false;
  #stopping: Promise<void> | undefined;
  #wake!: () => void;
  readonly #returnedSignal = new Promise<typeof DONE>((resolve) => (this.#wake = () => resolve(DONE)));
  #queue: Promise<unknown> = Promise.resolve();

  /** `open` starts the turn, or returns the events (ending with a terminal) of an invoke that cannot start. */
  constructor(open: () => Promise<TurnSource | AgentEvent[]>) {
    this.#open = open;
  }

  next(): Promise<IteratorResult<AgentEvent, undefined>> {
    const result = this.#queue.then(() => this.#next());
    this.#queue = result.catch(() => undefined);
    return result;
  }

  async return(): Promise<IteratorResult<AgentEvent, undefined>> {
    if (!this.#returned) {
      this.#returned = true;
      this.#wake();
      if (!this.#finished) this.#stopping = this.#stopSource();
    }
    await this.#stopping;
    return DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async #next(): Promise<IteratorResult<AgentEvent, undefined>> {
    if (this.#returned) return DONE;
    try {
      while (this.#buffer.length === 0) {
        if (this.#finished) return DONE;
        const pulled = await Promise.race([this.#pull(), this.#returnedSignal]);
        if (this.#returned || !Array.isArray(pulled)) return DONE;
        this.#buffer.push(...pulled);
      }
    } catch (error) {
      // A bug of ours must not throw out of the caller's loop (MUST 2): it is this invoke's failure.
      this.#buffer.length = 0;
      this.#buffer.push(failed('internal_error', `subvisor internal error: ${(error as Error)?.message ?? String(error)}`, false));
      if (this.#source !== undefined) void this.#source.stop();
    }
    const value = this.#buffer.shift()!;
    if (isTerminalEvent(value)) {
      this.#finished = true;
      this.#buffer.length = 0;
    }
    return { value, done: false };
  }

  async #pull(): Promise<AgentEvent[]> {
    if (this.#source !== undefined) return this.#source.pull();
    const opened = await (this.#opening ??= this.#open());
    if (Array.isArray(opened)) return opened;
    this.#source = opened;
    // return() came while the source was being opened: it is stopped by #stopSource.
    return this.#returned ? [] : opened.pull();
  }

  async #stopSource(): Promise<void> {
    if (this.#opening === undefined) return;
    const opened = await this.#opening.catch(() => undefined);
    if (opened !== undefined && !Array.isArray(opened)) await opened.stop();
  }
}
