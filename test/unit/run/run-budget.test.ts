// The budget's counting, limits and report (BudgetMeter, the shared budget, the limit checks), with no run around them.
import { describe, expect, it } from 'vitest';
import type { BudgetAction, ProtocolReports } from '../../../src/protocol/budget.js';
import { checkLimits, reachedLimit } from '../../../src/run/budget-limits.js';
import { BudgetMeter } from '../../../src/run/run-budget.js';
import { sharedBudget, SharedBudgetAccount } from '../../../src/run/shared-budget.js';

const ALL: ProtocolReports = { turns: true, toolCalls: true, tokens: true, costUsd: true };

/** A meter whose stop records each reason and answers `action`. */
function meter(limits: object, options: { reports?: ProtocolReports; shared?: SharedBudgetAccount; action?: BudgetAction | undefined } = {}) {
  const stops: string[] = [];
  const action = 'action' in options ? options.action : 'finalize';
  const budget = new BudgetMeter(limits, options.shared, options.reports ?? ALL, (reason) => {
    stops.push(reason);
    return action;
  });
  return { budget, stops };
}

describe('budget limits', () => {
  it('checks each limit and names the key of a mistake', () => {
    expect(checkLimits({ maxTurns: 3, maxCostUsd: 0.5 }, 'options.budget')).toEqual({ maxTurns: 3, maxCostUsd: 0.5 });
    expect(() => checkLimits({ maxToolCall: 3 }, 'options.budget')).toThrow(/options\.budget\.maxToolCall is not a budget limit \(did you mean maxToolCalls\?\)/);
    expect(() => checkLimits({ maxTurns: 0 }, 'options.budget')).toThrow(RangeError);
    expect(() => checkLimits({ maxTurns: 1.5 }, 'options.budget')).toThrow(/integer >= 1/);
    expect(() => checkLimits({ maxCostUsd: -1 }, 'options.budget')).toThrow(/dollars > 0/);
    expect(() => checkLimits({ maxTokens: Infinity }, 'options.budget')).toThrow(RangeError);
    expect(() => checkLimits(null, 'options.budget')).toThrow(TypeError);
    // A wrong type is a TypeError, as for every option; a number out of range a RangeError.
    expect(() => checkLimits({ maxTurns: '5' }, 'options.budget')).toThrow(TypeError);
    expect(() => checkLimits({ maxCostUsd: null }, 'options.budget')).toThrow(TypeError);
  });

  it('a limit is reached when its figure is at or over it', () => {
    const figures = { turns: 2, toolCalls: 5, tokens: 100, costUsd: 0.25 };
    expect(reachedLimit(figures, { maxTurns: 3, maxToolCalls: 6 })).toBeUndefined();
    expect(reachedLimit(figures, { maxToolCalls: 5 })).toBe('maxToolCalls');
    expect(reachedLimit(figures, { maxCostUsd: 0.2 })).toBe('maxCostUsd');
  });
});

