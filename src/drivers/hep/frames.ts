// HEP v1 frames (seed 001): one stdout line parsed into a frame, the header check, and each known frame's required fields.
import type { JsonObject, JsonValue } from '../../wire/index.js';
import type { RunEventDraft, RunEventExtra } from '../../protocol/index.js';
import { putExtra } from '../shared/extra-fields.js';

/** A parsed frame: a JSON object whose `type` is a string. Untrusted: check it with {@link frameErrors}. */
export type HepFrame = JsonObject & { type: string };

/** One stdout line: a frame, or why it is not one. */
export type ParsedLine = { ok: true; frame: HepFrame } | { ok: false; code: 'malformed' | 'invalid'; reason: string };

/** The major HEP version this driver speaks. */
export const HEP_MAJOR = 1;

/** The suffix Fa appends to a bounded payload (tool output, `events=full` arguments): `…(+N chars)`. */
const BOUNDED_SUFFIX = /…\(\+\d+ chars\)$/u;

/** Parses one line; never throws. */
export function parseLine(text: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: 'malformed', reason: `not a JSON line: ${preview(text)}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, code: 'invalid', reason: `a frame must be a JSON object: ${preview(text)}` };
  }
  if (typeof (value as { type?: unknown }).type !== 'string') {
    return { ok: false, code: 'invalid', reason: `a frame needs a string "type": ${preview(text)}` };
  }
  return { ok: true, frame: value as HepFrame };
}

/** Why the first line is not an acceptable header: `not-header` (prose, another frame) or `version-mismatch`. */
export type HeaderProblem = { code: 'not-header' | 'version-mismatch'; reason: string };

/** Checks the first stdout line. Minor versions (`v1.2`) are accepted: HEP v1 only grows. */
export function headerProblem(text: string): HeaderProblem | undefined {
  const parsed = parseLine(text);
  if (!parsed.ok || parsed.frame.type !== 'hep_header') {
    return {
      code: 'not-header',
      reason: `the first stdout line is not a HEP header (is \`--output events\` missing from the command?): ${preview(text)}`,
    };
  }
  const version = parsed.frame['hep'];
  const major = typeof version === 'string' ? /^v(\d+)(?:\.\d+)*$/.exec(version)?.[1] : undefined;
  if (major === undefined || Number(major) !== HEP_MAJOR) {
    return {
      code: 'version-mismatch',
      reason: `the child speaks HEP ${JSON.stringify(version)}; subvisor speaks v${HEP_MAJOR}`,
    };
  }
  return undefined;
}

type FieldKind = 'turn' | 'string' | 'boolean' | 'array' | 'object' | 'number';

/** Required fields of every frame type this driver interprets (optional ones are checked where they are read). */
const REQUIRED: Record<string, Record<string, FieldKind>> = {
  agent_start: { turn_id: 'turn' },
  message_start: { turn_id: 'turn' },
  message_delta: { turn_id: 'turn', delta: 'string' },
  tool_start: { turn_id: 'turn', id: 'string', name: 'string' },
  tool_delta: { turn_id: 'turn', id: 'string', update: 'string' },
  tool_liveness: { turn_id: 'turn', id: 'string', action: 'string' },
  turn_done: { turn_id: 'turn', message: 'string', tool_results: 'array', stop_reason: 'string' },
  turn_error: { turn_id: 'turn', error: 'string' },
  cancelled: { turn_id: 'turn' },
  compaction_start: { turn_id: 'turn' },
  compaction_end: { turn_id: 'turn' },
};

/** One required field's check, compiled once from {@link REQUIRED}. */
interface FieldCheck {
  field: string;
  fits: (value: JsonValue | undefined) => boolean;
  error: string;
}

const FITS: Record<FieldKind, (value: JsonValue | undefined) => boolean> = {
  turn: (value) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0,
  string: (value) => typeof value === 'string',
  boolean: (value) => typeof value === 'boolean',
  number: (value) => typeof value === 'number',
  array: (value) => Array.isArray(value),
  object: (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
};

/** The checks of each known frame type, compiled once: no table is walked per line. */
const CHECKS: ReadonlyMap<string, readonly FieldCheck[]> = new Map(
  Object.entries(REQUIRED).map(([type, fields]) => [
    type,
    Object.entries(fields).map(([field, kind]) => ({ field, fits: FITS[kind], error: `${type}.${field} must be ${describe(kind)}` })),
  ]),
);

const NO_ERRORS: readonly string[] = Object.freeze([]);

/** The frame types this driver maps to run events; any other type is passed through raw. */
export function isKnownFrame(type: string): boolean {
  return CHECKS.has(type);
}

/** Schema errors of a known frame, one per bad field (empty when it is fine). */
export function frameErrors(frame: HepFrame): readonly string[] {
  let errors: string[] | undefined;
  for (const check of CHECKS.get(frame.type) ?? []) {
    if (!check.fits(frame[check.field])) (errors ??= []).push(check.error);
  }
  if (frame.type === 'turn_done' && frame['usage'] !== undefined && !FITS.object(frame['usage'])) {
    (errors ??= []).push('turn_done.usage must be an object');
  }
  return errors ?? NO_ERRORS;
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

function describe(kind: FieldKind): string {
  return kind === 'turn' ? 'an integer >= 0' : kind === 'array' || kind === 'object' ? `an ${kind}` : `a ${kind}`;
}

/** A short, single-line excerpt of an untrusted line for messages. */
function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(flat.length > 80 ? `${flat.slice(0, 80)}…` : flat);
}
