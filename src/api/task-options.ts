// The options of a task-shaped run: its budget (refused on a figure its protocol does not report) and its output schema (compiled, its instructions after the task).
import type { Protocol } from '../protocol/driver.js';
import type { Budget, BudgetFigure, BudgetLimits, SharedBudget } from '../protocol/budget.js';
import type { JsonSchema, ResolvedRunOptions } from '../protocol/resolved-options.js';
import { checkLimits, FIGURE_WORDS, LIMIT_FIGURE, LIMIT_NAMES } from '../run/budget-limits.js';
import { outputInstructions } from '../run/output-contract.js';
import { compileOutputSchema } from '../run/output-schema.js';
import { SharedBudgetAccount } from '../run/shared-budget.js';

/** `options.budget`: the run's own limits (undefined when none) and the shared budget it draws on. */
export function resolveBudget(budget: unknown): { budget: BudgetLimits | undefined; sharedBudget: SharedBudget | undefined } {
  if (budget === undefined) return { budget: undefined, sharedBudget: undefined };
  const limits = checkLimits(budget, 'options.budget', ['shared']);
  const shared = (budget as Budget).shared;
  if (shared !== undefined && !(shared instanceof SharedBudgetAccount)) {
    throw new TypeError('options.budget.shared must be a budget made by sharedBudget() (or left to the pool)');
  }
  if (Object.keys(limits).length === 0 && shared === undefined) throw new TypeError('options.budget sets no limit: give maxTurns, maxToolCalls, maxTokens or maxCostUsd');
  return { budget: Object.keys(limits).length === 0 ? undefined : limits, sharedBudget: shared };
}

/**
 * `outputSchema`: compiled now (a schema ajv cannot compile is a TypeError, before anything starts) and
 * its instructions appended to the task (`outputInstructions`: a text of the caller's instead, or false
 * for none).
 */
export function resolveOutput(schema: unknown, instructions: unknown, task: string | undefined): { outputSchema: JsonSchema | undefined; task: string | undefined } {
  if (schema === undefined) {
    if (instructions !== undefined) throw new TypeError('options.outputInstructions needs options.outputSchema');
    return { outputSchema: undefined, task };
  }
  compileOutputSchema(schema as JsonSchema);
  if (instructions !== undefined && instructions !== false && typeof instructions !== 'string') {
    throw new TypeError('options.outputInstructions must be a string or false');
  }
  const text = instructions === undefined ? outputInstructions(schema as JsonSchema) : instructions;
  return { outputSchema: schema as JsonSchema, task: task === undefined || text === false || text === '' ? task : `${task}\n\n${text}` };
}

/**
 * Refuses a limit on a figure the run's protocol does not report (it could never be enforced), from the
 * protocol's own `reports`: a TypeError naming the limit and what the protocol does report.
 */
export function refuseUnreported(options: ResolvedRunOptions, protocol: Protocol): void {
  const sharedLimits = options.sharedBudget?.limits;
  for (const [limits, where] of [[options.budget, 'options.budget'], [sharedLimits, 'options.budget.shared']] as const) {
    for (const name of LIMIT_NAMES) {
      if (limits?.[name] === undefined || protocol.reports[LIMIT_FIGURE[name]]) continue;
      const reported = (Object.keys(protocol.reports) as BudgetFigure[]).filter((figure) => protocol.reports[figure]).map((figure) => FIGURE_WORDS[figure]);
      throw new TypeError(
        `${where}.${name} cannot be enforced: protocol '${options.protocol}' does not report ${FIGURE_WORDS[LIMIT_FIGURE[name]]} (it reports ${reported.length === 0 ? 'none of the figures' : reported.join(', ')})`,
      );
    }
  }
}
