// A turn's script expanded into a flat list of steps (events, waits, tool calls, steer boundaries, misbehaviours).
import type { JsonObject, JsonValue, WireControlType, WireEventType } from '../../wire/index.js';
import type { MisbehaviourAction, TextSpec, TurnScript } from '../scenario.js';
import { expandText } from '../text.js';

/** What ends a pause before its time: control lines read since the turn started. */
export interface PauseUntil {
  /** At least this many control lines (any line). */
  controls?: number;
  /** A control of this type for this run. */
  control?: WireControlType;
}

/** One step of a running turn. Every step boundary is a cooperative yield. */
export type Op =
  | { kind: 'emit'; type: WireEventType; payload: Record<string, unknown>; output?: number }
  /** Waits `ms`, or less once the controls in `until` were read during the turn. */
  | { kind: 'wait'; ms: number; until?: PauseUntil }
  | { kind: 'tool-call'; name: string; id: string; arguments?: JsonValue }
  | { kind: 'tool-result'; name: string; id: string; result?: JsonValue; error: boolean; durationMs: number }
  /** Where queued steers are injected. */
  | { kind: 'boundary' }
  | { kind: 'answer'; text: string }
  | { kind: 'misbehave'; actions: MisbehaviourAction[] };

export interface ActiveTurn {
  number: number;
  /** The tool-free turn after finalize. */
  final: boolean;
  /** The text that started the turn (prompt, steer, follow-up or finalize note). */
  input: string;
  script: TurnScript;
  ops: Op[];
  next: number;
  dueAt: number;
  /** What ends the current wait early (a pause with `untilControls` / `untilControl`). */
  waitUntil?: PauseUntil;
  /** Control lines read since `turn-started`, and the types of this run's controls among them. */
  controlsRead: number;
  controlTypesRead: Set<WireControlType>;
  /** The tool call waiting for its result, paired with a cancelled result if the turn is interrupted. */
  openTool?: { name: string; id: string };
  outputBytes: number;
  /** The usage of the model calls already ended by an `llm-end` (estimated usage only), and their output bytes. */
  callsUsage: JsonObject;
  reportedOutputBytes: number;
  /** Texts of the steers injected before the answer (for `acknowledgeSteers`). */
  steered: string[];
  answer?: string;
  /** Set when finalize interrupts the turn: it unwinds at the next yield. */
  interrupted: boolean;
}

/** Splits `text` into `pieces` parts of near-equal length (never splitting a surrogate pair). */
function chunksOf(text: string, pieces: number): string[] {
  const characters = Array.from(text);
  const count = Math.max(1, Math.min(Math.floor(pieces), characters.length));
  const parts: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const start = Math.floor((characters.length * index) / count);
    const end = Math.floor((characters.length * (index + 1)) / count);
    parts.push(characters.slice(start, end).join(''));
  }
  return parts.filter((part) => part !== '');
}

/**
 * Expands a turn script. `nextToolId` numbers tool calls across the run. The final turn drops tool steps
 * (finalize runs with tools disabled).
 */
