// The ack and delivery ledger: which controls await an ack, who awaits it, and which texts await injection.
import type { WireControlType } from '../wire/index.js';
import type { Ack, AckOrigin } from './handle.js';
import type { Delivery } from '../protocol/index.js';

interface Waiter {
  type: WireControlType;
  origin: AckOrigin;
  resolve: (ack: Ack) => void;
  timer: NodeJS.Timeout | undefined;
}

export interface ControlLedgerEvents {
  /** A control promise settled (answered, timed out, or given up). */
  ack(ack: Ack, type: WireControlType, origin: AckOrigin): void;
  /** An accepted steer/follow-up was injected or dropped. */
  delivery(seq: number, delivery: Delivery): void;
}

/**
 * Bookkeeping of written controls. `take` feeds the state mirror (it needs the type of the control an
 * ack names), so a control whose promise timed out is still mirrored when its late ack comes (the
 * child did act on it). For everything else such a control is unanswered: it no longer counts in
 * `unacked`, which holds back the automatic close. Settling waits until {@link settlePending} (the run calls it
 * once the event that carried the answer was published) or the next microtask, so that a control's promise
 * resumes only after that event.
 */
export class ControlLedger {
  /** Controls written and not yet acknowledged, by seq. */
  readonly #unacked = new Map<number, WireControlType>();
  /** Of those, the ones whose `ackTimeoutMs` ran out: kept only to mirror a late ack. */
  readonly #timedOut = new Set<number>();
  /** Control promises waiting for their ack, by seq. */
  readonly #waiters = new Map<number, Waiter>();
  /** Accepted steers/follow-ups waiting for injection, by seq. */
  readonly #deliveries = new Map<number, (delivery: Delivery) => void>();
  /**
   * Ack clocks of controls written before the child said `ready`, by seq: a child reads no control
   * before then (that wait is `readyTimeoutMs`'s), so their `ackTimeoutMs` starts at `ready`.
   */
  #clocksBeforeReady: Map<number, () => void> | undefined = new Map();
  /** Ack and delivery settlements waiting for the event that carried them (or the next microtask). */
  #pending: Array<() => void> = [];
  #flushScheduled = false;
  readonly #events: ControlLedgerEvents;

  constructor(events: ControlLedgerEvents) {
    this.#events = events;
  }

  /** Controls written and not answered yet. */
  get unacked(): number {
    return this.#unacked.size - this.#timedOut.size;
  }

  /** Accepted steers/follow-ups neither injected nor dropped yet. */
  get undelivered(): number {
    return this.#deliveries.size;
  }

  /**
   * Records a control an earlier parent wrote (a re-attached durable run): its ack, read from the
   * channel, is mirrored like any other, but nobody here awaits it and no `ack` listener hears it.
   */
  prior(seq: number, type: WireControlType): void {
    this.#unacked.set(seq, type);
  }

  /** Records a written control and returns the promise of its ack (`unanswered` after `timeoutMs`). */
  awaitAck(seq: number, type: WireControlType, origin: AckOrigin, timeoutMs: number | undefined): Promise<Ack> {
    this.#unacked.set(seq, type);
    return new Promise<Ack>((resolve) => {
      const waiter: Waiter = { type, origin, resolve, timer: undefined };
      this.#waiters.set(seq, waiter);
      if (timeoutMs === undefined) return;
      const startClock = (): void => {
        if (this.#waiters.get(seq) !== waiter) return; // answered (or given up) before ready
        waiter.timer = setTimeout(() => {
          this.#waiters.delete(seq);
          if (this.#unacked.has(seq)) this.#timedOut.add(seq);
          this.#settle(waiter, { status: 'unanswered', reason: `no answer within ${timeoutMs} ms`, seq });
        }, timeoutMs);
        waiter.timer.unref();
      };
      if (this.#clocksBeforeReady === undefined) startClock();
      else this.#clocksBeforeReady.set(seq, startClock);
    });
  }

  /** The child said `ready`: the ack clocks of the controls written before it start now. */
  childReady(): void {
    const waiting = this.#clocksBeforeReady;
    this.#clocksBeforeReady = undefined;
    for (const startClock of waiting?.values() ?? []) startClock();
  }

  /**
   * Takes the control an ack names out of the ledger; undefined when it names none of ours (or was
   * already answered): such an ack changes nothing.
   */
  take(ref: number): WireControlType | undefined {
    const type = this.#unacked.get(ref);
    if (type !== undefined) this.#unacked.delete(ref);
    this.#timedOut.delete(ref);
    return type;
  }

  /**
   * Answers the waiter of control `seq` (if any) with `ack`, adding `delivery` for an accepted
   * steer/follow-up: `injected` at once when its text started a turn, else pending until injected or
   * dropped. Settles with {@link settlePending}.
   */
  answer(ack: Ack, type: WireControlType, startedTurn: boolean): void {
    const seq = ack.seq;
    if (ack.status === 'accepted' && (type === 'steer' || type === 'follow-up')) {
      if (startedTurn) {
        ack.delivery = Promise.resolve('injected');
        this.#later(() => this.#events.delivery(seq, 'injected'));
      } else {
        ack.delivery = new Promise<Delivery>((resolve) => this.#deliveries.set(seq, resolve));
      }
    }
    const waiter = this.#waiters.get(seq);
    if (waiter === undefined) return;
    this.#waiters.delete(seq);
    this.#later(() => this.#settle(waiter, ack));
  }

  /** Settles the delivery of control `seq`, if it awaits one (with {@link settlePending}). */
  deliver(seq: number, delivery: Delivery): void {
    const resolve = this.#deliveries.get(seq);
    if (resolve === undefined) return;
    this.#deliveries.delete(seq);
    this.#later(() => {
      resolve(delivery);
      this.#events.delivery(seq, delivery);
    });
  }

  /** Settles what answers and deliveries decided so far: the event that carried them was published. */
  settlePending(): void {
    if (this.#pending.length > 0) this.#flush();
  }

  /**
   * The child can no longer answer: what it answered settles first, then waiting acks become
   * `unanswered` and waiting deliveries `dropped`, at once.
   */
  giveUp(): void {
    this.#flush();
    for (const [seq, waiter] of this.#waiters) {
      this.#pending.push(() => this.#settle(waiter, { status: 'unanswered', reason: 'the run ended before the child answered', seq }));
    }
    this.#waiters.clear();
    this.#unacked.clear();
    this.#timedOut.clear();
    for (const seq of [...this.#deliveries.keys()]) this.deliver(seq, 'dropped');
    this.#flush();
  }

  #later(settle: () => void): void {
    this.#pending.push(settle);
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    queueMicrotask(() => this.#flush());
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (this.#pending.length === 0) return;
    const pending = this.#pending;
    this.#pending = [];
    for (const settle of pending) settle();
  }

  #settle(waiter: Waiter, ack: Ack): void {
    if (waiter.timer !== undefined) clearTimeout(waiter.timer);
    waiter.resolve(ack);
    this.#events.ack(ack, waiter.type, waiter.origin);
  }
}
