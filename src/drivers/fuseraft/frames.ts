// Reads one fuseraft frame (a stdout line, or a serve message): JSON parsing, the fields the drivers rely on, and typed rejections.
import type { JsonValue } from '../../wire/index.js';
import { isKind, isObject, withArticle } from '../shared/json-kinds.js';
import type { JsonKind } from '../shared/json-kinds.js';

/** The live-session protocol version this driver speaks (seed 002, "Versioning"). */
export const FUSERAFT_PROTOCOL_VERSION = 1;

/** fuseraft cuts `tool_result.output` to this many characters (UTF-16 code units, as .NET counts them). */
export const TOOL_OUTPUT_CAP = 100_000;

/** A decoded frame: a JSON object with a string `type`; every other field as sent (untrusted). */
export interface Frame {
  type: string;
  [field: string]: JsonValue;
}

/** Why a line did not become a (fully) usable frame. Codes are the wire codec's, so callers handle one set. */
export interface LineRejection {
  /** `malformed`: not JSON (noise); `invalid`: JSON but no object with a string `type`; `invalid-payload`: a field the driver reads has the wrong type; `too-large`: longer than the line bound; `out-of-order`: a frame where the protocol allows none. */
  code: 'malformed' | 'invalid' | 'invalid-payload' | 'too-large' | 'out-of-order' | 'version-mismatch';
  reason: string;
  /** The frame's `type`, when readable (for an overlong line: sniffed from its first bytes). */
  lineType?: string;
  /** One entry per field that failed its check. */
  errors?: string[];
}

/**
 * The result of reading one line. `frame` is set when the line is a JSON object with a string
 * `type`; fields that failed their check are removed from it (and listed in `rejection.errors`), so
 * code reading a frame never sees a wrong type. `usable` is false when a field the frame's meaning
 * depends on failed: such a frame is reported and not mapped (approvals and questions are still
 * answered, with a denial or a skip).
 */
export type ReadLine =
  | { frame: Frame; usable: boolean; rejection?: LineRejection }
  | { frame?: undefined; usable: false; rejection: LineRejection };

type Kind = JsonKind | 'any';

/** What the driver expects of one field. Nullable fields accept null; optional ones may be absent. */
interface FieldRule {
  kind: Kind;
  required?: boolean;
  nullable?: boolean;
  oneOf?: readonly string[];
}

const req = (kind: Kind, extra: Omit<FieldRule, 'kind' | 'required'> = {}): FieldRule => ({ kind, required: true, ...extra });
const opt = (kind: Kind): FieldRule => ({ kind, nullable: true });

/**
 * The fields the driver reads, per frame type (both transports). Everything else passes through
 * unchecked: "clients must ignore fields and event types they don't recognize" (seed 002).
 */
const RULES: Readonly<Record<string, Readonly<Record<string, FieldRule>>>> = {
  ready: { protocolVersion: req('any') },
  turn_start: { text: opt('string') },
  token: { text: req('string') },
  thinking: { text: req('string') },
  tool_call: { id: opt('string'), name: req('string'), summary: opt('string'), agent: opt('string') },
  tool_result: { id: opt('string'), name: req('string'), ok: req('boolean'), output: opt('string') },
  message_end: {
    turnIndex: opt('integer'),
    toolCalls: opt('array'),
    inputTokens: opt('number'),
    outputTokens: opt('number'),
    cachedInputTokens: opt('number'),
    cumulativeCacheReadTokens: opt('number'),
  },
  retrying: { attempt: opt('integer'), max: opt('integer') },
  interjection: { status: req('string', { oneOf: ['joined', 'carried', 'dropped'] }), count: opt('integer') },
  text: { text: opt('string') },
  info: { text: opt('string') },
  warning: { text: opt('string') },
  error: { text: opt('string') },
  approval_request: { kind: req('string') },
  question: { question: req('string'), options: opt('array'), allowOther: opt('boolean') },
  agent_starting: { agent: opt('string') },
  tool_calling: { agent: opt('string'), tool: req('string'), argsSummary: opt('string') },
  agent_message: { message: req('object'), elapsedMs: opt('number') },
  result: {
    sessionId: opt('string'),
    succeeded: opt('boolean'),
    errorMessage: opt('string'),
    exitCode: opt('integer'),
    turns: opt('integer'),
    inputTokens: opt('number'),
    outputTokens: opt('number'),
    lastAgent: opt('string'),
    lastMessage: opt('string'),
  },
  // fuseraft serve (socket and WebSocket).
  hello: {
    protocolVersion: req('any'),
    clientId: opt('string'),
    readOnly: opt('boolean'),
    inFlight: opt('object'),
    pendingResults: opt('array'),
  },
  queued: { sessionId: req('string'), position: opt('integer') },
  task_resumed: { sessionId: opt('string'), task: opt('string') },
};

/** The fields of `agent_message.message` (seed 002's AgentMessage) the bridge driver reads. */
const AGENT_MESSAGE_RULES: Readonly<Record<string, FieldRule>> = {
  agentName: req('string'),
  role: opt('string'),
  content: req('string'),
  inputTokens: opt('number'),
  outputTokens: opt('number'),
  isCompactionSummary: opt('boolean'),
};

