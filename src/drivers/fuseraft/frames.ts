// Reads one fuseraft frame (a stdout line, or a serve message) with the shared decoder: the fields the drivers rely on, checked by the shared field rules.
import { checkTable, compileTable, fieldRejection, FieldRules, optional, required } from '../shared/field-rules.js';
import { isObject } from '../shared/json-kinds.js';
import { decodeTypedFrame } from '../shared/json-line.js';
import type { FrameRejection, TypedFrame } from '../shared/json-line.js';

/** The live-session protocol version this driver speaks (seed 002, "Versioning"). */
export const FUSERAFT_PROTOCOL_VERSION = 1;

/** fuseraft cuts `tool_result.output` to this many characters (UTF-16 code units, as .NET counts them). */
export const TOOL_OUTPUT_CAP = 100_000;

/** A decoded frame: a JSON object with a string `type`; every other field as sent (untrusted). */
export type Frame = TypedFrame;

/**
 * The result of reading one line. `frame` is set when the line is a JSON object with a string
 * `type`; fields that failed their check are removed from it (and listed in `rejection.errors`), so
 * code reading a frame never sees a wrong type. `usable` is false when a field the frame's meaning
 * depends on failed: such a frame is reported and not mapped (approvals and questions are still
 * answered, with a denial or a skip).
 */
export type ReadLine =
  | { frame: Frame; usable: boolean; rejection?: FrameRejection }
  | { frame?: undefined; usable: false; rejection: FrameRejection };

/**
 * The fields the driver reads, per frame type (both transports). Everything else passes through
 * unchecked: "clients must ignore fields and event types they don't recognize" (seed 002). Counts are
 * nullable (a provider that reports none).
 */
const RULES = new FieldRules({
  ready: { protocolVersion: required('any') },
  turn_start: { text: optional('string') },
  token: { text: required('string') },
  thinking: { text: required('string') },
  tool_call: { id: optional('string'), name: required('string'), summary: optional('string'), agent: optional('string') },
  tool_result: { id: optional('string'), name: required('string'), ok: required('boolean'), output: optional('string') },
  message_end: {
    turnIndex: optional('integer'),
    toolCalls: optional('array'),
    inputTokens: optional('number'),
    outputTokens: optional('number'),
    cachedInputTokens: optional('number'),
    cumulativeCacheReadTokens: optional('number'),
  },
  retrying: { attempt: optional('integer'), max: optional('integer') },
  interjection: { status: required('string', { oneOf: ['joined', 'carried', 'dropped'] }), count: optional('integer') },
  text: { text: optional('string') },
  info: { text: optional('string') },
  warning: { text: optional('string') },
  error: { text: optional('string') },
  approval_request: { kind: required('string') },
  question: { question: required('string'), options: optional('array'), allowOther: optional('boolean') },
  agent_starting: { agent: optional('string') },
  tool_calling: { agent: optional('string'), tool: required('string'), argsSummary: optional('string') },
  agent_message: { message: required('object'), elapsedMs: optional('number') },
  result: {
    sessionId: optional('string'),
    succeeded: optional('boolean'),
    errorMessage: optional('string'),
    exitCode: optional('integer'),
    turns: optional('integer'),
    inputTokens: optional('number'),
    outputTokens: optional('number'),
    lastAgent: optional('string'),
    lastMessage: optional('string'),
  },
  // fuseraft serve (socket and WebSocket).
  hello: {
    protocolVersion: required('any'),
    clientId: optional('string'),
    readOnly: optional('boolean'),
    inFlight: optional('object'),
    pendingResults: optional('array'),
  },
  queued: { sessionId: required('string'), position: optional('integer') },
  task_resumed: { sessionId: optional('string'), task: optional('string') },
});

/** The fields of `agent_message.message` (seed 002's AgentMessage) the bridge driver reads. */
const AGENT_MESSAGE_RULES = compileTable(
  {
    agentName: required('string'),
    role: optional('string'),
    content: required('string'),
    inputTokens: optional('number'),
    outputTokens: optional('number'),
    isCompactionSummary: optional('boolean'),
  },
  'message.',
);

/** Reads one stdout line (without its newline), the `lineNumber`th. Never throws. */
export function readLine(line: string, lineNumber: number): ReadLine {
  // Slash-command output can leak onto stdout as plain text (seed 002): noise, reported, not fatal.
  const where = `stdout line ${lineNumber}`;
  const decoded = decodeTypedFrame(line, where);
  return decoded.rejection !== undefined ? { usable: false, rejection: decoded.rejection } : checkFrame(decoded.value, where);
}

/**
 * Checks the fields the drivers read of a decoded frame (any transport: `where` names it in the
 * reason, e.g. `stdout line 3` or `message 3`). Fields that fail are removed from `frame`.
 */
export function checkFrame(frame: Frame, where: string): ReadLine {
  const check = RULES.check(frame, frame.type);
  const message = frame['message'];
  if (frame.type === 'agent_message' && isObject(message)) checkTable(message, AGENT_MESSAGE_RULES, check);
  if (check.errors === undefined) return { frame, usable: true };
  return { frame, usable: check.usable, rejection: fieldRejection(where, frame.type, check.errors) };
}
