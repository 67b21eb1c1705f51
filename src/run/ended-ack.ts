// The Ack that cancel/close/finalize resolve to on a run that has ended or is ending (they never reject for that).
import type { WireControlType } from '../wire/index.js';
import type { Ack } from './handle.js';

/** Controls that ask the run to end: on a run that has ended or is ending they resolve instead of rejecting. */
export function isEndingControl(type: WireControlType): type is 'cancel' | 'close' | 'finalize' {
  return type === 'cancel' || type === 'close' || type === 'finalize';
}

/** The Ack of an ending control called when the run had already ended or was ending: nothing was written. */
export function runEndedAck(type: WireControlType, why: string): Ack {
  return { status: 'unanswered', seq: 0, runEnded: true, reason: `${type} not sent: ${why}` };
}
