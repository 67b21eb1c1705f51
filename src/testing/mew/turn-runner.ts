// Runs one scripted turn of the fake mew daemon: its steps as mew messages, its end, and a cancel that stops it.
import type { JsonObject } from '../../wire/index.js';
import type { FakeMewMessage } from './wire-tags.js';
import type { AssistantMessage } from './parts.js';
import type { MewStep, MewTurn } from './scenario.js';

/** What a turn can do to the session's clients. */
export interface TurnContext {
  /** Sends a message to every client of the session. */
  broadcast(message: FakeMewMessage): void;
  /** The turn's assistant message: its parts are streamed to every client and kept in the session's history. */
  assistant: AssistantMessage;
  sessionId: string;
  /** Sends exactly this text to every client. */
  raw(text: string): void;
  /** Cuts every client's connection. */
  drop(): void;
  /** A fresh request id: `label` in a build with string ids, the next integer in one with u64 ids. */
  requestId(label: string): string | number;
  /** Waits for any client's `response` (its type) to `requestId`. */
  wait(requestId: string | number, response: string, resolve: (answer: JsonObject) => void): void;
  unwait(requestId: string | number): void;
}

export interface RunningTurn {
  cancel(): void;
  /** Settles when the turn ended (completed, failed or cancelled). */
  done: Promise<void>;
}

class Cancelled extends Error {}

/** Starts turn `n` (from 1) of the session. */
export function runTurn(turn: MewTurn, context: TurnContext, n: number): RunningTurn {
  let cancelled = false;
  const wakers = new Set<() => void>();
  const cancel = () => {
    if (cancelled) return;
    cancelled = true;
    for (const wake of wakers) wake();
  };
  /** Resolves after `ms`, or at once when cancelled (then throws Cancelled). */
  const sleep = (ms: number) =>
    new Promise<void>((resolve, reject) => {
      if (cancelled) return reject(new Cancelled());
      const wake = () => {
        clearTimeout(timer);
        wakers.delete(wake);
        reject(new Cancelled());
      };
      const timer = setTimeout(() => {
        wakers.delete(wake);
        resolve();
      }, ms);
      wakers.add(wake);
    });
  const answer = (requestId: string | number, response: string) =>
    new Promise<JsonObject>((resolve, reject) => {
      if (cancelled) return reject(new Cancelled());
      const wake = () => {
        context.unwait(requestId);
        reject(new Cancelled());
      };
      wakers.add(wake);
      context.wait(requestId, response, (value) => {
        wakers.delete(wake);
        resolve(value);
      });
    });
  const state = { text: '', calls: 0, requests: 0, n, sleep, answer };
  const done = (async () => {
    try {
      for (const step of turn.steps ?? []) await runStep(step, context, state);
      if (turn.fail !== undefined) {
        context.broadcast({ type: 'error_event', message: turn.fail });
        return end(context, turn, 'turn_failed');
      }
      // mew_message::Tokens.
      const usage = turn.usage ?? { input: 100, output: Math.ceil(state.text.length / 4), reasoning: 0, cache_read: 0, cache_write: 0 };
      context.broadcast({ type: 'provider', event: { type: 'message_end', finish: 'stop', usage, cost: turn.cost ?? 0.001 } });
      end(context, turn, 'turn_complete');
    } catch (error) {
      if (!(error instanceof Cancelled)) throw error;
      end(context, turn, 'turn_failed');
    }
  })();
  return { cancel, done };
}

interface TurnState {
  text: string;
  calls: number;
  requests: number;
  n: number;
  sleep(ms: number): Promise<void>;
  answer(requestId: string | number, response: string): Promise<JsonObject>;
}

/** The turn's end as mew's `run_turn` announces it: the session goes idle, then the alert (`kind`). */
function end(context: TurnContext, turn: MewTurn, kind: 'turn_complete' | 'turn_failed'): void {
  const how = turn.end ?? 'both';
  if (how !== 'alert') context.broadcast({ type: 'session_activity_changed', session_id: context.sessionId, activity: 'idle' });
  if (how !== 'idle') context.broadcast({ type: 'session_alert', session_id: context.sessionId, title: 'fake session', kind });
}

