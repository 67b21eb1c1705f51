// Public types of a supervised run, one file per concern: options, events, outcome, the handle.
export type * from './options.js';
export type * from './events.js';
export type * from './outcome.js';
export type * from './handle.js';
