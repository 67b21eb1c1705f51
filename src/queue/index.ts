// Entry of subvisor/queue: runs dispatched through BullMQ on Redis (producer createQueueSupervisor, worker startWorker).
import { queuePeers } from './peers.js';

// Importing subvisor/queue without BullMQ and ioredis fails here, saying what to install (the CLI, which imports the
// modules below and not this entry, starts without them).
queuePeers();

export { createQueueSupervisor } from './producer.js';
export { startWorker } from './worker.js';
export { checkProfiles, readProfilesFile } from './profiles.js';
export type * from './types.js';
