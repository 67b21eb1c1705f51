// The types the seam speaks in: events, outcome, budgets, tree limits and the sandbox, the callers' requests, and what a driver reports of the end.
export type * from './events.js';
export type * from './outcome.js';
export type * from './budget.js';
export type * from './tree-limits.js';
export type * from './requests.js';
export type * from './results.js';
