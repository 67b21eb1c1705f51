// Writes one run's records to its bounded Redis stream (XADD MAXLEN, then PEXPIRE), in order, batched per pipeline.
import type { Redis } from 'ioredis';
import type { StreamRecord } from './records.js';

export class StreamWriter {
  #pending: Array<StreamRecord & { n: number }> = [];
  #scheduled = false;
  #last: Promise<void> = Promise.resolve();
  #muted = false;
  /** Records written by this writer (one attempt), so a reader can tell how many MAXLEN trimmed away. */
  #count = 0;

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly maxEvents: number,
    private readonly ttlMs: number,
    private readonly onError: (error: Error) => void,
  ) {}

  /** Queues a record; records written in the same tick share one pipeline (one round trip). */
  add(record: StreamRecord): void {
    if (this.#muted) return;
    this.#pending.push({ ...record, n: ++this.#count });
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => this.#flush());
  }

  /** Resolves once every record added so far is in Redis (or failed, reported through onError). */
  async flushed(): Promise<void> {
    if (this.#scheduled) this.#flush();
    await this.#last;
  }

  /** Drops every later record: the attempt is no longer this worker's (its lock was lost). */
  mute(): void {
    this.#muted = true;
    this.#pending = [];
  }

  #flush(): void {
    this.#scheduled = false;
    const records = this.#pending;
    this.#pending = [];
    if (records.length === 0) return;
    const pipeline = this.redis.pipeline();
    // Exact MAXLEN: the bound is what the retention option says, not "about" it.
    for (const record of records) pipeline.xadd(this.key, 'MAXLEN', String(this.maxEvents), '*', 'r', JSON.stringify(record));
    pipeline.pexpire(this.key, Math.ceil(this.ttlMs));
    // One connection sends commands in order (also from its offline queue across a reconnect), so
    // pipelines go out at once; #last only tracks when they are all answered.
    const done = pipeline.exec().then(
      (results) => {
        const failed = results?.find(([error]) => error !== null);
        if (failed !== undefined) this.onError(new Error(`writing the run's events to ${this.key} failed: ${(failed[0] as Error).message}`));
      },
      (error: Error) => this.onError(new Error(`writing the run's events to ${this.key} failed: ${error.message}`)),
    );
    this.#last = Promise.all([this.#last, done]).then(() => undefined);
  }
}
