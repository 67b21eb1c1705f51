// Public entry of subvisor/agent: the Agent Handler contract over supervised runs (asAgent, collect, AgentFailure).
export { asAgent } from './as-agent.js';
export { SESSION_ENV } from './session-env.js';
export type { AgentOptions, SupervisedAgent } from './as-agent.js';
export { collect, AgentFailure } from './collect.js';
export type { Collected } from './collect.js';
export { isTerminalEvent } from './types.js';
export { isKnownAgentEvent, otherAgentEvent } from './known-events.js';
export type * from './types.js';
export type { AgentFailureCode } from './terminal.js';