/** Streams one text or reasoning part: `part_start`, `text` in `chunks` deltas `ms` apart, `part_end`. */
async function streamPart(type: 'text' | 'reasoning', text: string, chunks: number | undefined, ms: number | undefined, context: TurnContext, state: TurnState): Promise<void> {
  const part = context.assistant.start(type);
  const size = Math.max(1, Math.ceil(text.length / Math.max(1, chunks ?? 1)));
  for (let i = 0; i < text.length; i += size) {
    if (i > 0 && (ms ?? 0) > 0) await state.sleep(ms!);
    context.assistant.delta(part, text.slice(i, i + size));
  }
  context.assistant.end(part);
}

async function runStep(step: MewStep, context: TurnContext, state: TurnState): Promise<void> {
  if ('text' in step) {
    await streamPart('text', step.text, step.chunks, step.ms, context, state);
    state.text += step.text;
  } else if ('thinking' in step) {
    await streamPart('reasoning', step.thinking, step.chunks, step.ms, context, state);
  } else if ('tool' in step) {
    await tool(step.tool, step.success ?? true, context, state, step.progress, step.ms);
  } else if ('permission' in step) {
    const fields = { tool_name: step.permission, input: step.input ?? null };
    const response = await request('permission_request', 'perm', fields, 'permission_response', context, state, step.resolvedByOther);
    // Settled by another client: the fake goes on as allowed.
    await tool(step.permission, response === undefined || allows(response), context, state);
  } else if ('ask' in step) {
    // mew's Question {prompt, options: [{label, description}]}.
    const questions = step.ask.map((prompt) => ({ prompt, options: [] }));
    const response = (await request('ask_user_request', 'ask', { call_id: `call_${state.n}_${state.calls + 1}`, questions }, 'ask_user_response', context, state))!;
    const answers = Array.isArray(response['answers']) ? response['answers'].join(', ') : '';
    await say(response['cancelled'] === true ? '(no answer)' : answers, context, state);
  } else if ('workspacePermission' in step) {
    const response = await request('workspace_permission_request', 'workspace', { path: step.workspacePermission }, 'permission_response', context, state);
    await say(`access to ${step.workspacePermission} ${allows(response!) ? 'allowed' : 'denied'}. `, context, state);
  } else if ('subagentPermission' in step) {
    const call = `call_${state.n}_${++state.calls}`;
    const fields = { parent_call_id: call, tool_name: step.subagentPermission, input: step.input ?? null };
    const response = await request('subagent_permission_request', 'subagent', fields, 'permission_response', context, state);
    await say(`subagent ${step.subagentPermission} ${allows(response!) ? 'allowed' : 'denied'}. `, context, state);
  } else if ('planApproval' in step) {
    const fields = { call_id: `call_${state.n}_${++state.calls}`, plan_path: step.planPath ?? '.mew/plans/plan.md', plan_markdown: step.planApproval, persona: step.persona ?? 'plan' };
    const response = await request('plan_approval_request', 'plan', fields, 'plan_approval_response', context, state);
    await say(response!['approved'] === true ? 'plan approved. ' : `plan not approved${typeof response!['feedback'] === 'string' ? ` (${response!['feedback']})` : ''}. `, context, state);
  } else if ('goal' in step) {
    const response = await request('goal_proposed', 'goal', { call_id: `call_${state.n}_${++state.calls}`, objective: step.goal }, 'goal_response', context, state);
    await say(response!['accepted'] === true ? 'goal accepted. ' : 'goal rejected. ', context, state);
  } else if ('blockingRequest' in step) {
    // No response of a client settles it (none is defined): only another client's request_resolved, or a cancel.
    await request(step.blockingRequest, 'request', step.fields ?? {}, '', context, state, step.resolvedByOther);
  } else if ('subagent' in step) {
    const call = `call_${state.n}_${++state.calls}`;
    context.broadcast({ type: 'subagent_start', parent_call_id: call, name: step.subagent, child_session_id: `child_${call}` });
    context.broadcast({ type: 'subagent_status', parent_call_id: call, tool_name: 'task', message: `${step.subagent} is working` });
    context.broadcast({ type: 'subagent_end', parent_call_id: call, child_session_id: `child_${call}`, outcome: 'done' });
  } else if ('retry' in step) {
    context.broadcast({ type: 'provider', event: { type: 'retry_wait', attempt: step.retry, max_attempts: 5, delay_secs: step.delaySecs ?? 1, reason: '429 Too Many Requests' } });
  } else if ('messageEnd' in step) {
    context.broadcast({ type: 'provider', event: { type: 'message_end', finish: step.messageEnd.finish ?? 'tool_use', usage: step.messageEnd.usage ?? {}, cost: step.messageEnd.cost ?? 0 } });
  } else if ('pause' in step) {
    await state.sleep(step.pause);
  } else if ('raw' in step) {
    context.raw(step.raw);
  } else if ('otherSession' in step) {
    context.broadcast(otherSessionNotice(step.otherSession, `${context.sessionId}_other`));
  } else if ('drop' in step) {
    context.drop();
    await state.sleep(2 ** 31 - 1); // the last client left: mew cancels the turn, which wakes this
  } else {
    context.broadcast({ type: step.unknown ?? 'mystery_event', ...step.fields });
  }
}

