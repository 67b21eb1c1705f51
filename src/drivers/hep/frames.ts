// HEP v1 frames (seed 001): the header check, each known frame's required fields, Fa's bounds, and the frames' extras camelCased.
import type { RunEventDraft, RunEventExtra } from '../../protocol/index.js';
import { putExtra } from '../shared/extra-fields.js';
import { FieldRules, required } from '../shared/field-rules.js';
import { decodeTypedFrame } from '../shared/json-line.js';
import type { TypedFrame } from '../shared/json-line.js';

/** A decoded frame: a JSON object whose `type` is a string. Untrusted: check it with {@link frameErrors}. */
export type HepFrame = TypedFrame;

/** The major HEP version this driver speaks. */
export const HEP_MAJOR = 1;

/** The suffix Fa appends to a bounded payload (tool output, `events=full` arguments): `…(+N chars)`. */
const BOUNDED_SUFFIX = /…\(\+\d+ chars\)$/u;

/** Why the first line is not an acceptable header: `not-header` (prose, another frame) or `version-mismatch`. */
export type HeaderProblem = { code: 'not-header' | 'version-mismatch'; reason: string };

/** Checks the first stdout line. Minor versions (`v1.2`) are accepted: HEP v1 only grows. */
export function headerProblem(text: string): HeaderProblem | undefined {
  const frame = decodeTypedFrame(text, 'the first stdout line').value;
  if (frame?.type !== 'hep_header') {
    return {
      code: 'not-header',
      reason: `the first stdout line is not a HEP header (is \`--output events\` missing from the command?): ${preview(text)}`,
    };
  }
  const version = frame['hep'];
  const major = typeof version === 'string' ? /^v(\d+)(?:\.\d+)*$/.exec(version)?.[1] : undefined;
  if (major === undefined || Number(major) !== HEP_MAJOR) {
    return {
      code: 'version-mismatch',
      reason: `the child speaks HEP ${JSON.stringify(version)}; subvisor speaks v${HEP_MAJOR}`,
    };
  }
  return undefined;
}

/** The fields every frame type this driver interprets must have (`usage` may be absent); a frame that fails any is rejected whole. */
const RULES = new FieldRules(
  {
    agent_start: { turn_id: required('natural') },
    message_start: { turn_id: required('natural') },
    message_delta: { turn_id: required('natural'), delta: required('string') },
    tool_start: { turn_id: required('natural'), id: required('string'), name: required('string') },
    tool_delta: { turn_id: required('natural'), id: required('string'), update: required('string') },
    tool_liveness: { turn_id: required('natural'), id: required('string'), action: required('string') },
    turn_done: { turn_id: required('natural'), message: required('string'), tool_results: required('array'), stop_reason: required('string'), usage: { kind: 'object', essential: true } },
    turn_error: { turn_id: required('natural'), error: required('string') },
    cancelled: { turn_id: required('natural') },
    compaction_start: { turn_id: required('natural') },
    compaction_end: { turn_id: required('natural') },
  },
  (type) => `${type}.`,
);

const NO_ERRORS: readonly string[] = Object.freeze([]);

/** The frame types this driver maps to run events; any other type is passed through raw. */
export function isKnownFrame(type: string): boolean {
  return RULES.has(type);
}

/** Schema errors of a known frame, one per bad field (empty when it is fine); the bad fields are removed. */
export function frameErrors(frame: HepFrame): readonly string[] {
  return RULES.check(frame, frame.type).errors ?? NO_ERRORS;
}

/** True when Fa cut this text to its bounds (`…(+N chars)`). */
export function isBounded(text: unknown): boolean {
  return typeof text === 'string' && BOUNDED_SUFFIX.test(text);
}

/**
 * Puts the fields of `frame` not in `known` (nor its `type`) under `event.extra`, camelCased (unknown
 * fields are delivered, not dropped, and never clobber a field of the event), and returns `event`.
 * A snake_case key whose camelCase name the frame also has as such keeps its own spelling.
 */
export function addExtras<Event extends RunEventDraft>(event: Event, frame: HepFrame, known: readonly string[]): Event {
  let extra: RunEventExtra | undefined;
  // for...in over a JSON.parse result sees exactly its own keys, without the array Object.keys makes.
  for (const key in frame) {
    if (key === 'type' || known.includes(key)) continue;
    let name = key.includes('_') ? camelOfSnake(key) : key;
    if (name !== key && Object.hasOwn(frame, name)) name = key;
    putExtra((extra ??= {}), name, frame[key]!);
  }
  if (extra !== undefined) event.extra = extra;
  return event;
}

/**
 * `tokens_freed` -> `tokensFreed`. Only underscores after a letter or digit join words: leading ones
 * stay, so `_private` and `__proto__` keep their spelling (and `__proto__` stays data, see putExtra).
 */
function camelOfSnake(key: string): string {
  return key.replace(/(?<=[^_])_+([^_])/g, (_, letter: string) => letter.toUpperCase());
}

/** A short, single-line excerpt of an untrusted line for messages. */
function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(flat.length > 80 ? `${flat.slice(0, 80)}…` : flat);
}
