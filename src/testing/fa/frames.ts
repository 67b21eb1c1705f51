// HEP v1 frames as the fake fa writes them: fa's field order, its args summary and its output bounds.
import type { JsonObject } from '../../wire/index.js';

/** `tool_results[].text` cap (chars), as in fa. */
export const HEP_TOOL_RESULT_CAP = 2000;
/** `args_summary` cap with `--output events=full` (chars), as in fa. */
export const HEP_FULL_ARGS_CAP = 4000;
/** The one-line `key=value` summary is cut at this many chars, then `...` is appended, as in fa. */
const SUMMARY_CAP = 100;

/** fa's bound: the first `cap` UTF-16 units, then `…(+N chars)` naming how many were cut. */
export function hepBound(text: string, cap: number): string {
  return text.length <= cap ? text : `${text.slice(0, cap)}…(+${text.length - cap} chars)`;
}

/** `tool_start.args_summary`: `key=<json>` joined by `, ` (cut at 100 chars), or with `full` the bounded raw JSON. */
export function hepArgsSummary(args: JsonObject, full: boolean): string {
  if (full) return hepBound(JSON.stringify(args), HEP_FULL_ARGS_CAP);
  const summary = Object.entries(args)
    .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
    .join(', ');
  return summary.length > SUMMARY_CAP ? `${summary.slice(0, SUMMARY_CAP)}...` : summary;
}

export interface HepToolResult {
  id: string;
  name: string;
  ok: boolean;
  text: string;
}

/** Frame builders: one JSON object per line, keys in fa's order (`type` first). */
export const hepFrame = {
  header: (hep: string, fah: string, session: string) => ({ type: 'hep_header', hep, fah, session }),
  agentStart: (turnId: number) => ({ type: 'agent_start', turn_id: turnId }),
  messageStart: (turnId: number) => ({ type: 'message_start', turn_id: turnId, role: 'assistant' }),
  messageDelta: (turnId: number, delta: string) => ({ type: 'message_delta', turn_id: turnId, delta }),
  toolStart: (turnId: number, id: string, name: string, argsSummary: string) => ({
    type: 'tool_start',
    turn_id: turnId,
    id,
    name,
    args_summary: argsSummary,
  }),
  toolDelta: (turnId: number, id: string, update: string) => ({ type: 'tool_delta', turn_id: turnId, id, update }),
  // Fa's own code sends `output_bytes` beside `action` and `elapsed_ms` (the tool's output so far).
  toolLiveness: (turnId: number, id: string, name: string, elapsedMs: number, outputBytes = 0) => ({
    type: 'tool_liveness',
    turn_id: turnId,
    id,
    name,
    action: 'heartbeat',
    elapsed_ms: elapsedMs,
    output_bytes: outputBytes,
  }),
  turnDone: (turnId: number, message: string, toolResults: HepToolResult[], usage: { input: number; output: number; cost: number }, stopReason: string) => ({
    type: 'turn_done',
    turn_id: turnId,
    message,
    tool_results: toolResults,
    usage: { input: usage.input, output: usage.output, cost: usage.cost },
    stop_reason: stopReason,
  }),
  turnError: (turnId: number, error: string) => ({ type: 'turn_error', turn_id: turnId, error, fatal: true }),
  cancelled: (turnId: number) => ({ type: 'cancelled', turn_id: turnId }),
  compactionStart: (turnId: number) => ({ type: 'compaction_start', turn_id: turnId }),
  compactionEnd: (turnId: number, tokensFreed: number) => ({ type: 'compaction_end', turn_id: turnId, tokens_freed: tokensFreed }),
};
