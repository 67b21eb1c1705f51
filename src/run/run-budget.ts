// A run's budget: its figures counted from what the child reports (tool calls, model calls, completed turns), the limit reached, and the report.
import { totalTokens } from '../wire/index.js';
import { addCost } from '../wire/usage.js';
import type { Usage } from '../wire/index.js';
import type { BudgetAction, BudgetExceeded, BudgetFigures, BudgetLimit, BudgetLimits, BudgetReport, ProtocolReports, SharedBudget } from '../protocol/budget.js';
import type { FinalVerdict } from './outcome.js';
import { addFigures, describeReached, LIMIT_FIGURE, reachedLimit, zeroFigures } from './budget-limits.js';
import type { SharedBudgetAccount } from './shared-budget.js';

/**
 * Stops the run for its budget as its protocol allows (`reason` says which limit); returns how, or
 * undefined when the run is already ending for another reason (the limit is then not recorded).
 */
export type StopForBudget = (reason: string) => BudgetAction | undefined;

/**
 * Counts one run's figures against its own limits and the shared budget it draws on. Tool calls count as
 * they come; a model call's usage counts while its turn is open, and the turn's own usage replaces that
 * estimate when its turn-complete reports one. The first limit reached stops the run, once.
 */
export class BudgetMeter {
  readonly #limits: BudgetLimits;
  readonly #shared: SharedBudgetAccount | undefined;
  readonly #reports: ProtocolReports;
  readonly #stop: StopForBudget;
  readonly #used = zeroFigures();
  /** What the open turn's model calls reported so far: replaced by the turn's own usage. */
  #turnEstimate = { tokens: 0, costUsd: 0 };
  #exceeded: BudgetExceeded | undefined;
  #reason: string | undefined;
  #unmetered: { tokens?: number; costUsd?: number } | undefined;
  #leave: (() => void) | undefined;

  constructor(limits: BudgetLimits, shared: SharedBudgetAccount | undefined, reports: ProtocolReports, stop: StopForBudget) {
    this.#limits = limits;
    this.#shared = shared;
    this.#reports = reports;
    this.#stop = stop;
    this.#leave = shared?.join((limit, figures) => this.#sharedReached(limit, figures));
  }

  /** The limit reached, once one was (and the run was stopped for it). */
  get exceeded(): BudgetExceeded | undefined {
    return this.#exceeded;
  }

  /** The shared budget was spent before the run could start: it never starts. Returns the verdict's error. */
  notStarted(): string {
    const { error, exceeded } = notStartedOn(this.#shared!);
    this.#reason = error;
    this.#exceeded = exceeded;
    return error;
  }

  toolCalled(): void {
    this.#add({ toolCalls: 1 });
  }

  /** A model call ended with `usage`: counted until its turn reports its own. */
  modelCallEnded(usage: Usage): void {
    const tokens = totalTokens(usage) ?? 0;
    const costUsd = usage.costUsd ?? 0;
    this.#turnEstimate.tokens += tokens;
    this.#turnEstimate.costUsd = addCost(this.#turnEstimate.costUsd, costUsd);
    this.#add({ tokens, costUsd });
  }

  /** A turn completed with `usage` (or none): the turn counts, and its usage replaces the model calls' estimate. */
  turnCompleted(usage: Usage | undefined): void {
    const estimate = this.#turnEstimate;
    this.#turnEstimate = { tokens: 0, costUsd: 0 };
    const tokens = totalTokens(usage);
    const costUsd = usage?.costUsd;
    if (tokens === undefined && estimate.tokens === 0) this.#unmeteredTurn('tokens', 'maxTokens');
    if (costUsd === undefined && estimate.costUsd === 0) this.#unmeteredTurn('costUsd', 'maxCostUsd');
    this.#add({
      turns: 1,
      tokens: tokens === undefined ? 0 : tokens - estimate.tokens,
      costUsd: costUsd === undefined ? 0 : addCost(costUsd, -estimate.costUsd),
    });
  }

  /**
   * The verdict of a run that reached a limit and did not end `done`: `budget-exceeded`, whatever ended it
   * after that (a finalize that timed out, the child's own failure), said in the error.
   */
  judge(verdict: FinalVerdict): FinalVerdict {
    const reason = this.#reason;
    if (reason === undefined || verdict.status === 'done') return verdict;
    const error = verdict.error.startsWith(reason) ? verdict.error : `${reason}; then: ${verdict.error}`;
    return { ...verdict, code: 'budget-exceeded', error, fromChild: false };
  }

  /** The outcome's `budget`; the meter stops counting (and leaves the shared budget). */
  report(): BudgetReport {
    this.#leave?.();
    this.#leave = undefined;
    const report: BudgetReport = { limits: { ...this.#limits }, used: this.#reported(this.#used) };
    if (this.#shared !== undefined) report.sharedLimits = { ...this.#shared.limits };
    if (this.#exceeded !== undefined) report.exceeded = this.#exceeded;
    if (this.#unmetered !== undefined) report.unmetered = this.#unmetered;
    return report;
  }

  #add(delta: Partial<BudgetFigures>): void {
    addFigures(this.#used, delta);
    if (this.#exceeded === undefined) {
      const limit = reachedLimit(this.#used, this.#limits);
      if (limit !== undefined) this.#stopAt(limit, 'run', undefined);
    }
    this.#shared?.draw(delta);
  }

  #sharedReached(limit: BudgetLimit, figures: BudgetFigures): void {
    if (this.#exceeded === undefined) this.#stopAt(limit, 'shared', figures);
  }

  #stopAt(limit: BudgetLimit, scope: 'run' | 'shared', sharedAt: BudgetFigures | undefined): void {
    const reason = scope === 'run'
      ? `the run reached its budget: ${describeReached(limit, this.#limits, this.#used)}`
      : `the shared budget was spent: ${describeReached(limit, this.#shared!.limits, sharedAt!)}`;
    const action = this.#stop(reason);
    if (action === undefined) return;
    this.#reason = reason;
    const exceeded: BudgetExceeded = { limit, scope, at: this.#reported(this.#used), action };
    if (sharedAt !== undefined) exceeded.sharedAt = { ...sharedAt };
    this.#exceeded = exceeded;
  }

  #unmeteredTurn(figure: 'tokens' | 'costUsd', limit: BudgetLimit): void {
    if (this.#limits[limit] === undefined && this.#shared?.limits[limit] === undefined) return;
    const unmetered = (this.#unmetered ??= {});
    unmetered[figure] = (unmetered[figure] ?? 0) + 1;
  }

  /** The figures the protocol reports (a figure it does not report would read 0, which is not what was used). */
  #reported(figures: BudgetFigures): Partial<BudgetFigures> {
    const reported: Partial<BudgetFigures> = {};
    for (const figure of Object.values(LIMIT_FIGURE)) if (this.#reports[figure]) reported[figure] = figures[figure];
    return reported;
  }
}

/** A run that never starts because `shared` is spent: its verdict's error and what its `outcome.budget.exceeded` says. */
export function notStartedOn(shared: SharedBudget): { error: string; exceeded: BudgetExceeded } {
  const limit = shared.exceeded!;
  const figures = shared.used;
  return {
    error: `the shared budget was spent before the run started: ${describeReached(limit, shared.limits, figures)}; it never started`,
    exceeded: { limit, scope: 'shared', at: {}, sharedAt: { ...figures }, action: 'not-started' },
  };
}
