// The pool's options: checks of its own (concurrency, the pool budget) and the merge of a spawn's options over its defaults.
import { checkLimits } from '../run/budget-limits.js';
import type { Budget, BudgetLimits, RunOptions } from '../api/types.js';
import { OPTION_KEYS as RUN_OPTION_KEYS } from '../api/option-checks.js';
import type { PoolSpawnOptions, SupervisorOptions } from './types.js';

/** Every key of {@link PoolSpawnOptions}: spawnRun's and the pool's own. */
export const SPAWN_OPTION_KEYS = [
  ...RUN_OPTION_KEYS,
  ...Object.keys({ priority: true, retry: true } satisfies Record<Exclude<keyof PoolSpawnOptions, keyof RunOptions>, true>),
];

/** Every key of {@link SupervisorOptions}: another is refused with the name meant. */
export const SUPERVISOR_OPTION_KEYS = Object.keys({
  concurrency: true,
  defaults: true,
  retry: true,
  budget: true,
  handleParentSignals: true,
  highWaterMark: true,
  highWaterBytes: true,
  start: true,
  durable: true,
  warm: true,
  rateLimitKey: true,
  rateLimit: true,
  clock: true,
} satisfies Record<keyof SupervisorOptions, true>);

/** `concurrency`: how many runs (live process trees) at once. */
export function checkConcurrency(value: unknown): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new RangeError('concurrency must be an integer >= 1');
  }
}

/** The pool's budget: `total` and `perRun` limits checked (per-run limits given once: here or in `defaults.budget`). */
export function checkPoolBudget(budget: unknown, defaultBudget: Budget | undefined): { total?: BudgetLimits; perRun?: BudgetLimits } {
  if (budget === undefined) return {};
  if (typeof budget !== 'object' || budget === null) throw new TypeError('options.budget must be an object: { total, perRun }');
  const { total, perRun, ...rest } = budget as { total?: unknown; perRun?: unknown };
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new TypeError(`options.budget.${unknown} is not a pool budget field: give total (the pool's runs together) and perRun (each run)`);
  if (perRun !== undefined && defaultBudget !== undefined) throw new TypeError('give per-run limits once: options.budget.perRun or options.defaults.budget');
  const checked: { total?: BudgetLimits; perRun?: BudgetLimits } = {};
  if (total !== undefined) checked.total = total as BudgetLimits;
  if (perRun !== undefined) checked.perRun = checkLimits(perRun, 'options.budget.perRun');
  return checked;
}

/** `options` over `defaults`, key by key; `env` variable by variable, `budget` and `limits` limit by limit. The pool decides parent-signal handling. */
export function mergeOptions(defaults: Partial<RunOptions>, options: Partial<RunOptions>, signals: boolean): RunOptions {
  const merged: Partial<RunOptions> = { ...defaults };
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
  }
  if (defaults.env !== undefined || options.env !== undefined) merged.env = { ...defaults.env, ...options.env };
  if (defaults.budget !== undefined && options.budget !== undefined) merged.budget = { ...defaults.budget, ...options.budget };
  if (defaults.limits !== undefined && options.limits !== undefined) merged.limits = { ...defaults.limits, ...options.limits };
  merged.handleParentSignals = signals;
  return merged as RunOptions;
}
