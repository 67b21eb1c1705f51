// Maps fuseraft frames to subvisor's RunEvent shapes (before the envelope), keeping unknown fields and types.
import { toUsage } from '../../wire/index.js';
import type { JsonObject, JsonValue, Usage } from '../../wire/index.js';
import type { RunEventType } from '../../run/types/index.js';
import { countField, stringField, TOOL_OUTPUT_CAP } from './frames.js';
import type { Frame } from './frames.js';

/** A RunEvent without its envelope (`v`, `seq`, `run`), which whoever publishes it adds. */
export interface EventDraft {
  type: RunEventType;
  [field: string]: unknown;
}

/** Envelope keys and `type`: a frame's field of that name must not overwrite them. */
const RESERVED = new Set(['type', 'v', 'seq', 'run']);

/** The frame fields a mapping reads itself (hoisted: no array per event). */
const TEXT: readonly string[] = ['text'];
const TOOL_CALL_FIELDS: readonly string[] = ['id', 'name', 'summary', 'args', 'agent'];
const TOOL_RESULT_FIELDS: readonly string[] = ['id', 'name', 'ok', 'output'];
const TOOL_CALLING_FIELDS: readonly string[] = ['tool', 'agent', 'argsSummary'];
/** Frame types whose `text` is also the info event's summary. */
const SUMMARY_TYPES: readonly string[] = ['text', 'info', 'warning'];

/**
 * Adds the frame's fields the mapping did not consume (`used`) to `draft`, as sent: unknown fields
 * pass through. A field whose name the draft already has (or an envelope key) is kept under
 * `extraFields` instead of overwriting it.
 */
export function withExtras(draft: EventDraft, frame: Frame, used: readonly string[]): EventDraft {
  let collided: JsonObject | undefined;
  // for...in over a JSON.parse result sees exactly its own keys, without the array Object.keys makes.
  for (const key in frame) {
    if (key === 'type' || used.includes(key)) continue;
    if (RESERVED.has(key) || Object.hasOwn(draft, key)) {
      collided ??= {};
      define(collided, key, frame[key]!);
    } else {
      define(draft, key, frame[key]!);
    }
  }
  if (collided !== undefined) draft['extraFields'] = collided;
  return draft;
}

/** Own data property even for `__proto__` (which a plain assignment would turn into a prototype). */
function define(target: object, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else (target as Record<string, unknown>)[key] = value;
}

/**
 * A frame with no RunEvent of its own (status, plan, file_changed, title, an unknown type...): an
 * `info` event carrying `nativeType` and every field of the frame. `text`/`info`/`warning` frames
 * put their text in `summary` too.
 */
export function passthrough(frame: Frame, summary?: string): EventDraft {
  const draft: EventDraft = { type: 'info', nativeType: frame.type };
  const text = summary ?? (SUMMARY_TYPES.includes(frame.type) ? stringField(frame, 'text') : undefined);
  if (text !== undefined) draft['summary'] = text;
  return withExtras(draft, frame, []);
}

/** The display frames of `repl --vscode` that map to one RunEvent each; undefined for any other type. */
export function displayDraft(frame: Frame): EventDraft | undefined {
  switch (frame.type) {
    case 'token':
      return withExtras({ type: 'assistant-text-delta', delta: frame['text'] }, frame, TEXT);
    case 'thinking':
      return withExtras({ type: 'assistant-thinking-delta', delta: frame['text'] }, frame, TEXT);
    case 'tool_call': {
      const draft: EventDraft = { type: 'tool-call', name: frame['name'] };
      copyDefined(draft, frame, { id: 'id', summary: 'summary', args: 'arguments', agent: 'agent' });
      return withExtras(draft, frame, TOOL_CALL_FIELDS);
    }
    case 'tool_result': {
      const draft: EventDraft = { type: 'tool-result', name: frame['name'], isError: frame['ok'] !== true };
      const id = stringField(frame, 'id');
      if (id !== undefined) {
        draft['id'] = id;
        draft['toolCallId'] = id;
      }
      const output = frame['output'];
      if (output !== undefined) draft['result'] = output;
      // fuseraft cuts the output at its cap without saying so: at the cap, assume it was cut.
      if (typeof output === 'string' && output.length >= TOOL_OUTPUT_CAP) draft['transportTruncated'] = true;
      return withExtras(draft, frame, TOOL_RESULT_FIELDS);
    }
    case 'retrying': {
      const attempt = countField(frame, 'attempt');
      const max = countField(frame, 'max');
      const summary = `the model stream dropped; retrying${attempt === undefined ? '' : ` (attempt ${attempt}${max === undefined ? '' : ` of ${max}`})`}`;
      return passthrough(frame, summary);
    }
    default:
      return undefined;
  }
}

/** The display frames of `run --bridge` that map to one RunEvent each; undefined for any other type. */
export function bridgeDisplayDraft(frame: Frame): EventDraft | undefined {
  switch (frame.type) {
    case 'tool_calling': {
      const draft: EventDraft = { type: 'tool-call', name: frame['tool'] };
      copyDefined(draft, frame, { agent: 'agent', argsSummary: 'summary' });
      return withExtras(draft, frame, TOOL_CALLING_FIELDS);
    }
    case 'token_budget_warning': {
      const agent = stringField(frame, 'agent');
      return passthrough(frame, `${agent ?? 'an agent'} is near its token budget`);
    }
    default:
      return undefined;
  }
}

/** Token usage of a frame (message_end, an AgentMessage, result): its counts that are present and not null. */
export function usageOf(source: JsonObject): Usage | undefined {
  const counts: JsonObject = {};
  for (const key of ['inputTokens', 'outputTokens', 'cachedInputTokens']) {
    const value = countField(source, key);
    if (value !== undefined) counts[key] = value;
  }
  return Object.keys(counts).length === 0 ? undefined : toUsage(counts);
}

/** Copies the frame fields named in `names` (frame key -> draft key) that are present and not null. */
function copyDefined(draft: EventDraft, frame: Frame, names: Readonly<Record<string, string>>): void {
  for (const [from, to] of Object.entries(names)) {
    const value: JsonValue | undefined = frame[from];
    if (value !== undefined && value !== null) draft[to] = value;
  }
}
