// Public entry of `subvisor/wire`: the pure protocol core (types, codec, sequence numbers, state table).
export * from './constants.js';
export * from './types.js';
export { decode, encode, validate, isSeq, isTooLarge } from './codec.js';
export { createSender, createReceiver, rejectionAck } from './sequence.js';
export type { Sender, Receiver } from './sequence.js';
export { actOnControl, decide, advance, isTerminal, RUN_STATES, INTERNAL_EVENTS } from './state.js';
export { WIRE_EVENT_TYPES, WIRE_CONTROL_TYPES } from './schema.js';
export type { ControlActions, Decision, ControlAction, InternalEvent, RefusedDecision } from './state.js';
export { toUsage, addUsage, totalTokens } from './usage.js';
export type { Usage } from './usage.js';
