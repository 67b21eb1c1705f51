// The size limit on an answer shipped back through Redis: cut at a UTF-8 character boundary and marked truncated.
import type { Outcome } from '../api/types.js';
import { utf8Prefix } from '../text/utf8.js';

export const DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024;

/** The outcome with `finalText` cut to `maxBytes` UTF-8 bytes (whole characters), noting the cut in `truncationNote`. */
export function capAnswer(outcome: Outcome, maxBytes: number): Outcome {
  const text = outcome.finalText;
  if (text === undefined) return outcome;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return outcome;
  const finalText = utf8Prefix(text, maxBytes);
  const end = Buffer.byteLength(finalText);
  const note = `the answer was cut to ${end} of its ${bytes} bytes to be shipped through the queue (the worker's maxAnswerBytes is ${maxBytes})`;
  return {
    ...outcome,
    finalText,
    truncated: true,
    truncationNote: outcome.truncationNote === undefined ? note : `${outcome.truncationNote}; ${note}`,
  };
}
