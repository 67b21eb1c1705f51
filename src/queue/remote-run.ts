// RemoteRun: a queued run seen from the producer, rebuilt from its stream records: events, state, acks, attempts and outcome.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'eventemitter3';
import { ControlRefusedError } from '../run/errors.js';
import { EventFanout } from '../run/event-fanout.js';
import type { Ack, AckOrigin, Delivery, InfoNoticeFields, Outcome, RunEvent, RunHandleState } from '../api/types.js';
import type { WireControlType } from '../wire/index.js';
import { parseRecord } from './records.js';
import type { AckRecordBody, ControlMessage, ReadRecord, RelayedControl } from './records.js';
import type { StreamFollower } from './stream-reader.js';
import type { RemoteRun, RemoteRunEvents } from './types.js';

/** What a RemoteRun needs from its producer. */
export interface RemoteRunContext {
  readonly streamKey: string;
  readonly highWaterMark: number;
  readonly controlTimeoutMs: number;
  publish(message: ControlMessage): Promise<void>;
  /** Marks the run cancelled and removes its job when no worker holds it; true when it was removed. */
  cancelQueued(runId: string): Promise<boolean>;
  /** The read set changed (a paused run drained). */
  wake(): void;
  /** The run ended or was detached: stop reading its stream. */
  release(run: RemoteRunImpl): void;
  /** An attempt ended with this outcome (one that is retried, or the run's last): for the producer's usage ledger. */
  attemptEnded(outcome: Outcome): void;
}

interface PendingControl {
  resolve: (ack: Ack) => void;
  timer: NodeJS.Timeout;
}

const WIRE_NAMES: Record<RelayedControl, WireControlType> = {
  prompt: 'prompt',
  steer: 'steer',
  'follow-up': 'follow-up',
  finalize: 'finalize',
  cancel: 'cancel',
  close: 'close',
  kill: 'cancel',
};

export class RemoteRunImpl extends EventEmitter<RemoteRunEvents> implements RemoteRun, StreamFollower {
  readonly id: string;
  readonly key: string;
  lastId = '0';
  readonly outcome: Promise<Outcome>;
  readonly taskAck: Promise<Ack | undefined>;
  #settleOutcome!: (outcome: Outcome) => void;
  #settleTaskAck!: (ack: Ack | undefined) => void;
  #state: RunHandleState = 'queued';
  #attempt = 0;
  #worker: string | undefined;
  #ended = false;
  #detached = false;
  /** The iterators, and every event kept for the first one until it is created (the run core's own fan-out). */
  readonly #fanout: EventFanout;
  readonly #pending = new Map<string, PendingControl>();
  /** Delivery promises of accepted steers/follow-ups of the current attempt, by seq; and deliveries seen before their ack. */
  readonly #deliveries = new Map<number, (delivery: Delivery) => void>();
  readonly #delivered = new Map<number, Delivery>();
  /** The next record number expected in the current attempt (to count what MAXLEN trimmed). */
  #nextN = 1;
  /** When the last record arrived (the producer checks quiet runs against their BullMQ job). */
  lastRecordAt = Date.now();

