// Budget limits: which figure each limit bounds, checking a caller's limits, and which limit a set of figures reached.
import { closestName } from '../text/closest-name.js';
import { addCost } from '../wire/usage.js';
import type { BudgetFigure, BudgetFigures, BudgetLimit, BudgetLimits } from '../protocol/budget.js';

/**
 * Adds `delta` into `used`, figure by figure: a negative token or cost delta corrects an estimate, and no
 * figure goes below zero; cost sums carry no floating point noise.
 */
export function addFigures(used: BudgetFigures, delta: Partial<BudgetFigures>): void {
  for (const figure of Object.values(LIMIT_FIGURE)) {
    const add = delta[figure];
    if (add !== undefined) used[figure] = Math.max(0, figure === 'costUsd' ? addCost(used[figure], add) : used[figure] + add);
  }
}

/** The figure each limit bounds. */
export const LIMIT_FIGURE: Readonly<Record<BudgetLimit, BudgetFigure>> = {
  maxTurns: 'turns',
  maxToolCalls: 'toolCalls',
  maxTokens: 'tokens',
  maxCostUsd: 'costUsd',
};

/** The limit names, in the order they are checked (and named in messages). */
export const LIMIT_NAMES = Object.keys(LIMIT_FIGURE) as BudgetLimit[];

/** How a figure is named in messages. */
export const FIGURE_WORDS: Readonly<Record<BudgetFigure, string>> = {
  turns: 'turns',
  toolCalls: 'tool calls',
  tokens: 'tokens',
  costUsd: 'cost',
};

/**
 * Checks the limits of `value` (`where` names it in errors: `options.budget`) and returns them, only those
 * given. Counts are integers >= 1, `maxCostUsd` a finite number > 0; `extraKeys` may appear beside them
 * (and are not returned). Throws a TypeError or RangeError naming the key.
 */
export function checkLimits(value: unknown, where: string, extraKeys: readonly string[] = []): BudgetLimits {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`${where} must be an object of limits`);
  const known = [...LIMIT_NAMES, ...extraKeys];
  const limits: BudgetLimits = {};
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      const closest = closestName(key, known, 3);
      throw new TypeError(`${where}.${key} is not a budget limit${closest === undefined ? '' : ` (did you mean ${closest}?)`}; the limits are ${LIMIT_NAMES.join(', ')}`);
    }
  }
  for (const name of LIMIT_NAMES) {
    const limit = (value as Record<string, unknown>)[name];
    if (limit === undefined) continue;
    const valid = name === 'maxCostUsd'
      ? typeof limit === 'number' && Number.isFinite(limit) && limit > 0
      : typeof limit === 'number' && Number.isSafeInteger(limit) && limit >= 1;
    if (!valid) {
      // A wrong type is a TypeError, a number out of range a RangeError: as every other option.
      const Refusal = typeof limit === 'number' ? RangeError : TypeError;
      throw new Refusal(`${where}.${name} must be ${name === 'maxCostUsd' ? 'a number of dollars > 0' : 'an integer >= 1'}`);
    }
    limits[name] = limit as number;
  }
  return limits;
}

/** The first limit `figures` reached (a figure at or over its limit), or undefined. */
export function reachedLimit(figures: BudgetFigures, limits: BudgetLimits): BudgetLimit | undefined {
  return LIMIT_NAMES.find((name) => {
    const limit = limits[name];
    return limit !== undefined && figures[LIMIT_FIGURE[name]] >= limit;
  });
}

/** `maxToolCalls 20 (20 tool calls)`: a limit and the figure that reached it, for messages. */
export function describeReached(limit: BudgetLimit, limits: BudgetLimits, figures: BudgetFigures): string {
  const figure = LIMIT_FIGURE[limit];
  const count = figures[figure];
  // "1 turn", "2 turns": the words are plurals ending in s.
  const value = figure === 'costUsd' ? `$${figures.costUsd.toFixed(4)}` : `${count} ${count === 1 ? FIGURE_WORDS[figure].slice(0, -1) : FIGURE_WORDS[figure]}`;
  return `${limit} ${limits[limit]} (${value})`;
}

/** Figures all at zero. */
export function zeroFigures(): BudgetFigures {
  return { turns: 0, toolCalls: 0, tokens: 0, costUsd: 0 };
}
