// The producer's one reader of run streams: a blocking XREAD over every followed run at once, woken when the set changes.
import type { Redis } from 'ioredis';

/** One followed stream. */
export interface StreamFollower {
  readonly key: string;
  /** The id of the last entry delivered ('0': from the start). */
  lastId: string;
  /** True while the consumer is behind: the stream is not read for it (Redis holds the backlog, bounded by MAXLEN). */
  paused(): boolean;
  deliver(entries: Array<[id: string, fields: string[]]>): void;
}

const BLOCK_MS = 1000;
const COUNT = 1000;

/** Reads every followed stream on one connection of its own (a blocking command holds its connection). */
export class StreamReader {
  readonly #followers = new Map<string, StreamFollower>();
  #clientId: number | undefined;
  #blocked = false;
  #closed = false;
  #wakeUp: (() => void) | undefined;
  readonly #loop: Promise<void>;

  constructor(
    private readonly reader: Redis,
    private readonly commands: Redis,
    private readonly onError: (error: Error) => void,
  ) {
    this.reader.on('ready', () => {
      this.#clientId = undefined;
      void this.reader.client('ID').then((id) => (this.#clientId = Number(id)), () => undefined);
    });
    this.#loop = this.#run();
  }

  add(follower: StreamFollower): void {
    this.#followers.set(follower.key, follower);
    this.wake();
  }

  remove(follower: StreamFollower): void {
    if (this.#followers.get(follower.key) === follower) this.#followers.delete(follower.key);
  }

  /** The set of streams to read changed (a run added, a paused one drained): restart the blocking read. */
  wake(): void {
    const wakeUp = this.#wakeUp;
    if (wakeUp !== undefined) {
      this.#wakeUp = undefined;
      wakeUp();
      return;
    }
    if (this.#blocked && this.#clientId !== undefined) void this.commands.client('UNBLOCK', this.#clientId).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.reader.disconnect();
    this.wake();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      const active = [...this.#followers.values()].filter((follower) => !follower.paused());
      if (active.length === 0) {
        await new Promise<void>((resolve) => (this.#wakeUp = resolve));
        continue;
      }
      let result: Array<[string, Array<[string, string[]]>]> | null;
      this.#blocked = true;
      try {
        result = (await this.reader.xread(
          'COUNT', COUNT, 'BLOCK', BLOCK_MS, 'STREAMS',
          ...active.map((follower) => follower.key),
          ...active.map((follower) => follower.lastId),
        )) as Array<[string, Array<[string, string[]]>]> | null;
      } catch (error) {
        if (this.#closed) break;
        this.onError(new Error(`reading the run streams failed: ${(error as Error).message}`));
        await new Promise((resolve) => setTimeout(resolve, 200));
        continue;
      } finally {
        this.#blocked = false;
      }
      for (const [key, entries] of result ?? []) {
        const follower = this.#followers.get(key);
        if (follower === undefined || entries.length === 0) continue;
        follower.lastId = entries[entries.length - 1]![0];
        follower.deliver(entries);
      }
    }
  }
}
