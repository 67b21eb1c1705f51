// A pool's Run handle: queued until a slot is free, then a relay over the run its start (spawnRun by default) started.
import { linkAbortSignal } from '../run/abort-link.js';
import type { AbortLink } from '../run/abort-link.js';
import { isEndingControl, runEndedAck } from '../run/ended-ack.js';
import { ControlRefusedError } from '../run/errors.js';
import { childlessOutcome } from '../run/outcome.js';
import { RunHandle, sizedBatchesOf } from '../run/run-handle.js';
import type { SizedBatches } from '../run/run-handle.js';
import { RUN_DEFAULTS } from '../api/spawn-run.js';
import type { Ack, BudgetReport, ExitRunEvent, Outcome, OutcomeErrorCode, Run, RunHandleState, RunOptions } from '../api/types.js';
import type { WireControlType } from '../wire/index.js';
import type { PoolEventTaps } from './event-taps.js';
import { withContext } from '../observe/carriers.js';
import type { Context } from '@opentelemetry/api';
import type { PoolRun } from './types.js';

/** The Run events a pooled run re-emits from the run it started (`outcome` is its own). */
const RELAYED_EVENTS = ['event', 'state', 'ack', 'control', 'delivery', 'rejected', 'output', 'kill', 'rate-limit'] as const;

export interface PooledRunInit {
  /** Merged, validated run options, `runId` included. */
  options: RunOptions & { runId: string };
  /** The protocol its run speaks (its outcome's, should it end before starting); undefined when a caller's own start decides. */
  protocol: string | undefined;
  priority: number;
  attempt: number;
  retryOf: PooledRun | undefined;
  taps: PoolEventTaps;
  /** Takes the run out of the supervisor's queue (it was cancelled before it started). */
  dequeue: () => void;
  /** Starts the run once it has a slot (spawnRun, or the pool's own `start`). */
  start: (options: RunOptions) => Run;
  /** The context active where `spawn()` was called: the run starts under it, whenever its slot comes. */
  traceContext: Context;
}

/** Implementation of {@link PoolRun}; created by the supervisor. */
export class PooledRun extends RunHandle implements PoolRun {
  readonly id: string;
  readonly attempt: number;
  readonly retryOf: PooledRun | undefined;
  readonly priority: number;
  readonly finalOutcome: Promise<Outcome>;
  readonly taskAck: Promise<Ack | undefined>;
  nextAttempt: PooledRun | undefined;

  readonly #options: RunOptions & { runId: string };
  readonly #protocol: string | undefined;
  readonly #taps: PoolEventTaps;
  readonly #start: (options: RunOptions) => Run;
  readonly #traceContext: Context;
  readonly #queuedAt = Date.now();
  #dequeue: (() => void) | undefined;
  /** While queued: the caller's signal, shared with other runs through one listener (see abort-link.ts). */
  #abortLink: AbortLink | undefined;
  #inner: Run | undefined;
  #state: RunHandleState = 'queued';
  #ended = false;
  #endedByCaller = false;
  #pumping = false;
  #iterated = false;
  #wakePump: (() => void) | undefined;
  #resolveFinal!: (outcome: Outcome | Promise<Outcome>) => void;
  #resolveTaskAck!: (ack: Promise<Ack | undefined> | undefined) => void;
  readonly #onAbort = () => void this.#endQueued('cancelled', 'aborted', 'the abort signal fired while the run was queued');

