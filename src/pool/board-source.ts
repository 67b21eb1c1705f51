// The pool as a dashboard's source: its live runs and every run queued later, each followed until its outcome, with its own controls.
import { boardEntry } from '../dashboard/source.js';
import type { BoardSource } from '../dashboard/source.js';
import type { PooledRun } from './pooled-run.js';
import type { PoolRun, Supervisor } from './types.js';

/** A dashboard source over `pool`: `live()` lists the runs it holds now (queued, waiting out a backoff, running). */
export function poolBoardSource(pool: Supervisor, live: () => Iterable<PooledRun>): BoardSource {
  const entryOf = (run: PooledRun) => boardEntry(run, { label: run.runOptions.protocol ?? 'fen', task: run.runOptions.task, attempt: run.attempt });
  return {
    kind: 'pool',
    follow(listener) {
      const onQueued = (run: PoolRun) => listener(entryOf(run as PooledRun));
      pool.on('queued', onQueued);
      for (const run of live()) listener(entryOf(run));
      return () => pool.off('queued', onQueued);
    },
    counts: () => ({ ...pool.counts }),
  };
}
