// Public entry of subvisor/child: serveAgent turns any Agent Handler into a Fen wire child program.
export { serveAgent } from './serve-agent.js';
export type { ServeAgentOptions, ServeResult } from './serve-agent.js';
export { ChildConfigError } from './config.js';
export { isKnownAgentEvent, otherAgentEvent } from '../agent/known-events.js';
export type * from '../agent/types.js';
