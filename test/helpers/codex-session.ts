// A Codex session over a recording io and sink, fed lines shaped like codex 0.169.0 app-server's (notes/agent-transcripts.md), with a manual clock.
import { CodexSession } from '../../src/drivers/codex/codex-session.js';
import type { CodexSessionOptions } from '../../src/drivers/codex/codex-session.js';
import type { StdioSessionFacts } from '../../src/drivers/shared/stdio/session-io.js';
import type { EventDraft } from '../../src/drivers/shared/event-drafts.js';
import type { RateLimitFields } from '../../src/protocol/index.js';
import type { JsonObject } from '../../src/wire/index.js';
import { manualTimers } from './manual-timers.js';

export const THREAD = '01a24e06-93a6-7150-841c-7303a11e7d88';
export const TURN = '01a24e06-9451-7000-8000-000000000001';
export const TURN_2 = '01a24e06-9451-7000-8000-000000000002';

/** Everything a session reported, in order (`log`), and what it wrote. */
export function codexHarness(options: Partial<CodexSessionOptions> = {}) {
  const sent: JsonObject[] = [];
  const log: string[] = [];
  const events: EventDraft[] = [];
  const rateLimits: RateLimitFields[] = [];
  const results: Array<{ stopReason: string; text: string | undefined }> = [];
  const answers: Array<string | undefined> = [];
  let inputEnded = false;
  const listeners: Array<(draft: EventDraft) => void> = [];
  const clock = manualTimers();
  const facts: StdioSessionFacts = {
    ready: () => void log.push('ready'),
    event: (draft) => {
      events.push(draft);
      log.push(`event ${draft.type}`);
      for (const listener of listeners) listener(draft);
    },
    ack: (ref, status, reason) => void log.push(`ack ${ref} ${status}${reason === undefined ? '' : `: ${reason}`}`),
    delivery: (ref, delivery) => void log.push(`delivery ${ref} ${delivery}`),
    turnStarted: (turn) => void log.push(`turnStarted ${turn}`),
    turnCompleted: (turn, stopReason, _usage, answer) => {
      answers.push(answer);
      log.push(`turnCompleted ${turn} ${stopReason}`);
    },
    result: (report) => {
      results.push({ stopReason: report.stopReason, text: report.answer?.text });
      log.push('result');
    },
    session: (id) => void log.push(`session ${id}`),
    rejected: (rejection) => void log.push(`rejected ${rejection.code}: ${rejection.reason}`),
    rateLimit: (fields) => {
      rateLimits.push(fields);
      log.push(`rateLimit ${fields.status}`);
    },
    fatal: (code, error) => void log.push(`fatal ${code}: ${error}`),
  };
  const session = new CodexSession(
    {
      send: (message) => {
        if (inputEnded) return { ok: false, reason: "the child's stdin is closed" };
        sent.push(message);
        return { ok: true };
      },
      endInput: () => {
        inputEnded = true;
        log.push('endInput');
      },
      setTimer: clock.setTimer,
    },
    facts,
    {
      protocol: 'codex',
      task: 'Say hello',
      cwd: '/tmp/fm/cwd',
      args: [],
      resume: undefined,
      outputSchema: undefined,
      maxAnswerChars: 1_000_000,
      clientVersion: '0.1.0',
      handshakeMs: 30_000,
      requestMs: 30_000,
      ...options,
    },
  );
  let lineNumber = 0;
  /** One stdout line of Codex's (an object is written as JSON, as Codex writes it: no "jsonrpc" member). */
  const line = (value: unknown) => session.lines.line(typeof value === 'string' ? value : JSON.stringify(value), ++lineNumber);
  const notify = (method: string, params: JsonObject) => line({ method, params, emittedAtMs: 1796605383580 });
  /** The last message subvisor wrote. */
  const last = () => sent.at(-1);
  /** The events of one type. */
  const ofType = <T extends EventDraft['type']>(type: T) => events.filter((event): event is Extract<EventDraft, { type: T }> => event.type === type);
  return {
    session,
    sent,
    log,
    events,
    rateLimits,
    results,
    answers,
    clock,
    line,
    notify,
    last,
    ofType,
    get inputEnded() {
      return inputEnded;
    },
    /** Calls `listener` with each event as it is published (as a run's listeners are). */
    onEvent(listener: (draft: EventDraft) => void) {
      listeners.push(listener);
    },
    /** Clears what was recorded so far (a test about what follows). */
    clear() {
      sent.length = 0;
      log.length = 0;
      events.length = 0;
    },
  };
}

export type CodexHarness = ReturnType<typeof codexHarness>;

/** The handshake as 0.169.0 answers it: `initialize`, then `thread/start`'s thread. */
export function handshake(h: CodexHarness): void {
  h.session.start();
  h.line({ id: 1, result: { userAgent: 'subvisor/0.169.0 (Debian 12.0.0; x86_64) xterm (subvisor; 0.1.0)', codexHome: '/home/.codex', platformFamily: 'unix', platformOs: 'linux' } });
  h.notify('remoteControl/status/changed', { status: 'disabled', serverName: 'vm', installationId: '1b94', environmentId: null });
  h.line({
    id: 2,
    result: {
      thread: { id: THREAD, sessionId: THREAD, modelProvider: 'fake-model', model: 'fake-model', status: { type: 'idle' } },
      model: 'fake-model',
      modelProvider: 'fake-model',
      cwd: '/tmp/fm/cwd',
      approvalPolicy: 'untrusted',
      sandbox: { type: 'workspaceWrite', networkAccess: false },
      reasoningEffort: null,
    },
  });
}

