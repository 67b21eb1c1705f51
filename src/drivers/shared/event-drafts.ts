// Event drafts from any driver's frames: a RunEvent before its envelope, unknown fields kept, a frame with no counterpart as `info`.
import type { RunEventDraft, RunEventDraftOf, RunEventExtra } from '../../protocol/index.js';
import { putExtra } from './extra-fields.js';
import { stringField } from './json-kinds.js';
import type { TypedFrame } from './json-line.js';

/** A RunEvent without its envelope (`v`, `seq`, `run`), which whoever publishes it adds. */
export type EventDraft = RunEventDraft;


/**
 * Puts the frame's fields the mapping did not consume (`used`, and the frame's `type`) under the
 * draft's `extra`, as sent: unknown fields pass through, and never clobber a field of the draft.
 */
export function withExtras<D extends EventDraft>(draft: D, frame: TypedFrame, used: readonly string[]): D {
  let extra: RunEventExtra | undefined;
  // for...in over a JSON.parse result sees exactly its own keys, without the array Object.keys makes.
  for (const key in frame) {
    if (key === 'type' || used.includes(key)) continue;
    putExtra((extra ??= {}), key, frame[key]!);
  }
  if (extra !== undefined) draft.extra = extra;
  return draft;
}

/**
 * A frame with no RunEvent of its own (status, plan, file_changed, title, an unknown type...): an
 * `info` event carrying `nativeType`, with every other field of the frame under `extra`. `text`/`info`/`warning` frames
 * put their text in `summary` too.
 */
export function passthrough(frame: TypedFrame, summary?: string): RunEventDraftOf<'info'> {
  const draft: RunEventDraftOf<'info'> = { type: 'info', nativeType: frame.type };
  const text = summary ?? (['text', 'info', 'warning'].includes(frame.type) ? stringField(frame, 'text') : undefined);
  if (text !== undefined) draft.summary = text;
  return withExtras(draft, frame, []);
}
