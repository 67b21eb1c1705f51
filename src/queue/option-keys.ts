// The keys of the queue's options objects: the producer, its spawn and dashboard, and the worker refuse any other.
import { DASHBOARD_OPTION_KEYS } from '../dashboard/option-keys.js';
import type { QueueAddress, QueueDashboardOptions, QueueSupervisorOptions, RemoteSpawnOptions, WorkerOptions } from './types.js';

const ADDRESS = { connection: true, queue: true, prefix: true } satisfies Record<keyof QueueAddress, true>;

export const QUEUE_SUPERVISOR_OPTION_KEYS = Object.keys({
  ...ADDRESS,
  retention: true,
  controlTimeoutMs: true,
  checkIntervalMs: true,
  highWaterMark: true,
} satisfies Record<keyof QueueSupervisorOptions, true>);

export const REMOTE_SPAWN_OPTION_KEYS = Object.keys({
  profile: true,
  task: true,
  runId: true,
  timeoutMs: true,
  keepAlive: true,
  attempts: true,
  backoffMs: true,
  priority: true,
  retention: true,
} satisfies Record<keyof RemoteSpawnOptions, true>);

export const QUEUE_DASHBOARD_OPTION_KEYS = [
  ...DASHBOARD_OPTION_KEYS,
  ...Object.keys({ runs: true, discoverIntervalMs: true } satisfies Record<Exclude<keyof QueueDashboardOptions, (typeof DASHBOARD_OPTION_KEYS)[number]>, true>),
];

export const WORKER_OPTION_KEYS = Object.keys({
  ...ADDRESS,
  concurrency: true,
  profiles: true,
  lockDurationMs: true,
  stalledIntervalMs: true,
  maxStalledCount: true,
  shutdown: true,
  shutdownGraceMs: true,
  handleSignals: true,
  name: true,
  stateDir: true,
} satisfies Record<keyof WorkerOptions, true>);
