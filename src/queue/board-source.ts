// The queue producer as a dashboard's source: the runs it follows (or every run of the queue, found in BullMQ's lists), each read from its stream, with the relayed controls.
import { boardEntry } from '../dashboard/source.js';
import type { BoardSource } from '../dashboard/source.js';
import type { RemoteRun } from './types.js';

/** What the board shows of a queued run beside its stream: the profile and the task of its job. */
export interface QueuedRunInfo {
  profile: string | undefined;
  task: string | undefined;
}

/** How the producer hands its runs over: those it follows now, and each one it follows later. */
export interface FollowedRuns {
  /** Calls `listener` with each run followed now and later; returns a function that stops. */
  watch(listener: (run: RemoteRun, info: QueuedRunInfo) => void): () => void;
  /** Starts following every run of the queue (BullMQ's job lists, every `intervalMs`); returns a function that stops. */
  discover(intervalMs: number): () => void;
}

/** A dashboard source over a producer's runs: `everyRun` also follows the runs other producers enqueued. */
export function queueBoardSource(followed: FollowedRuns, everyRun: boolean, discoverIntervalMs: number): BoardSource {
  return {
    kind: 'queue',
    follow(listener) {
      const stopWatching = followed.watch((run, info) =>
        listener(boardEntry(run, { label: info.profile ?? '', task: info.task, attempt: Math.max(1, run.attempt) })),
      );
      const stopDiscovering = everyRun ? followed.discover(discoverIntervalMs) : () => undefined;
      return () => {
        stopWatching();
        stopDiscovering();
      };
    },
  };
}
