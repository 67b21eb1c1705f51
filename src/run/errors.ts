// The error a control method rejects with when subvisor refuses a control locally (no line is written).
import type { WireControlType } from '../wire/index.js';

/** Which rule refused a control. */
export type ControlRefusalCode = 'empty-text' | 'too-large' | 'invalid' | 'run-ended' | 'queued';

/**
 * Rejection of a control method that subvisor refused without writing a line: empty steer/follow-up
 * text (`empty-text`), a control line of 65536 bytes or more (`too-large`), a control the codec cannot
 * encode (`invalid`), `prompt`/`steer`/`followUp` after the run ended or while it is ending (`run-ended`:
 * `cancel`, `close` and `finalize` resolve an Ack with `runEnded: true` instead), or a control other than `cancel`
 * sent to a pooled run that is still queued and has no child yet (`queued`).
 */
export class ControlRefusedError extends Error {
  override readonly name = 'ControlRefusedError';

  constructor(
    /** Which rule refused it. */
    readonly code: ControlRefusalCode,
    /** The control type that was refused. */
    readonly control: WireControlType,
    message: string,
  ) {
    super(message);
  }
}
