// Codex's thread items as run events: a tool item's start and end as tool-call and tool-result, a message or reasoning item's end as its whole text.
import type { RunEventDraftOf } from '../../protocol/index.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import { withExtras } from '../shared/event-drafts.js';
import type { TypedFrame } from '../shared/json-line.js';
import { isObject, stringField } from '../shared/json-kinds.js';

/** A thread item as checked (`type` and `id` are strings). */
export type Item = TypedFrame & { id: string };

/** How each tool item reads: its tool's name, its arguments, its result, and the fields those took. */
interface ToolShape {
  name(item: Item): string;
  args(item: Item): JsonValue;
  result(item: Item): JsonValue | undefined;
  /** The fields the call's and the result's mapping took (the rest go under `extra`). */
  used: readonly string[];
}

const field = (item: Item, name: string): JsonValue => item[name] ?? null;
const pick = (item: Item, names: readonly string[]): JsonObject => Object.fromEntries(names.filter((name) => item[name] !== undefined).map((name) => [name, item[name]!]));

/** The item types that are tool calls (app-server v2 `ThreadItem`), and how each reads. */
const TOOLS: Readonly<Record<string, ToolShape>> = {
  commandExecution: {
    name: () => 'commandExecution',
    args: (item) => pick(item, ['command', 'cwd']),
    result: (item) => field(item, 'aggregatedOutput'),
    used: ['id', 'status', 'command', 'cwd', 'aggregatedOutput', 'durationMs'],
  },
  fileChange: {
    name: () => 'fileChange',
    args: (item) => pick(item, ['changes']),
    result: (item) => field(item, 'status'),
    used: ['id', 'status', 'changes'],
  },
  mcpToolCall: {
    name: (item) => `${stringField(item, 'server') ?? 'mcp'}/${stringField(item, 'tool') ?? 'unknown'}`,
    args: (item) => field(item, 'arguments'),
    result: (item) => (item['error'] !== null && item['error'] !== undefined ? item['error'] : field(item, 'result')),
    used: ['id', 'status', 'server', 'tool', 'arguments', 'result', 'error', 'durationMs'],
  },
  webSearch: {
    name: () => 'webSearch',
    args: (item) => pick(item, ['query', 'action']),
    result: (item) => field(item, 'results'),
    used: ['id', 'query', 'action', 'results'],
  },
  dynamicToolCall: {
    name: (item) => stringField(item, 'tool') ?? 'dynamicToolCall',
    args: (item) => field(item, 'arguments'),
    result: (item) => field(item, 'contentItems'),
    used: ['id', 'status', 'tool', 'arguments', 'contentItems', 'success', 'durationMs'],
  },
  collabAgentToolCall: {
    name: (item) => stringField(item, 'tool') ?? 'collabAgentToolCall',
    args: (item) => pick(item, ['prompt', 'receiverThreadIds', 'model']),
    result: (item) => field(item, 'agentsStates'),
    used: ['id', 'status', 'tool', 'prompt', 'receiverThreadIds', 'model', 'agentsStates'],
  },
  imageView: {
    name: () => 'imageView',
    args: (item) => pick(item, ['path']),
    result: () => undefined,
    used: ['id', 'path'],
  },
};

/** Whether `item` is a tool call (it becomes a tool-call when it starts and a tool-result when it completes). */
export function isToolItem(item: Item): boolean {
  return Object.hasOwn(TOOLS, item.type);
}

/** The tool-call of a tool item that started. */
export function toolCallOf(item: Item): RunEventDraftOf<'tool-call'> {
  const shape = TOOLS[item.type]!;
  return withExtras({ type: 'tool-call', name: shape.name(item), id: item.id, arguments: shape.args(item) }, item, shape.used);
}

/**
 * The tool-result of a tool item that completed: an error unless its status is `completed` (a declined command
 * is `declined`, a refused patch `failed`) and, for a command, its exit code is 0; a dynamic tool says itself.
 */
export function toolResultOf(item: Item): RunEventDraftOf<'tool-result'> {
  const shape = TOOLS[item.type]!;
  const status = stringField(item, 'status');
  const exitCode = item['exitCode'];
  const failed =
    (status !== undefined && status !== 'completed') ||
    (typeof exitCode === 'number' && exitCode !== 0) ||
    item['success'] === false ||
    (item.type === 'mcpToolCall' && isObject(item['error']));
  const draft: RunEventDraftOf<'tool-result'> = { type: 'tool-result', name: shape.name(item), isError: failed, id: item.id, toolCallId: item.id };
  const durationMs = item['durationMs'];
  if (typeof durationMs === 'number' && Number.isFinite(durationMs) && durationMs >= 0) draft.durationSeconds = durationMs / 1000;
  const result = shape.result(item);
  if (result !== undefined) draft.result = result;
  return withExtras(draft, item, [...shape.used, 'exitCode', 'success']);
}

/** The whole text of an `agentMessage` item: `final` when Codex marks it its final answer (`phase`). */
export function agentTextOf(item: Item, contentIndex: number): RunEventDraftOf<'assistant-text'> {
  const draft: RunEventDraftOf<'assistant-text'> = { type: 'assistant-text', final: item['phase'] === 'final_answer', contentIndex, text: stringField(item, 'text') ?? '' };
  return withExtras(draft, item, ['text']);
}

/** The whole text of a `reasoning` item: its summary sections, or its raw reasoning when it has no summary. Never the answer. */
export function reasoningTextOf(item: Item, contentIndex: number): RunEventDraftOf<'assistant-thinking'> {
  const summary = textsOf(item['summary']);
  const text = (summary.length > 0 ? summary : textsOf(item['content'])).join('\n\n');
  return withExtras({ type: 'assistant-thinking', final: false, contentIndex, text }, item, ['summary', 'content']);
}

function textsOf(value: JsonValue | undefined): string[] {
  return Array.isArray(value) ? value.filter((part): part is string => typeof part === 'string' && part !== '') : [];
}
