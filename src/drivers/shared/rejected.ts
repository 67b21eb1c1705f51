// The one builder of `rejected` events: a driver's typed rejection (and whether the run can go on) to the core's RejectedEvent.
import type { RejectedEvent } from '../../protocol/index.js';
import type { FrameRejection } from './json-line.js';

/** The `rejected` event of `rejection`; `seq`: the line's number, for a protocol whose lines number its events (HEP). */
export function rejectedEvent(rejection: FrameRejection, fatal: boolean, seq?: number): RejectedEvent {
  const event: RejectedEvent = { type: 'rejected', code: rejection.code, reason: rejection.reason, fatal };
  if (seq !== undefined) event.seq = seq;
  if (rejection.lineType !== undefined) event.lineType = rejection.lineType;
  if (rejection.errors !== undefined) event.errors = rejection.errors;
  return event;
}