  constructor(init: PooledRunInit) {
    super({
      retain: init.options.retainEvents ?? true,
      highWater: {
        events: Math.max(1, init.options.highWaterMark ?? RUN_DEFAULTS.highWaterMark),
        bytes: Math.max(1, init.options.highWaterBytes ?? RUN_DEFAULTS.highWaterBytes),
      },
      onDrained: () => this.#wake(),
    });
    this.id = init.options.runId;
    this.attempt = init.attempt;
    this.retryOf = init.retryOf;
    this.priority = init.priority;
    this.#options = init.options;
    this.#protocol = init.protocol;
    this.#taps = init.taps;
    this.#dequeue = init.dequeue;
    this.#start = init.start;
    this.#traceContext = init.traceContext;
    this.finalOutcome = new Promise((resolve) => (this.#resolveFinal = resolve));
    this.taskAck = new Promise((resolve) => (this.#resolveTaskAck = resolve));
    const signal = init.options.signal;
    // Like spawnRun, an already fired signal ends the run on a later tick: the caller holds the handle by then.
    if (signal?.aborted) queueMicrotask(() => this.#endQueued('cancelled', 'aborted', 'the abort signal had fired before the run was queued'));
    else if (signal !== undefined) {
      this.#abortLink = linkAbortSignal(signal);
      this.#abortLink.signal.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  get pid(): number | undefined {
    return this.#inner?.pid;
  }

  get state(): RunHandleState {
    return this.#inner?.state ?? this.#state;
  }

  get channelDir(): string {
    return this.#inner?.channelDir ?? '';
  }

  get ended(): boolean {
    return this.#ended;
  }

  get lastEventAt(): number | undefined {
    return this.#inner?.lastEventAt;
  }

  /** @internal Whether it took a slot (a process was, or was attempted to be, started). */
  get started(): boolean {
    return this.#inner !== undefined;
  }

  /** @internal The caller ended it (cancel, terminate, kill, dispose, abort signal): never retried. */
  get endedByCaller(): boolean {
    return this.#endedByCaller;
  }

  /** @internal The context `spawn()` was called in, for a retry. */
  get traceContext(): Context {
    return this.#traceContext;
  }

  /** @internal The options it was spawned with, for a retry. */
  get runOptions(): RunOptions & { runId: string } {
    return this.#options;
  }

  prompt(text: string): Promise<Ack> {
    return this.#inner?.prompt(text) ?? this.#refuse('prompt');
  }

  steer(text: string): Promise<Ack> {
    return this.#inner?.steer(text) ?? this.#refuse('steer');
  }

  followUp(text: string): Promise<Ack> {
    return this.#inner?.followUp(text) ?? this.#refuse('follow-up');
  }

  finalize(note?: string): Promise<Ack> {
    return this.#inner?.finalize(note) ?? this.#refuse('finalize');
  }

  close(): Promise<Ack> {
    return this.#inner?.close() ?? this.#refuse('close');
  }

  cancel(): Promise<Ack> {
    if (this.#inner !== undefined) {
      if (!this.#ended) this.#endedByCaller = true;
      return this.#inner.cancel();
    }
    if (this.#ended) return this.#refuse('cancel');
    this.#endQueued('cancelled', 'aborted', 'the run was cancelled while queued; it never started');
    return Promise.resolve({ status: 'accepted', seq: 0, reason: 'the run was still queued: it ended without starting' });
  }

  terminate(reason = 'the run was terminated'): Promise<Outcome> {
    if (!this.#ended) this.#endedByCaller = true;
    if (this.#inner !== undefined) return this.#inner.terminate(reason);
    this.#endQueued('cancelled', 'aborted', `${reason} while queued; it never started`);
    return this.outcome;
  }

  kill(reason = 'the run was killed'): Promise<Outcome> {
    if (!this.#ended) this.#endedByCaller = true;
    if (this.#inner !== undefined) return this.#inner.kill(reason);
    this.#endQueued('cancelled', 'aborted', `${reason} while queued; it never started`);
    return this.outcome;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.terminate('the run was disposed');
  }

  /** An iterator of this handle: relaying the run's events starts now (once there is a run). */
  protected override iterating(): void {
    this.#iterated = true;
    this.#startPump();
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Supervisor side                                                                                */
  /* ---------------------------------------------------------------------------------------------- */

  /**
   * @internal A slot is free: start the child (or end at once when the deadline passed while queued).
   * Resolves once the outcome is settled, i.e. once the whole tree is reaped: then the slot is free.
   */
  start(): Promise<void> {
    if (!this.#leaveQueue()) return this.outcome.then(() => undefined);
    let inner: Run;
    try {
      // The slot may come long after spawn(), in another async context: the run's span keeps the caller's parent.
      inner = withContext(this.#traceContext, () => this.#start(this.#options));
    } catch (error) {
      // spawnRun's options were validated at spawn(): only a changed environment, or a caller's own start, gets here.
      this.#endQueued('failed', 'spawn-failed', `could not start the run: ${(error as Error).message}`);
      return this.outcome.then(() => undefined);
    }
    this.#adopt(inner);
    return this.outcome.then(() => undefined);
  }

  /**
   * @internal Its task goes to `warm`, a child of the pool waiting in ready (its slot is the child's): `handOff`
   * hands it over with this run's options. False when it did not (the run ended: the deadline passed while
   * queued, or the hand-off refused its options, `spawn-failed`); `warm` is left as it was.
   */
  startWarm(warm: Run, handOff: (warm: Run) => void): boolean {
    if (!this.#leaveQueue()) return false;
    // What the child emits while it takes the task (a driver that starts the turn as it writes the prompt, as
    // claude-code's does, emits turn-started then) is held and relayed once the run is adopted: a listener the
    // caller attached after spawn() must not miss it. Its state changes are not: adopting announces the state it is in.
    const early: Array<[string, unknown[]]> = [];
    const holders = RELAYED_EVENTS.filter((name) => name !== 'state').map((name) => {
      const hold = (...args: unknown[]) => void early.push([name, args]);
      warm.on(name, hold);
      return () => warm.off(name, hold);
    });
    try {
      withContext(this.#traceContext, () => handOff(warm));
    } catch (error) {
      this.#endQueued('failed', 'spawn-failed', `could not hand the task to a warm child: ${(error as Error).message}`);
      return false;
    } finally {
      for (const release of holders) release();
    }
    this.#adopt(warm, early);
    return true;
  }

  /** Leaves the queue to start: false when it ended instead (before, or now: its absolute deadline passed while queued). */
  #leaveQueue(): boolean {
    if (this.#ended || this.#inner !== undefined) return false;
    this.#dequeue = undefined;
    this.#detachAbort();
    const deadline = this.#options.deadline;
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
    if (deadlineMs !== undefined && deadlineMs <= Date.now()) {
      this.#endQueued('timed-out', 'deadline', 'the deadline passed while the run was queued; it never started');
      return false;
    }
    return true;
  }

  /** Relays `inner`, the run that does its work, from now on (after `early`: what it emitted while it took the task). */
  #adopt(inner: Run, early: ReadonlyArray<[string, unknown[]]> = []): void {
    this.#inner = inner;
    const relay = (name: string, args: unknown[]) => (this.emit as (event: string, ...rest: unknown[]) => boolean)(name, ...args);
    for (const name of RELAYED_EVENTS) inner.on(name, (...args: unknown[]) => relay(name, args));
    this.#resolveTaskAck(inner.taskAck);
    this.emit('state', inner.state, 'queued');
    for (const [name, args] of early) relay(name, args);
    if (this.#iterated || this.#taps.active) this.#startPump();
    void inner.outcome.then((outcome) => {
      this.#finish(outcome);
      this.#wake(); // a waiting pump looks again (it still waits for consumers over their high-water mark)
    });
  }

  /** @internal Ends it without ever starting (cancelled while queued, supervisor shutdown, a spent pool budget with its report). */
  endQueued(code: OutcomeErrorCode, error: string, budget?: BudgetReport): void {
    this.#endQueued('cancelled', code, error, budget);
  }

  /** @internal Starts relaying events to this handle's iterators and the supervisor's events() (once). */
  startPump(): void {
    this.#startPump();
  }

  /** @internal The outcome called for a retry: `next` carries the task on. */
  retriedBy(next: PooledRun): void {
    this.nextAttempt = next;
    this.#resolveFinal(next.finalOutcome);
  }

  /** @internal No retry follows: this outcome is the task's final one. */
  settleFinal(outcome: Outcome): void {
    this.#resolveFinal(outcome);
  }

  /* ---------------------------------------------------------------------------------------------- */
  /* Internals                                                                                      */
  /* ---------------------------------------------------------------------------------------------- */

  #refuse(control: WireControlType): Promise<Ack> {
    if (this.#ended && isEndingControl(control)) return Promise.resolve(runEndedAck(control, `run ${this.id} has ended`));
    if (this.#ended) {
      return Promise.reject(new ControlRefusedError('run-ended', control, `cannot send ${control}: run ${this.id} has ended`));
    }
    return Promise.reject(
      new ControlRefusedError(
        'queued',
        control,
        `cannot send ${control}: run ${this.id} is still queued and has no child yet (wait for its 'state' event, or cancel() it)`,
      ),
    );
  }

  #endQueued(status: 'cancelled' | 'timed-out' | 'failed', code: OutcomeErrorCode, error: string, budget?: BudgetReport): void {
    if (this.#ended || this.#inner !== undefined) return;
    this.#detachAbort();
    const dequeue = this.#dequeue;
    this.#dequeue = undefined;
    dequeue?.();
    this.#resolveTaskAck(undefined);
    const previous = this.#state;
    this.#state = status;
    this.emit('state', status, previous);
    const exit: ExitRunEvent = { type: 'exit', status, synthetic: true, run: this.id, error };
    this.emit('event', exit);
    this.toIterators(exit);
    this.#taps.publish(this, exit);
    this.endIterators();
    const outcome = childlessOutcome(this.id, status, code, error, Date.now() - this.#queuedAt);
    if (this.#protocol !== undefined) outcome.protocol = this.#protocol;
    if (budget !== undefined) outcome.budget = budget;
    this.#finish(outcome);
  }

  #detachAbort(): void {
    this.#abortLink?.signal.removeEventListener('abort', this.#onAbort);
    this.#abortLink?.release();
    this.#abortLink = undefined;
  }

  #finish(outcome: Outcome): void {
    if (this.#ended) return;
    this.#ended = true;
    this.settle(outcome);
  }

  #startPump(): void {
    const inner = this.#inner;
    if (inner === undefined || this.#pumping) return;
    this.#pumping = true;
    this.#taps.pumpStarted();
    // Created now, synchronously: it takes what the run retained so far, and nothing is missed.
    void this.#pump(sizedBatchesOf(inner));
  }

  /**
   * Relays the run's events to this handle's iterators and the supervisor's events(). While one of
   * them is over its high-water mark it stops pulling, so the run's own queue fills and the run pauses
   * reading exactly as it would for a slow iterator of its own. That holds after the run's outcome too:
   * the events still in the file (the run publishes them as they are taken) are relayed as the
   * consumers take them, never all at once.
   */
  async #pump(batches: SizedBatches): Promise<void> {
    try {
      for (;;) {
        const step = await batches.next();
        if (step.done === true) break;
        const { events, bytes } = step.value;
        for (let index = 0; index < events.length; index++) {
          const event = events[index]!;
          this.toIterators(event, bytes[index]);
          this.#taps.publish(this, event, bytes[index]);
        }
        // A backlog kept for an iterator not created yet holds the pump back only when the run still ends
        // without it and no events() iterator waits for what the pump would relay.
        while (this.overHighWater(batches.readsAhead && !this.#taps.active) || this.#taps.overHighWater()) await this.#drained();
      }
    } finally {
      this.endIterators();
      this.#taps.pumpEnded();
    }
  }

  #drained(): Promise<void> {
    return new Promise((resolve) => {
      if (this.#taps.overHighWater()) {
        this.#wakePump = resolve;
        void this.#taps.whenDrained().then(resolve);
        return;
      }
      // Held back by the kept backlog: an events() iterator opened meanwhile must get the events.
      const cancel = this.#taps.wakeOnOpen(() => this.#wake());
      this.#wakePump = () => {
        cancel();
        resolve();
      };
    });
  }

  #wake(): void {
    const wake = this.#wakePump;
    this.#wakePump = undefined;
    wake?.();
  }
}
