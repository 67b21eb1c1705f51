// Budgets: the limits a run (or many runs together) may spend, the figures counted against them, and what a protocol reports of them.

/** The figures a budget counts, each from what the child reports. */
export interface BudgetFigures {
  /** Completed turns (HEP: model rounds; fuseraft-bridge: agent messages; fuseraft serve: tasks). */
  turns: number;
  /** Tool calls (the child's `tool-call` events). */
  toolCalls: number;
  /** Input + output tokens, or the child's own total when it gives only that (what `totalTokens(usage)` counts). */
  tokens: number;
  /** Cost in US dollars (`usage.costUsd`). */
  costUsd: number;
}

/** The name of one figure: `turns`, `toolCalls`, `tokens`, `costUsd`. */
export type BudgetFigure = keyof BudgetFigures;

/** Which figures a protocol's children report (a limit on one that is not reported is refused at spawn). */
export type ProtocolReports = Readonly<Record<BudgetFigure, boolean>>;

/** Limits on the figures: a run is stopped once one of them is reached. Each is a number > 0. */
export interface BudgetLimits {
  maxTurns?: number;
  maxToolCalls?: number;
  maxTokens?: number;
  maxCostUsd?: number;
}

/** The name of one limit. */
export type BudgetLimit = keyof BudgetLimits;

/**
 * A budget several runs draw on together (a pool's `budget.total`, or `sharedBudget(limits)` given to
 * many runs): every figure any of them reports counts against it, and once one of its limits is reached
 * every run drawing on it is stopped, and a run that would start on it never starts.
 */
export interface SharedBudget {
  readonly limits: Readonly<BudgetLimits>;
  /** What the runs drawing on it used so far, summed (live). */
  readonly used: Readonly<BudgetFigures>;
  /** The limit reached, once one is. */
  readonly exceeded: BudgetLimit | undefined;
}

/** `RunOptions.budget`: the run's own limits, and a shared budget it draws on too. */
export interface Budget extends BudgetLimits {
  /** A budget shared with other runs (from `sharedBudget()`); a pool with `budget.total` sets it. */
  shared?: SharedBudget;
}

/**
 * How a run was asked to stop on reaching a limit: `close` (it was idle with its answer), `finalize`
 * (asked for its answer now), `cancel` (its protocol cannot be asked for one, or it refused the finalize), `not-started` (the shared
 * budget was spent before it started: it never spawned).
 */
export type BudgetAction = 'close' | 'finalize' | 'cancel' | 'not-started';

/** The limit a run reached, and the figures at that moment. */
export interface BudgetExceeded {
  limit: BudgetLimit;
  /** `run`: the run's own limit; `shared`: the shared budget's (a pool's total). */
  scope: 'run' | 'shared';
  /** The run's own figures at that moment (those its protocol reports). */
  at: Partial<BudgetFigures>;
  /** scope `shared`: the shared budget's figures at that moment. */
  sharedAt?: BudgetFigures;
  action: BudgetAction;
}

/** `outcome.budget`: present on every run that had a budget. */
export interface BudgetReport {
  /** The run's own limits (without the shared budget's, which are in `sharedLimits`). */
  limits: BudgetLimits;
  sharedLimits?: BudgetLimits;
  /** What the run used over its whole life, counted from what the child reported (only the figures its protocol reports). */
  used: Partial<BudgetFigures>;
  /** The limit reached, when one was. */
  exceeded?: BudgetExceeded;
  /**
   * Completed turns that reported no token count (or no cost) while a token (or cost) limit was set: a
   * provider that reports nothing for a turn (fuseraft's null counts) leaves it out of the figures, and
   * this says how often that happened. Absent when it never did.
   */
  unmetered?: { tokens?: number; costUsd?: number };
}
