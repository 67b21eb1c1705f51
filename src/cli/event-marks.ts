// Tracks which acks and deliveries the event loop has already passed on, so control reports follow them in order.
import type { RunEvent } from '../api/types.js';

/**
 * The ack and delivery promises of the Run API settle as soon as the child's line is read, while the event loop
 * that prints progress and writes `--output events` may still be a few events behind. A control report waits
 * here until the loop has handled the child's `control-ack` (or injection / drop notice) for that seq, so stderr
 * and stdout read in cause-and-effect order. Everything is released when the loop ends.
 */
export class EventMarks {
  private readonly acks = new Set<number>();
  private readonly deliveries = new Set<number>();
  private readonly waiters: Array<{ set: Set<number>; seq: number; release: () => void }> = [];
  private ended = false;

  /** Call after the loop handled `event`. */
  passed(event: RunEvent): void {
    if (event.type === 'control-ack' && event.ref !== undefined) this.add(this.acks, event.ref);
    else if ((event.type === 'steering-injected' || event.type === 'follow-up-injected') && event.ref !== undefined) {
      this.add(this.deliveries, event.ref);
    } else if (event.type === 'info' && Array.isArray(event.refs)) {
      for (const ref of event.refs) this.add(this.deliveries, ref);
    }
  }

  /** Call when the loop is over: nobody waits any longer. */
  end(): void {
    this.ended = true;
    for (const waiter of this.waiters.splice(0)) waiter.release();
  }

  ack(seq: number): Promise<void> {
    return this.wait(this.acks, seq);
  }

  delivery(seq: number): Promise<void> {
    return this.wait(this.deliveries, seq);
  }

  private add(set: Set<number>, seq: number): void {
    set.add(seq);
    for (let index = this.waiters.length - 1; index >= 0; index--) {
      const waiter = this.waiters[index];
      if (waiter !== undefined && waiter.set === set && waiter.seq === seq) {
        this.waiters.splice(index, 1);
        waiter.release();
      }
    }
  }

  private wait(set: Set<number>, seq: number): Promise<void> {
    if (this.ended || set.has(seq)) return Promise.resolve();
    return new Promise((release) => this.waiters.push({ set, seq, release }));
  }
}
