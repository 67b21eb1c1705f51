// The types the seam speaks in: events, outcome, budgets, the callers' requests, and what a driver reports of the end.
export type * from './events.js';
export type * from './outcome.js';
export type * from './budget.js';
export type * from './requests.js';
export type * from './results.js';