export function planTurn(script: TurnScript, input: string, final: boolean, nextToolId: () => string): Op[] {
  const ops: Op[] = [];
  const streamed = (type: 'assistant-text-delta' | 'assistant-thinking-delta', spec: TextSpec, chunks = 1, ms = 0) => {
    const parts = chunksOf(expandText(spec, input), chunks);
    for (const part of parts) {
      ops.push({ kind: 'emit', type, payload: { 'content-index': 0, delta: part }, output: Buffer.byteLength(part) });
      if (ms > 0) ops.push({ kind: 'wait', ms: ms / parts.length });
    }
    return parts.join('');
  };
  for (const step of script.steps ?? []) {
    if ('thinking' in step) {
      const text = streamed('assistant-thinking-delta', step.thinking, step.chunks, step.ms);
      ops.push({ kind: 'emit', type: 'assistant-thinking', payload: { 'final?': false, 'content-index': 0, text } });
    } else if ('text' in step) {
      const text = streamed('assistant-text-delta', step.text, step.chunks, step.ms);
      ops.push({ kind: 'emit', type: 'assistant-text', payload: { 'final?': false, 'content-index': 0, text } });
      ops.push({ kind: 'emit', type: 'assistant-stream-end', payload: { 'final?': false } });
    } else if ('tool' in step) {
      if (final) continue;
      const id = nextToolId();
      const call: Op = { kind: 'tool-call', name: step.tool, id };
      if (step.arguments !== undefined) call.arguments = step.arguments;
      ops.push(call);
      const durationMs = step.durationMs ?? 0;
      if (durationMs > 0) ops.push({ kind: 'wait', ms: durationMs });
      const result: Op = { kind: 'tool-result', name: step.tool, id, error: step.error ?? false, durationMs };
      if (step.result !== undefined) result.result = step.result;
      ops.push(result, { kind: 'boundary' });
    } else if ('pause' in step) {
      const { pause: ms, untilControls: controls, untilControl: control } = step;
      const until = controls === undefined && control === undefined ? undefined : { controls, control };
      ops.push({ kind: 'wait', ms, until }, { kind: 'boundary' });
    } else if ('error' in step) {
      ops.push({ kind: 'emit', type: 'error', payload: step.source === undefined ? { error: step.error } : { error: step.error, source: step.source } });
    } else {
      ops.push({ kind: 'misbehave', actions: Array.isArray(step.misbehave) ? step.misbehave : [step.misbehave] });
    }
  }
  ops.push({ kind: 'boundary' });
  const answer = expandText(script.answer ?? { echo: true }, input);
  if ((script.answerChunks ?? 0) > 0) {
    streamed('assistant-text-delta', answer, script.answerChunks, script.answerMs);
  } else if ((script.answerMs ?? 0) > 0) {
    ops.push({ kind: 'wait', ms: script.answerMs ?? 0 });
  }
  ops.push({ kind: 'answer', text: answer }, { kind: 'boundary' });
  return ops;
}

/** Whether the controls a pause waits for were read during the turn. */
export function pauseSatisfied(turn: ActiveTurn, until: PauseUntil): boolean {
  const enough = until.controls === undefined || turn.controlsRead >= until.controls;
  return enough && (until.control === undefined || turn.controlTypesRead.has(until.control));
}

/**
 * The estimated usage of the model call ending now (about 4 bytes a token): the first call reads the turn's
 * input, every call reads what the turn wrote before it, and writes what the turn wrote since the last call.
 */
export function callUsage(turn: ActiveTurn): JsonObject {
  const input = 100 + Math.ceil((Buffer.byteLength(turn.input) + turn.reportedOutputBytes) / 4);
  const output = Math.ceil((turn.outputBytes - turn.reportedOutputBytes) / 4);
  turn.reportedOutputBytes = turn.outputBytes;
  const usage = { input, output, 'cache-read': 0, 'cache-write': 0, 'total-tokens': input + output };
  sumUsage(turn.callsUsage, usage);
  return usage;
}

/** The acknowledgement `acknowledgeSteers` appends to an answer. */
export function steerAcknowledgement(steered: readonly string[]): string {
  return `\n\nYour steer reached me mid-turn: ${steered.map((text) => JSON.stringify(text)).join(', ')}.`;
}

/** Adds the numbers of `add` into `into`, key by key (nested objects too). */
export function sumUsage(into: JsonObject, add: JsonObject): void {
  for (const [key, value] of Object.entries(add)) {
    const current = into[key];
    if (typeof value === 'number') {
      into[key] = (typeof current === 'number' ? current : 0) + value;
    } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const nested = typeof current === 'object' && current !== null && !Array.isArray(current) ? current : {};
      sumUsage(nested, value);
      into[key] = nested;
    }
  }
}
