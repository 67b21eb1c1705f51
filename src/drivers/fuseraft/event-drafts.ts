// Maps fuseraft's display frames (repl and bridge) to subvisor's RunEvent shapes, before the envelope.
import type { JsonObject, Usage } from '../../wire/index.js';
import { readUsage } from '../shared/usage-reader.js';
import type { UsageSpec } from '../shared/usage-reader.js';
import type { RunEventDraftOf } from '../../protocol/index.js';
import { passthrough, withExtras } from '../shared/event-drafts.js';
import type { EventDraft } from '../shared/event-drafts.js';
import { TOOL_OUTPUT_CAP } from './frames.js';
import { countField, stringField } from '../shared/json-kinds.js';
import type { Frame } from './frames.js';

/** The fields the delta frames map (one array for every frame, not one per call). */
const DELTA_FIELDS = ['text'] as const;

/** The display frames of `repl --vscode` that map to one RunEvent each; undefined for any other type. */
export function displayDraft(frame: Frame): EventDraft | undefined {
  switch (frame.type) {
    case 'token':
      // checkFrame made sure of the required fields (`text`, `name`, `tool`, `ok`) of every frame mapped here.
      return withExtras({ type: 'assistant-text-delta', delta: frame['text'] as string }, frame, DELTA_FIELDS);
    case 'thinking':
      return withExtras({ type: 'assistant-thinking-delta', delta: frame['text'] as string }, frame, DELTA_FIELDS);
    case 'tool_call': {
      const draft: RunEventDraftOf<'tool-call'> = { type: 'tool-call', name: frame['name'] as string };
      const id = stringField(frame, 'id');
      if (id !== undefined) draft.id = id;
      const summary = stringField(frame, 'summary');
      if (summary !== undefined) draft.summary = summary;
      const args = frame['args'];
      if (args !== undefined && args !== null) draft.arguments = args;
      const agent = stringField(frame, 'agent');
      if (agent !== undefined) draft.agent = agent;
      return withExtras(draft, frame, ['id', 'name', 'summary', 'args', 'agent']);
    }
    case 'tool_result': {
      const draft: RunEventDraftOf<'tool-result'> = { type: 'tool-result', name: frame['name'] as string, isError: frame['ok'] !== true };
      const id = stringField(frame, 'id');
      if (id !== undefined) {
        draft.id = id;
        draft.toolCallId = id;
      }
      const output = frame['output'];
      if (output !== undefined) draft.result = output;
      // fuseraft cuts the output at its cap without saying so: at the cap, assume it was cut.
      if (typeof output === 'string' && output.length >= TOOL_OUTPUT_CAP) draft.transportTruncated = true;
      return withExtras(draft, frame, ['id', 'name', 'ok', 'output']);
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
      const draft: RunEventDraftOf<'tool-call'> = { type: 'tool-call', name: frame['tool'] as string };
      const agent = stringField(frame, 'agent');
      if (agent !== undefined) draft.agent = agent;
      const summary = stringField(frame, 'argsSummary');
      if (summary !== undefined) draft.summary = summary;
      return withExtras(draft, frame, ['tool', 'agent', 'argsSummary']);
    }
    case 'token_budget_warning': {
      const agent = stringField(frame, 'agent');
      return passthrough(frame, `${agent ?? 'an agent'} is near its token budget`);
    }
    default:
      return undefined;
  }
}

/** Where fuseraft's frames (message_end, an AgentMessage, result) carry their token counts: members of their own, nullable. */
const FUSERAFT_USAGE: UsageSpec = { counts: ['inputTokens', 'outputTokens', 'cachedInputTokens'] };

/** Token usage of a frame: its counts that are present and not null. */
export function usageOf(source: JsonObject): Usage | undefined {
  return readUsage(source, FUSERAFT_USAGE);
}