/** Reads one stdout line (without its newline). Never throws. */
export function readLine(line: string, lineNumber: number): ReadLine {
  // A Windows build ends lines with \r\n; the \r is not part of the JSON.
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Slash-command output can leak onto stdout as plain text (seed 002): noise, reported, not fatal.
    // The text itself is not repeated: it is the child's output, kept in the output tail.
    const what = text.trim() === '' ? 'an empty line' : `not JSON (${text.length} characters)`;
    return { usable: false, rejection: { code: 'malformed', reason: `stdout line ${lineNumber} is ${what}` } };
  }
  if (!isObject(value) || typeof value['type'] !== 'string') {
    return {
      usable: false,
      rejection: { code: 'invalid', reason: `stdout line ${lineNumber} is JSON but not an object with a string type` },
    };
  }
  const frame = value as Frame;
  const errors = frameErrors(frame);
  return errors === undefined ? { frame, usable: true } : withRejection(frame, errors, `stdout line ${lineNumber}`);
}

/**
 * Checks the fields the drivers read of a decoded frame (any transport: `where` names it in the
 * reason, e.g. `stdout line 3` or `message 3`). Fields that fail are removed from `frame`.
 */
export function checkFrame(frame: Frame, where: string): ReadLine {
  const errors = frameErrors(frame);
  return errors === undefined ? { frame, usable: true } : withRejection(frame, errors, where);
}

function withRejection(frame: Frame, errors: FieldError[], where: string): ReadLine {
  const usable = !errors.some((error) => error.required);
  return {
    frame,
    usable,
    rejection: {
      code: 'invalid-payload',
      reason: `${where}: ${frame.type} ${usable ? 'has' : 'lacks'} ${usable ? 'invalid optional fields (ignored)' : 'a valid required field'}`,
      lineType: frame.type,
      errors: errors.map((error) => error.message),
    },
  };
}

/** The rejection of a line longer than the bound; its type is sniffed from the first bytes when they show one. */
export function overlongLine(prefix: string, lineNumber: number, limit: number): LineRejection {
  const type = /^\s*\{\s*"type"\s*:\s*"([A-Za-z0-9_]{1,64})"/.exec(prefix)?.[1];
  const rejection: LineRejection = {
    code: 'too-large',
    reason: `stdout line ${lineNumber} is longer than the ${limit}-byte line bound (maxFrameBytes); skipped`,
  };
  if (type !== undefined) rejection.lineType = type;
  return rejection;
}

interface FieldError {
  message: string;
  required: boolean;
}

/** One field's rule and its name. */
interface NamedRule extends FieldRule {
  name: string;
}

function compile(rules: Readonly<Record<string, FieldRule>>): readonly NamedRule[] {
  return Object.entries(rules).map(([name, rule]) => ({ name, ...rule }));
}

/** {@link RULES} as arrays, built once: a frame's check walks no table and allocates nothing when it passes. */
const COMPILED_RULES: ReadonlyMap<string, readonly NamedRule[]> = new Map(
  Object.entries(RULES).map(([type, rules]) => [type, compile(rules)]),
);
const COMPILED_AGENT_MESSAGE_RULES = compile(AGENT_MESSAGE_RULES);

/** The frame's failed fields (removed from it), or undefined when every checked field is fine. */
function frameErrors(frame: Frame): FieldError[] | undefined {
  const errors = checkFields(frame, COMPILED_RULES.get(frame.type), '', undefined);
  const message = frame['message'];
  if (frame.type !== 'agent_message' || !isObject(message)) return errors;
  return checkFields(message, COMPILED_AGENT_MESSAGE_RULES, 'message.', errors);
}

/** Checks `target`'s fields against `rules`, deleting each field that fails so readers never see a wrong type. */
function checkFields(
  target: Record<string, unknown>,
  rules: readonly NamedRule[] | undefined,
  path: string,
  errors: FieldError[] | undefined,
): FieldError[] | undefined {
  if (rules === undefined) return errors;
  for (const rule of rules) {
    const present = Object.hasOwn(target, rule.name);
    const problem = present ? mismatch(target[rule.name], rule) : rule.required === true ? 'is missing' : undefined;
    if (problem === undefined) continue;
    (errors ??= []).push({ message: `${path}${rule.name} ${problem}`, required: rule.required === true });
    if (present) delete target[rule.name];
  }
  return errors;
}

function mismatch(value: unknown, rule: FieldRule): string | undefined {
  if (value === null) return rule.nullable === true || rule.kind === 'any' ? undefined : 'is null';
  if (fits(value, rule)) return undefined;
  return rule.oneOf === undefined ? `is not ${withArticle(rule.kind)}` : `is not one of ${rule.oneOf.join(', ')}`;
}

function fits(value: unknown, rule: FieldRule): boolean {
  if (rule.kind === 'any') return true;
  return isKind(value, rule.kind) && (rule.oneOf === undefined || rule.oneOf.includes(value as string));
}


