// BullMQ and ioredis, the queue's optional peer dependencies: loaded when the queue is used, with the install command when absent.
import { createRequire } from 'node:module';

/** What a project that uses subvisor/queue runs once (they are optional peers: `npm install subvisor` does not bring them). */
const INSTALL_PEERS = 'npm install bullmq ioredis';
const PEERS = ['bullmq', 'ioredis'];

/**
 * Loaded with require, on first use rather than at import: the CLI reaches the queue's modules for `supervise worker`
 * and `--redis` only, and must start without BullMQ for everything else. Both packages ship CommonJS.
 */
const load = createRequire(import.meta.url);
let peers: { bullmq: typeof import('bullmq'); ioredis: typeof import('ioredis') } | undefined;

/** BullMQ and ioredis, or an Error that names the missing package and the command that installs both. */
export function queuePeers(): { bullmq: typeof import('bullmq'); ioredis: typeof import('ioredis') } {
  peers ??= { bullmq: required('bullmq'), ioredis: required('ioredis') };
  return peers;
}

function required<T>(name: string): T {
  try {
    return load(name) as T;
  } catch (error) {
    // BullMQ requires ioredis itself: whichever of the two is absent is the one to name.
    const missing = (error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' ? PEERS.find((peer) => (error as Error).message.includes(`'${peer}'`)) : undefined;
    if (missing === undefined) throw error;
    throw new Error(`subvisor/queue needs BullMQ and ioredis, optional peer dependencies that npm does not install with subvisor (${missing} is missing): ${INSTALL_PEERS}`, { cause: error });
  }
}
