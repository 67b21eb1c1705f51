// Entry of subvisor/queue: runs dispatched through BullMQ on Redis (producer createQueueSupervisor, worker startWorker).
export { createQueueSupervisor } from './producer.js';
export { startWorker } from './worker.js';
export { checkProfiles, readProfilesFile } from './profiles.js';
export type * from './types.js';
