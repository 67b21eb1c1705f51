// Redis connections of the queue: one ioredis client per role, and the options BullMQ gets to make (and close) its own.
import type { Redis } from 'ioredis';
import { queuePeers } from './peers.js';
import type { RedisOptions } from 'ioredis';
import type { RedisConnection } from './types.js';

/**
 * The connection as ioredis options. `maxRetriesPerRequest: null` makes commands wait through a Redis
 * restart instead of failing after a few reconnects (BullMQ requires it of a worker's clients). BullMQ is
 * given these options rather than a client, so it owns its clients and closes them even when it is closed
 * before it finished connecting.
 */
export function redisOptions(connection: RedisConnection): RedisOptions {
  const fixed = { maxRetriesPerRequest: null, enableReadyCheck: true } as const;
  if (typeof connection === 'object' && connection !== null) return { ...connection, ...fixed };
  if (typeof connection !== 'string') throw new TypeError('connection must be a redis:// URL or ioredis options');
  let url: URL;
  try {
    url = new URL(connection);
  } catch {
    throw new TypeError(`connection must be a redis:// or rediss:// URL or ioredis options, not ${JSON.stringify(connection)}`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new TypeError(`connection must be a redis:// or rediss:// URL or ioredis options, not ${JSON.stringify(connection)}`);
  }
  const options: RedisOptions = { ...fixed, host: url.hostname || '127.0.0.1', port: url.port === '' ? 6379 : Number(url.port) };
  if (url.username !== '') options.username = decodeURIComponent(url.username);
  if (url.password !== '') options.password = decodeURIComponent(url.password);
  const db = url.pathname.replace(/^\//, '');
  if (db !== '') {
    if (!/^\d+$/.test(db)) throw new TypeError(`the database in ${JSON.stringify(connection)} must be a number`);
    options.db = Number(db);
  }
  if (url.protocol === 'rediss:') options.tls = {};
  return options;
}

/** A new client of subvisor's own (streams, controls); `onError` receives connection errors, which ioredis would print as unhandled. */
export function createRedis(options: RedisOptions, onError: (error: Error) => void): Redis {
  const client = new (queuePeers().ioredis.Redis)(options);
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
