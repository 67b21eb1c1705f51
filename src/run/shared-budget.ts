// A budget many runs draw on together: their figures summed, the limit reached, and every run drawing on it told at once.
import type { BudgetFigures, BudgetLimit, BudgetLimits, SharedBudget } from '../protocol/budget.js';
import { addFigures, checkLimits, reachedLimit, zeroFigures } from './budget-limits.js';

/** A member's stop: the shared budget reached `limit` with these figures. */
export type SharedStop = (limit: BudgetLimit, figures: BudgetFigures) => void;

/** Implementation of {@link SharedBudget}: the runs drawing on it report their figures as they come. */
export class SharedBudgetAccount implements SharedBudget {
  readonly limits: Readonly<BudgetLimits>;
  readonly #used = zeroFigures();
  #exceeded: BudgetLimit | undefined;
  readonly #members = new Set<SharedStop>();
  readonly #watchers = new Set<SharedStop>();

  constructor(limits: BudgetLimits) {
    this.limits = Object.freeze({ ...limits });
  }

  get used(): Readonly<BudgetFigures> {
    return { ...this.#used };
  }

  get exceeded(): BudgetLimit | undefined {
    return this.#exceeded;
  }

  /** A run draws on it from now on: `stop` is called once a limit is reached. Returns its leave. */
  join(stop: SharedStop): () => void {
    this.#members.add(stop);
    return () => this.#members.delete(stop);
  }

  /** Called once a limit is reached, beside the members (the pool, which then starts no more runs). Returns its removal. */
  watch(onExceeded: SharedStop): () => void {
    this.#watchers.add(onExceeded);
    return () => this.#watchers.delete(onExceeded);
  }

  /** Adds a member's new figures (a negative token or cost delta corrects an estimate), then checks the limits. */
  draw(delta: Partial<BudgetFigures>): void {
    addFigures(this.#used, delta);
    if (this.#exceeded !== undefined) return;
    const limit = reachedLimit(this.#used, this.limits);
    if (limit === undefined) return;
    this.#exceeded = limit;
    const figures = this.used;
    for (const stop of [...this.#members, ...this.#watchers]) stop(limit, figures);
  }
}

/**
 * A budget several runs share: give it to each as `budget: { shared }` (a pool's `budget.total` makes one
 * for its runs). Throws a TypeError or RangeError on invalid limits, like the run options.
 */
export function sharedBudget(limits: BudgetLimits): SharedBudget {
  return openAccount(limits, 'sharedBudget(limits)');
}

/** A shared budget with `limits`, checked (`where` names them in errors). */
export function openAccount(limits: unknown, where: string): SharedBudgetAccount {
  const checked = checkLimits(limits, where);
  if (Object.keys(checked).length === 0) throw new TypeError(`${where} needs at least one limit`);
  return new SharedBudgetAccount(checked);
}
