// The pool as a dashboard's source: its live runs and every run queued later, each followed until its outcome, with its own controls; and its rate-limit gates.
import { boardEntry } from '../dashboard/source.js';
import type { BoardGate, BoardSource } from '../dashboard/source.js';
import type { PooledRun } from './pooled-run.js';
import type { PoolRun, RateLimitGateState, Supervisor } from './types.js';

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
    followGates(listener) {
      const tell = () => listener(Object.values(pool.rateLimited).map(boardGate));
      pool.on('rate-limit', tell);
      tell();
      return () => pool.off('rate-limit', tell);
    },
  };
}

/** A gate that is not open, for the page: its times and a few words on what shut it. */
function boardGate(gate: RateLimitGateState): BoardGate {
  const report = gate.cause?.report;
  const said = report === undefined ? '' : [report.httpStatus === undefined ? '' : `HTTP ${report.httpStatus}`, report.nativeType].filter((part) => part !== '').join(' ');
  return {
    key: gate.key,
    state: gate.state === 'ramping' ? 'ramping' : 'shut',
    until: gate.until ?? null,
    allowance: gate.allowance ?? null,
    waiting: gate.waiting,
    reason: gate.cause === undefined ? '' : `${said} from run ${gate.cause.runId}`,
  };
}
