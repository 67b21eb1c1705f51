// Redis clients of the queue: one ioredis client per role, set up the way BullMQ needs (no per-request retry limit).
import { Redis } from 'ioredis';
import type { RedisConnection } from './types.js';

/**
 * A new client. `maxRetriesPerRequest: null` makes commands wait through a Redis restart instead of failing
 * after a few reconnects (BullMQ requires it of a worker's clients); `onError` receives connection errors,
 * which ioredis would otherwise print as unhandled.
 */
export function createRedis(connection: RedisConnection, onError: (error: Error) => void): Redis {
  const fixed = { maxRetriesPerRequest: null, enableReadyCheck: true } as const;
  let client: Redis;
  if (typeof connection === 'string') {
    if (!/^rediss?:\/\//.test(connection)) throw new TypeError(`connection must be a redis:// or rediss:// URL or ioredis options, not ${JSON.stringify(connection)}`);
    client = new Redis(connection, fixed);
  } else if (typeof connection === 'object' && connection !== null) {
    client = new Redis({ ...connection, ...fixed });
  } else {
    throw new TypeError('connection must be a redis:// URL or ioredis options');
  }
  client.on('error', onError);
  return client;
}

/** Closes a client: QUIT when connected (pending replies arrive first), else disconnect at once. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'ready') {
    // A quit that fails (the connection dropped meanwhile) changes nothing: disconnect follows.
    const quit = client.quit().catch(() => undefined);
    await Promise.race([quit, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  }
  client.disconnect();
}