describe('BudgetMeter', () => {
  it('stops once at the limit, with the figures at that moment; counting goes on for the report', () => {
    const { budget, stops } = meter({ maxToolCalls: 3 });
    budget.toolCalled();
    budget.toolCalled();
    expect(stops).toEqual([]);
    budget.toolCalled();
    budget.toolCalled();
    expect(stops).toEqual(['the run reached its budget: maxToolCalls 3 (3 tool calls)']);
    expect(budget.exceeded).toEqual({ limit: 'maxToolCalls', scope: 'run', at: { turns: 0, toolCalls: 3, tokens: 0, costUsd: 0 }, action: 'finalize' });
    expect(budget.report()).toMatchObject({ limits: { maxToolCalls: 3 }, used: { toolCalls: 4 } });
  });

  it('counts a model call while its turn is open, then the turn’s own usage replaces the estimate', () => {
    const { budget, stops } = meter({ maxTokens: 1000 });
    budget.modelCallEnded({ inputTokens: 300, outputTokens: 100 });
    budget.modelCallEnded({ inputTokens: 400, outputTokens: 100 });
    expect(stops).toEqual([]);
    budget.turnCompleted({ inputTokens: 700, outputTokens: 200 });
    expect(budget.report().used).toMatchObject({ turns: 1, tokens: 900 });
    budget.modelCallEnded({ inputTokens: 90, outputTokens: 20 });
    expect(stops).toEqual(['the run reached its budget: maxTokens 1000 (1010 tokens)']);
  });

  it('cost sums carry no floating point noise: model calls, the turn’s correction of them, the shared sum', () => {
    const shared = sharedBudget({ maxCostUsd: 10 }) as SharedBudgetAccount;
    const { budget } = meter({ maxCostUsd: 5 }, { shared });
    budget.modelCallEnded({ costUsd: 0.1 });
    budget.modelCallEnded({ costUsd: 0.2 });
    expect(budget.report().used.costUsd).toBe(0.3);
    budget.turnCompleted({ costUsd: 0.7 });
    budget.modelCallEnded({ costUsd: 0.1 });
    expect(budget.report().used.costUsd).toBe(0.8);
    expect(shared.used.costUsd).toBe(0.8);
  });

  it('a turn without a usage keeps its model calls’ figures; one with none at all is unmetered under a token or cost limit', () => {
    const { budget } = meter({ maxTokens: 10_000, maxCostUsd: 1 });
    budget.modelCallEnded({ inputTokens: 10, costUsd: 0.01 });
    budget.turnCompleted(undefined);
    budget.turnCompleted({ inputTokens: 5 });
    const report = budget.report();
    expect(report.used).toEqual({ turns: 2, toolCalls: 0, tokens: 15, costUsd: 0.01 });
    expect(report.unmetered).toEqual({ costUsd: 1 });
  });

  it('reports only the figures its protocol reports', () => {
    const { budget } = meter({ maxTurns: 5 }, { reports: { turns: true, toolCalls: false, tokens: false, costUsd: false } });
    budget.turnCompleted(undefined);
    expect(budget.report()).toEqual({ limits: { maxTurns: 5 }, used: { turns: 1 } });
  });

  it('a run already ending records no limit', () => {
    const { budget, stops } = meter({ maxTurns: 1 }, { action: undefined });
    budget.turnCompleted(undefined);
    expect(stops).toHaveLength(1);
    expect(budget.exceeded).toBeUndefined();
    expect(budget.judge({ status: 'cancelled', code: 'aborted', error: 'x', fromChild: false }).code).toBe('aborted');
  });

  it('a run that reached a limit and did not end done is budget-exceeded, saying what ended it', () => {
    const { budget } = meter({ maxTurns: 1 });
    budget.turnCompleted(undefined);
    const timedOut = budget.judge({ status: 'cancelled', code: 'finalize-timeout', error: 'finalize did not end the run', fromChild: false });
    expect(timedOut).toEqual({
      status: 'cancelled',
      code: 'budget-exceeded',
      error: 'the run reached its budget: maxTurns 1 (1 turn); then: finalize did not end the run',
      fromChild: false,
    });
    const done = { status: 'done' as const, code: 'child-error' as const, error: '', fromChild: true };
    expect(budget.judge(done)).toBe(done);
  });
});

describe('the shared budget', () => {
  it('sums every member, stops them all at the limit, and tells its watchers', () => {
    const shared = sharedBudget({ maxCostUsd: 1 }) as SharedBudgetAccount;
    const a = meter({}, { shared });
    const b = meter({ maxToolCalls: 100 }, { shared });
    const watched: string[] = [];
    shared.watch((limit) => watched.push(limit));
    a.budget.turnCompleted({ costUsd: 0.6 });
    expect(shared.used.costUsd).toBe(0.6);
    b.budget.modelCallEnded({ costUsd: 0.5 });
    expect(shared.exceeded).toBe('maxCostUsd');
    expect(watched).toEqual(['maxCostUsd']);
    expect(a.stops).toEqual(['the shared budget was spent: maxCostUsd 1 ($1.1000)']);
    expect(b.stops).toEqual(a.stops);
    expect(b.budget.exceeded).toMatchObject({ limit: 'maxCostUsd', scope: 'shared', at: { costUsd: 0.5 }, sharedAt: { costUsd: 1.1 } });
    expect(b.budget.report().sharedLimits).toEqual({ maxCostUsd: 1 });
  });

  it('a member that left no longer hears of it; a member that joins a spent budget never starts', () => {
    const shared = sharedBudget({ maxTurns: 1 }) as SharedBudgetAccount;
    const gone = meter({}, { shared });
    gone.budget.report();
    meter({}, { shared }).budget.turnCompleted(undefined);
    expect(gone.stops).toEqual([]);
    const late = meter({}, { shared });
    expect(late.budget.notStarted()).toBe('the shared budget was spent before the run started: maxTurns 1 (1 turn); it never started');
    expect(late.budget.exceeded).toMatchObject({ scope: 'shared', action: 'not-started', sharedAt: { turns: 1 } });
  });

  it('refuses invalid limits and an empty budget', () => {
    expect(() => sharedBudget({})).toThrow(/at least one limit/);
    expect(() => sharedBudget({ maxCost: 1 } as never)).toThrow(/did you mean maxCostUsd/);
  });
});
