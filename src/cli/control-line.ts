// Parses one line of a --controls source (short form or envelope-less wire JSON) into a control request.

/** A control the user asked for; supervise adds the envelope (v, seq, run) when it sends it. */
export type ControlRequest =
  | { type: 'prompt' | 'steer' | 'follow-up'; text: string }
  | { type: 'finalize'; note?: string }
  | { type: 'cancel' }
  | { type: 'close' };

export type ParsedControlLine =
  | { kind: 'skip' }
  | { kind: 'control'; control: ControlRequest }
  | { kind: 'invalid'; reason: string };

const TEXT_TYPES = new Set(['prompt', 'steer', 'follow-up']);
const ALL_TYPES = ['prompt', 'steer', 'follow-up', 'finalize', 'cancel', 'close'];
const ENVELOPE_KEYS = ['v', 'seq', 'run'];

const FORMS =
  'write one of: steer TEXT, follow-up TEXT, prompt TEXT, finalize [NOTE], cancel, close, or JSON like {"type":"steer","text":"..."}';

function fromParts(type: string, text: string | undefined, note: string | undefined): ParsedControlLine {
  if (TEXT_TYPES.has(type)) {
    if (text === undefined || text.length === 0) return { kind: 'invalid', reason: `${type} needs a non-empty text` };
    return { kind: 'control', control: { type: type as 'prompt' | 'steer' | 'follow-up', text } };
  }
  if (type === 'finalize') {
    return { kind: 'control', control: note === undefined || note.length === 0 ? { type } : { type, note } };
  }
  if (type === 'cancel' || type === 'close') return { kind: 'control', control: { type } };
  return { kind: 'invalid', reason: `unknown control "${type}"; ${FORMS}` };
}

function parseJsonLine(line: string): ParsedControlLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { kind: 'invalid', reason: `not valid JSON (${(error as Error).message})` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'invalid', reason: 'a JSON control must be an object' };
  }
  const fields = value as Record<string, unknown>;
  const type = fields.type;
  if (typeof type !== 'string') return { kind: 'invalid', reason: 'a JSON control needs a string "type"' };
  if (!ALL_TYPES.includes(type)) return { kind: 'invalid', reason: `unknown control type "${type}"; ${FORMS}` };
  const envelope = ENVELOPE_KEYS.filter((key) => key in fields);
  if (envelope.length > 0) {
    return { kind: 'invalid', reason: `leave out ${envelope.join(', ')}: supervise adds the envelope itself` };
  }
  const allowed = TEXT_TYPES.has(type) ? ['type', 'text'] : type === 'finalize' ? ['type', 'note'] : ['type'];
  const unknown = Object.keys(fields).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) {
    return { kind: 'invalid', reason: `${type} takes only ${allowed.join(', ')}; unexpected ${unknown.join(', ')}` };
  }
  if ('text' in fields && typeof fields.text !== 'string') return { kind: 'invalid', reason: '"text" must be a string' };
  if ('note' in fields && typeof fields.note !== 'string') return { kind: 'invalid', reason: '"note" must be a string' };
  return fromParts(type, fields.text as string | undefined, fields.note as string | undefined);
}

/** Blank lines and lines starting with '#' are skipped; everything else is a control or invalid. */
export function parseControlLine(rawLine: string): ParsedControlLine {
  const line = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
  const trimmed = line.trim();
  if (trimmed.length === 0 || trimmed.startsWith('#')) return { kind: 'skip' };
  if (trimmed.startsWith('{')) return parseJsonLine(trimmed);
  const match = /^(\S+)(?:\s+([\s\S]*))?$/.exec(trimmed);
  const word = match?.[1] ?? '';
  const rest = match?.[2];
  if ((word === 'cancel' || word === 'close') && rest !== undefined) {
    return { kind: 'invalid', reason: `${word} takes no text` };
  }
  return fromParts(word, rest, rest);
}

/** A short human description of a control for stderr notes. */
export function describeControl(control: ControlRequest): string {
  const shown = (text: string): string => JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
  switch (control.type) {
    case 'prompt':
    case 'steer':
    case 'follow-up':
      return `${control.type} ${shown(control.text)}`;
    case 'finalize':
      return control.note === undefined ? 'finalize' : `finalize ${shown(control.note)}`;
    default:
      return control.type;
  }
}
