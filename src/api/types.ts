// Public types of a supervised run, one file per concern: options, events, outcome, the handle.
export type * from './options.js';
export type * from '../protocol/events.js';
export type * from '../protocol/outcome.js';
export type * from '../protocol/budget.js';
export type * from '../protocol/tree-limits.js';
export type { JsonSchema } from '../protocol/resolved-options.js';
export type * from '../run/handle.js';
export type { RunTracing } from '../observe/types.js';