/**
 * Broadcasts a request `{type, request_id, ...fields}` and waits for a client's `response` to it (the
 * daemon then sends `request_resolved`). `resolvedByOther`: another client settles it after that many
 * ms instead (`request_resolved`; undefined is returned), whatever this client answers.
 */
async function request(type: string, label: string, fields: JsonObject, response: string, context: TurnContext, state: TurnState, resolvedByOther?: number): Promise<JsonObject | undefined> {
  const requestId = context.requestId(`${label}_${state.n}_${++state.requests}`);
  context.broadcast({ type, request_id: requestId, ...fields });
  if (resolvedByOther === undefined) return state.answer(requestId, response);
  await state.sleep(resolvedByOther);
  context.broadcast({ type: 'request_resolved', request_id: requestId });
  return undefined;
}

/** A notice of session `sessionId` (not the one whose turn runs), as mew broadcasts it to every client. */
function otherSessionNotice(what: 'idle' | 'usage' | 'turn_complete' | 'turn_failed', sessionId: string): FakeMewMessage {
  switch (what) {
    case 'idle':
      return { type: 'session_activity_changed', session_id: sessionId, activity: 'idle' };
    case 'usage':
      return { type: 'session_usage_changed', session_id: sessionId, usage: { input: 50_000, output: 9_000 }, cost: 0.5 };
    default:
      return { type: 'session_alert', session_id: sessionId, title: 'another session', kind: what, ...(what === 'turn_failed' ? { message: 'the other session failed' } : {}) };
  }
}

/** Whether a `permission_response` allows. */
function allows(response: JsonObject): boolean {
  return response['decision'] === 'allow_once' || response['decision'] === 'allow_session';
}

/** One text part of the answer. */
async function say(text: string, context: TurnContext, state: TurnState): Promise<void> {
  await streamPart('text', text, 1, 0, context, state);
  state.text += text;
}

async function tool(name: string, success: boolean, context: TurnContext, state: TurnState, progress?: string, ms?: number): Promise<void> {
  const call = `call_${state.n}_${++state.calls}`;
  // The model's tool call is a part too (its input streams as `arguments`), then mew runs the tool.
  const part = context.assistant.start('tool_call', { tool_name: name, call_id: call, state: { status: 'pending', input: {}, time: { start: Date.now() } } });
  context.assistant.delta(part, '{}', 'arguments');
  context.assistant.end(part);
  context.broadcast({ type: 'tool_start', call_id: call, name });
  if (progress !== undefined) context.broadcast({ type: 'tool_progress', call_id: call, chunk: progress });
  if (ms !== undefined) await state.sleep(ms);
  context.broadcast({ type: 'tool_end', call_id: call, success });
}