  constructor(id: string, private readonly context: RemoteRunContext) {
    super();
    this.id = id;
    this.key = context.streamKey;
    this.outcome = new Promise((resolve) => (this.#settleOutcome = resolve));
    this.taskAck = new Promise((resolve) => (this.#settleTaskAck = resolve));
    // Below the mark again (or an iterator let go): the reader may read this run's stream again.
    this.#fanout = new EventFanout(true, { events: context.highWaterMark, bytes: Number.POSITIVE_INFINITY }, () => context.wake());
  }

  get state(): RunHandleState {
    return this.#state;
  }

  get attempt(): number {
    return this.#attempt;
  }

  get worker(): string | undefined {
    return this.#worker;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** An iterator holds more than the high-water mark (the backlog kept for the first one does not count: it is the stream's). */
  paused(): boolean {
    return this.#fanout.overHighWater(false);
  }

  deliver(entries: Array<[id: string, fields: string[]]>): void {
    this.lastRecordAt = Date.now();
    for (const [, fields] of entries) {
      if (this.#ended) return;
      const index = fields.indexOf('r');
      const parsed = index === -1 || index % 2 !== 0 ? { ok: false as const, reason: 'a stream entry has no field r' } : parseRecord(fields[index + 1] ?? '');
      if (parsed.ok) this.#apply(parsed.record);
      else this.#yield({ type: 'rejected', code: 'invalid', reason: `${parsed.reason}; the entry was skipped`, fatal: false, run: this.id });
    }
  }

  prompt(text: string): Promise<Ack> {
    return this.#relay('prompt', text);
  }

  steer(text: string): Promise<Ack> {
    return this.#relay('steer', text);
  }

  followUp(text: string): Promise<Ack> {
    return this.#relay('follow-up', text);
  }

  finalize(note?: string): Promise<Ack> {
    return this.#relay('finalize', note);
  }

  close(): Promise<Ack> {
    return this.#relay('close', undefined);
  }

  async cancel(): Promise<Ack> {
    if (this.#ended) throw new ControlRefusedError('run-ended', 'cancel', 'the run has ended; cancel was not sent');
    // The cancel mark comes first: a worker that takes the job from now on ends it at once.
    if (await this.context.cancelQueued(this.id)) return { status: 'accepted', seq: 0 };
    return this.#relay('cancel', undefined);
  }

  async terminate(_reason?: string): Promise<Outcome> {
    if (!this.#ended) await this.cancel().catch(() => undefined);
    return this.outcome;
  }

  async kill(_reason?: string): Promise<Outcome> {
    if (!this.#ended) {
      if (!(await this.context.cancelQueued(this.id))) await this.#relay('kill', undefined).catch(() => undefined);
    }
    return this.outcome;
  }

  detach(): void {
    if (this.#detached) return;
    this.#detached = true;
    this.context.release(this);
    this.#fanout.end();
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.resolve({ status: 'unanswered', reason: 'the producer stopped following the run', seq: 0 });
    }
    this.#pending.clear();
  }

  [Symbol.asyncIterator](): AsyncIterator<RunEvent, undefined> {
    return this.#fanout.iterator();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.terminate();
  }

  /** Ends the run from the producer's side (an outcome it learnt from BullMQ, not from the stream). */
  settle(outcome: Outcome): void {
    if (this.#ended) return;
    const exit: RunEvent = { type: 'exit', status: outcome.status, synthetic: true, run: this.id };
    if (outcome.error !== undefined) exit.error = outcome.error;
    this.#yield(exit);
    this.#finish(outcome);
  }

  #apply(record: ReadRecord): void {
    if (record.k === 'outcome') {
      this.#finish(record.outcome);
      return;
    }
    if (record.k === 'attempt') {
      this.#startAttempt(record.a, record.worker, record.previous, record.n);
      return;
    }
    // The attempt record itself was trimmed away (MAXLEN) before this producer read it.
    if (record.a > this.#attempt) this.#startAttempt(record.a, undefined, undefined, undefined);
    if (record.a !== this.#attempt) return; // a late record of an attempt already given up
    this.#countRecord(record.n);
    switch (record.k) {
      case 'event':
        this.#yield(record.e);
        break;
      case 'state':
        this.#setState(record.s);
        break;
      case 'ack':
        this.#ack(record.req, record.control, record.origin, record.ack);
        break;
      case 'delivery': {
        const resolve = this.#deliveries.get(record.seq);
        if (resolve === undefined) this.#delivered.set(record.seq, record.d);
        else {
          this.#deliveries.delete(record.seq);
          resolve(record.d);
        }
        break;
      }
      case 'retry':
        this.context.attemptEnded(record.outcome);
        this.#info('retry', `attempt ${record.a} ended ${record.outcome.status}${record.outcome.error === undefined ? '' : ` (${record.outcome.error})`}; it is retried${record.backoffMs > 0 ? ` in ${record.backoffMs} ms` : ''}`, { attempt: record.a, outcome: record.outcome });
        this.#setState('queued');
        break;
      case 'handed-back':
        this.#info('handed-back', `worker ${record.worker} shut down and put the run back in the queue`, { attempt: record.a, worker: record.worker });
        this.#setState('queued');
        break;
    }
  }

  #startAttempt(attempt: number, worker: string | undefined, previous: string | undefined, n: number | undefined): void {
    if (attempt < this.#attempt) return;
    const first = this.#attempt === 0;
    this.#attempt = attempt;
    this.#worker = worker;
    this.#nextN = 1;
    // Without its own record (trimmed), the attempt's first record read counts what was missed.
    if (n !== undefined) this.#countRecord(n);
    for (const resolve of this.#deliveries.values()) resolve('dropped');
    this.#deliveries.clear();
    this.#delivered.clear();
    if (!first || attempt > 1) {
      const why = previous === 'lost' ? 'the previous attempt was lost with its worker' : previous === 'retried' ? 'the previous attempt ended badly' : 'the run was handed back';
      this.#info('attempt', `attempt ${attempt} started on worker ${worker ?? '(unknown: its record was trimmed)'} (${why})`, { attempt, worker: worker ?? null, previous: previous ?? null });
    }
    this.#setState('starting');
    this.emit('attempt', attempt, worker ?? '');
  }

  /** Notes a record number; a jump means MAXLEN trimmed records before this producer read them. */
  #countRecord(n: number | undefined): void {
    if (n === undefined) return;
    if (n > this.#nextN) {
      const missed = n - this.#nextN;
      this.#info('trimmed', `${missed} record${missed === 1 ? '' : 's'} of attempt ${this.#attempt} were trimmed from the run's stream (retention.maxEvents) before this producer read them`, { missed });
    }
    this.#nextN = Math.max(this.#nextN, n + 1);
  }

  #ack(req: string | undefined, control: string, origin: AckOrigin, body: AckRecordBody): void {
    const ack: Ack = { status: body.status, seq: body.seq };
    if (body.reason !== undefined) ack.reason = body.reason;
    if (body.delivers === true) ack.delivery = this.#deliveryOf(body.seq);
    if (req !== undefined) {
      const pending = this.#pending.get(req);
      if (pending !== undefined) {
        this.#pending.delete(req);
        clearTimeout(pending.timer);
        pending.resolve(ack);
      }
    } else if (control === 'prompt' && origin === 'task') {
      this.#settleTaskAck(ack);
    }
    this.emit('ack', ack, control as WireControlType, origin);
  }

  #deliveryOf(seq: number): Promise<Delivery> {
    const early = this.#delivered.get(seq);
    if (early !== undefined) {
      this.#delivered.delete(seq);
      return Promise.resolve(early);
    }
    return new Promise((resolve) => this.#deliveries.set(seq, resolve));
  }

  async #relay(control: RelayedControl, text: string | undefined): Promise<Ack> {
    const wire = WIRE_NAMES[control];
    if (this.#ended) throw new ControlRefusedError('run-ended', wire, `the run has ended; ${control} was not sent`);
    if (this.#detached) throw new ControlRefusedError('run-ended', wire, `the run was detached from this producer; ${control} was not sent`);
    if (this.#state === 'queued' && control !== 'cancel' && control !== 'kill') {
      throw new ControlRefusedError('queued', wire, `the run is queued: no worker holds it yet to hear ${control}`);
    }
    if ((control === 'steer' || control === 'follow-up' || control === 'prompt') && (text === undefined || text.length === 0)) {
      throw new ControlRefusedError('empty-text', wire, `${control} needs a non-empty text`);
    }
    const req = randomUUID();
    const answered = new Promise<Ack>((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(req);
        resolve({ status: 'unanswered', reason: `no worker answered ${control} within ${this.context.controlTimeoutMs} ms`, seq: 0 });
      }, this.context.controlTimeoutMs);
      this.#pending.set(req, { resolve, timer });
    });
    const message: ControlMessage = { runId: this.id, req, control };
    if (text !== undefined) message.text = text;
    try {
      await this.context.publish(message);
    } catch (error) {
      const pending = this.#pending.get(req);
      this.#pending.delete(req);
      if (pending !== undefined) {
        clearTimeout(pending.timer);
        pending.resolve({ status: 'unanswered', reason: `the control could not be published: ${(error as Error).message}`, seq: 0 });
      }
    }
    return answered;
  }

  #info(kind: NonNullable<InfoNoticeFields['queue']>, summary: string, fields: Pick<InfoNoticeFields, 'attempt' | 'outcome' | 'worker' | 'previous' | 'missed'>): void {
    this.#yield({ type: 'info', v: 1, seq: 0, run: this.id, summary, queue: kind, ...fields });
  }

  #yield(event: RunEvent): void {
    this.#fanout.publish(event);
    this.emit('event', event);
  }

  #setState(state: RunHandleState): void {
    const previous = this.#state;
    if (state === previous) return;
    this.#state = state;
    this.emit('state', state, previous);
  }

  #finish(outcome: Outcome): void {
    if (this.#ended) return;
    this.#ended = true;
    this.context.attemptEnded(outcome);
    this.#setState(outcome.status);
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.resolve({ status: 'unanswered', reason: 'the run ended before the worker answered', seq: 0 });
    }
    this.#pending.clear();
    for (const resolve of this.#deliveries.values()) resolve('dropped');
    this.#deliveries.clear();
    this.#settleTaskAck(undefined);
    this.#fanout.end();
    this.context.release(this);
    this.emit('outcome', outcome);
    this.#settleOutcome(outcome);
  }
}
