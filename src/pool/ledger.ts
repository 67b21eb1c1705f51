// The usage ledger of many runs: tokens and cost summed over their outcomes, by protocol, model and status, and whether the sums are complete.
import { totalTokens } from '../wire/index.js';
import { addCost } from '../wire/usage.js';
import type { Outcome, OutcomeStatus } from '../api/types.js';

/** Sums over a set of runs (each attempt of a retried task is a run: it spent too). */
export interface UsageTotals {
  runs: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Input + output tokens (or a run's own total when it reported only that), as `totalTokens(usage)` counts. */
  tokens: number;
  costUsd: number;
  /** Runs that ran (a turn started, or usage came) and reported no usage at all: the sums miss what they used. */
  withoutUsage: number;
  /** Runs that ran and reported no cost (fuseraft never does): `costUsd` misses what they cost. */
  withoutCost: number;
}

/** What `usage()` returns: a snapshot. */
export interface UsageLedger {
  total: UsageTotals;
  /** By `outcome.protocol` (runs that never started without one are in the total only). */
  byProtocol: Record<string, UsageTotals>;
  /** By `outcome.model`, for the runs whose child named one (see the protocol table in docs/api.md). */
  byModel: Record<string, UsageTotals>;
  byStatus: Partial<Record<OutcomeStatus, UsageTotals>>;
  /** Every run that ran reported its usage (`total.withoutUsage === 0`): else the sums are a lower bound. */
  complete: boolean;
}

function zeroTotals(): UsageTotals {
  return { runs: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, tokens: 0, costUsd: 0, withoutUsage: 0, withoutCost: 0 };
}

/** Adds outcomes as they settle; `snapshot()` copies the sums. */
export class UsageBook {
  readonly #total = zeroTotals();
  readonly #byProtocol = new Map<string, UsageTotals>();
  readonly #byModel = new Map<string, UsageTotals>();
  readonly #byStatus = new Map<OutcomeStatus, UsageTotals>();

  add(outcome: Outcome): void {
    const groups = [this.#total, group(this.#byStatus, outcome.status)];
    if (outcome.protocol !== undefined) groups.push(group(this.#byProtocol, outcome.protocol));
    if (outcome.model !== undefined) groups.push(group(this.#byModel, outcome.model));
    const usage = outcome.usage;
    const ran = outcome.turns > 0 || usage !== undefined;
    for (const totals of groups) {
      totals.runs++;
      if (ran && usage === undefined) totals.withoutUsage++;
      if (ran && usage?.costUsd === undefined) totals.withoutCost++;
      if (usage === undefined) continue;
      totals.inputTokens += usage.inputTokens ?? 0;
      totals.outputTokens += usage.outputTokens ?? 0;
      totals.cacheReadTokens += usage.cacheReadTokens ?? 0;
      totals.cacheWriteTokens += usage.cacheWriteTokens ?? 0;
      totals.tokens += totalTokens(usage) ?? 0;
      totals.costUsd = addCost(totals.costUsd, usage.costUsd ?? 0);
    }
  }

  snapshot(): UsageLedger {
    const copy = <K extends string>(map: Map<K, UsageTotals>) => Object.fromEntries([...map].map(([key, totals]) => [key, { ...totals }])) as Record<K, UsageTotals>;
    return {
      total: { ...this.#total },
      byProtocol: copy(this.#byProtocol),
      byModel: copy(this.#byModel),
      byStatus: copy(this.#byStatus),
      complete: this.#total.withoutUsage === 0,
    };
  }
}

function group<K>(map: Map<K, UsageTotals>, key: K): UsageTotals {
  let totals = map.get(key);
  if (totals === undefined) map.set(key, (totals = zeroTotals()));
  return totals;
}