/** `turn/start`'s answer: the turn in progress. */
export function turnAnswer(id: number, turnId = TURN): JsonObject {
  return { id, result: { turn: { id: turnId, rootTurnId: turnId, items: [], itemsView: 'notLoaded', status: 'inProgress', error: null, startedAt: null, completedAt: null, durationMs: null } } };
}

/** `turn/completed` with `status` (and the last agent message, as 0.169.0 lists it). */
export function turnCompleted(status: string, options: { turnId?: string; text?: string; error?: JsonObject; threadId?: string } = {}): JsonObject {
  const items = options.text === undefined ? [] : [{ type: 'agentMessage', id: 'msg_fake_1', text: options.text, phase: null }];
  return {
    threadId: options.threadId ?? THREAD,
    turn: { id: options.turnId ?? TURN, items, itemsView: items.length > 0 ? 'summary' : 'notLoaded', status, error: options.error ?? null, startedAt: 1796605383, completedAt: 1796605384, durationMs: 223 },
  };
}

/** An item notification's params. */
export function itemParams(item: JsonObject, turnId = TURN): JsonObject {
  return { item, threadId: THREAD, turnId, startedAtMs: 1796605383580 };
}

/** `thread/tokenUsage/updated` whose total is `total` and last request `last`. */
export function tokenUsage(total: number, last: { input: number; output: number }, turnId = TURN): JsonObject {
  const breakdown = (input: number, output: number) => ({ totalTokens: input + output, inputTokens: input, cachedInputTokens: 0, cacheWriteInputTokens: 0, outputTokens: output, reasoningOutputTokens: 7 });
  return { threadId: THREAD, turnId, tokenUsage: { total: breakdown(total - last.output, last.output), last: breakdown(last.input, last.output), modelContextWindow: 258400 } };
}

/** The honest turn of the transcript: reasoning, then the answer in two deltas, usage, the null rate limits, the end. */
export function honestTurn(h: CodexHarness, answerId = 3): void {
  h.line(turnAnswer(answerId));
  h.notify('thread/status/changed', { threadId: THREAD, status: { type: 'active', activeFlags: [] } });
  h.notify('turn/started', { threadId: THREAD, turn: { id: TURN, items: [], status: 'inProgress', error: null } });
  h.notify('item/started', itemParams({ type: 'userMessage', id: 'u1', clientId: null, content: [{ type: 'text', text: 'Say hello', text_elements: [] }] }));
  h.notify('item/completed', itemParams({ type: 'userMessage', id: 'u1', clientId: null, content: [{ type: 'text', text: 'Say hello', text_elements: [] }] }));
  h.notify('item/started', itemParams({ type: 'reasoning', id: 'rs_fake_1', summary: [], content: [] }));
  h.notify('item/reasoning/summaryPartAdded', { threadId: THREAD, turnId: TURN, itemId: 'rs_fake_1', summaryIndex: 0 });
  h.notify('item/reasoning/summaryTextDelta', { threadId: THREAD, turnId: TURN, itemId: 'rs_fake_1', delta: 'The user wants a', summaryIndex: 0 });
  h.notify('item/reasoning/summaryTextDelta', { threadId: THREAD, turnId: TURN, itemId: 'rs_fake_1', delta: ' greeting.', summaryIndex: 0 });
  h.notify('item/completed', itemParams({ type: 'reasoning', id: 'rs_fake_1', summary: ['The user wants a greeting.'], content: [] }));
  h.notify('item/started', itemParams({ type: 'agentMessage', moderation: null, id: 'msg_fake_1', text: '', phase: null, memoryCitation: null, delivery: null, questions: null }));
  h.notify('item/agentMessage/delta', { threadId: THREAD, turnId: TURN, itemId: 'msg_fake_1', delta: 'Hello from the s' });
  h.notify('item/agentMessage/delta', { threadId: THREAD, turnId: TURN, itemId: 'msg_fake_1', delta: 'cripted model.' });
  h.notify('item/completed', itemParams({ type: 'agentMessage', moderation: null, id: 'msg_fake_1', text: 'Hello from the scripted model.', phase: null, memoryCitation: null, delivery: null, questions: null }));
  h.notify('thread/tokenUsage/updated', tokenUsage(10043, { input: 10029, output: 14 }));
  h.notify('account/rateLimits/updated', { rateLimits: { limitId: 'codex', limitName: null, primary: null, secondary: null, credits: null, rateLimitReachedType: null } });
  h.notify('thread/status/changed', { threadId: THREAD, status: { type: 'idle' } });
  h.notify('turn/completed', turnCompleted('completed', { text: 'Hello from the scripted model.' }));
}
