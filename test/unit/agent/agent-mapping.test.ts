// The mapping table of asAgent as pure functions: run events to AgentEvents, outcomes to terminals, collect(), the invoke iterator.
import { describe, expect, it } from 'vitest';
import { AgentFailure, collect, otherAgentEvent } from '../../../src/agent/index.js';
import type { AgentEvent } from '../../../src/agent/index.js';
import { InvokeStream } from '../../../src/agent/invoke-stream.js';
import { RunEventMapper } from '../../../src/agent/map-run-events.js';
import { terminalFor } from '../../../src/agent/terminal.js';
import type { Outcome, OutcomeErrorCode, RunEvent } from '../../../src/index.js';

const envelope = { v: 1 as const, run: 'r' };
let seq = 0;
const ev = (type: string, fields: Record<string, unknown> = {}) => ({ ...envelope, seq: ++seq, type, ...fields }) as unknown as RunEvent;

function mapAll(events: RunEvent[], passRunEvents = false): { out: AgentEvent[]; mapper: RunEventMapper } {
  const mapper = new RunEventMapper(passRunEvents);
  return { out: events.flatMap((event) => mapper.map(event)), mapper };
}

const text = (out: AgentEvent[]) =>
  out
    .filter((event) => event.type === 'text')
    .map((event) => (event as { delta: string }).delta)
    .join('');

function outcome(fields: Partial<Outcome>): Outcome {
  return {
    runId: 'r',
    status: 'done',
    truncated: false,
    turns: 1,
    spawnFailed: false,
    exitCode: 0,
    signal: null,
    killed: false,
    escalated: false,
    rejectedLines: 0,
    outputTail: '',
    durationMs: 1,
    ...fields,
  };
}

describe('text', () => {
  it('deltas followed by the same full assistant-text are not doubled', () => {
    const { out } = mapAll([
      ev('assistant-text-delta', { delta: 'Hel' }),
      ev('assistant-text-delta', { delta: 'lo' }),
      ev('assistant-text', { final: true, text: 'Hello' }),
    ]);
    expect(out).toEqual([
      { type: 'text', delta: 'Hel' },
      { type: 'text', delta: 'lo' },
    ]);
  });

  it('a full assistant-text with no deltas is the text; one longer than its deltas adds only the missing tail', () => {
    expect(text(mapAll([ev('assistant-text', { final: true, text: 'Whole' })]).out)).toBe('Whole');
    expect(text(mapAll([ev('assistant-text-delta', { delta: 'Who' }), ev('assistant-text', { final: true, text: 'Whole' })]).out)).toBe('Whole');
  });

  it('a full text cut to transport bounds does not replace or repeat the deltas', () => {
    const { out } = mapAll([ev('assistant-text-delta', { delta: 'abcdef' }), ev('assistant-text', { final: true, text: 'abc', transportTruncated: true })]);
    expect(text(out)).toBe('abcdef');
  });

  it("the result's answer adds only what the stream has not carried", () => {
    const cases: Array<[RunEvent[], string, string]> = [
      [[], 'only in the result', 'only in the result'],
      [[ev('assistant-text-delta', { delta: 'same' })], 'same', 'same'],
      [[ev('assistant-text', { final: true, text: 'cut' })], 'cut and the rest', 'cut and the rest'],
      [[ev('assistant-text', { final: false, text: 'Working. ' }), ev('assistant-stream-end', { final: false }), ev('assistant-text', { final: true, text: 'Done.' })], 'Done.', 'Working. Done.'],
    ];
    for (const [events, answer, expected] of cases) {
      const { out, mapper } = mapAll(events);
      expect(text(out) + mapper.answerRemainder(outcome({ finalText: answer }))).toBe(expected);
    }
  });

  it('thinking goes to thinking events, never to text, deduplicated the same way', () => {
    const { out } = mapAll([
      ev('assistant-thinking-delta', { delta: 'hmm' }),
      ev('assistant-thinking', { final: false, text: 'hmm' }),
      ev('assistant-thinking', { final: false, text: 'more' }),
    ]);
    expect(out).toEqual([
      { type: 'thinking', delta: 'hmm' },
      { type: 'thinking', delta: 'more' },
    ]);
  });
});

describe('tools, retries, passthrough', () => {
  it('tool-call / tool-result become tool_started / tool_ended paired by id, made up when the child gave none', () => {
    const { out } = mapAll([
      ev('tool-call', { name: 'read', id: 'c1', arguments: { path: 'a' } }),
      ev('tool-call', { name: 'grep' }),
      ev('tool-result', { name: 'grep', isError: true, result: 'no match' }),
      ev('tool-result', { name: 'read', isError: false, toolCallId: 'c1', result: { ok: 1 } }),
    ]);
    expect(out).toEqual([
      { type: 'tool_started', id: 'c1', name: 'read', args: { path: 'a' } },
      { type: 'tool_started', id: 'tool-1', name: 'grep', args: {} },
      { type: 'tool_ended', id: 'tool-1', isError: true, content: 'no match' },
      { type: 'tool_ended', id: 'c1', isError: false, content: { ok: 1 } },
    ]);
  });

  it('an info carrying `retrying` is a retrying event', () => {
    const retrying = { attempt: 2, maxAttempts: 5, delayMs: 1000, reason: 'rate limited' };
    expect(mapAll([ev('info', { summary: 'x', extra: { retrying } })]).out).toEqual([{ type: 'retrying', ...retrying }]);
  });

  it('a rate limit the agent retries by itself is a retrying event; a warning or a refusal it gave up on is not', () => {
    const retried = ev('rate-limit', { status: 'limited', httpStatus: 429, agentRetries: true, attempt: 2, maxAttempts: 10, retryAfterMs: 3654, nativeType: 'system/api_retry', message: 'rate_limit' });
    expect(mapAll([retried]).out).toEqual([{ type: 'retrying', attempt: 2, maxAttempts: 10, delayMs: 3654, reason: 'rate limited (HTTP 429): rate_limit' }]);
    const bare = ev('rate-limit', { status: 'limited', agentRetries: true, nativeType: 'error' });
    expect(mapAll([bare]).out).toEqual([{ type: 'retrying', attempt: 1, maxAttempts: 1, delayMs: 0, reason: 'rate limited' }]);
    const warning = ev('rate-limit', { status: 'warning', nativeType: 'rate_limit_event' });
    const gaveUp = ev('rate-limit', { status: 'limited', httpStatus: 429, agentRetries: false, nativeType: 'error' });
    expect(mapAll([warning, gaveUp]).out).toEqual([]);
    expect(mapAll([gaveUp], true).out).toEqual([{ type: 'run_event', event: expect.objectContaining({ type: 'rate-limit', status: 'limited' }) }]);
  });

  it("a relayed agent event comes out unchanged; a relayed terminal is refused", () => {
    const citation = { type: 'citation', url: 'https://example.com', nested: { a: [1, 2] } };
    expect(mapAll([ev('info', { extra: { agentEvent: citation } })]).out).toEqual([citation]);
    const { out } = mapAll([ev('info', { extra: { agentEvent: { type: 'completed' } } })], true);
    expect(out.map((event) => event.type)).toEqual(['run_event']);
  });

  it('every other run event is passed through as a non-terminal run_event (or dropped when runEvents is off)', () => {
    const events = [ev('turn-started', { turn: 1 }), ev('mystery'), ev('turn-complete', { turn: 1, stopReason: 'stop' })];
    const { out } = mapAll(events, true);
    expect(out.map((event) => event.type)).toEqual(['run_event', 'run_event', 'run_event']);
    expect(out[1]).toEqual({ type: 'run_event', event: events[1] });
    expect(mapAll(events, false).out).toEqual([]);
  });

  it('the exit event is never passed through: the terminal stands for it', () => {
    expect(mapAll([ev('exit', { status: 'done' })], true).out).toEqual([]);
  });
});

describe('terminal', () => {
  it('done is completed, with the data of the result', () => {
    const { mapper } = mapAll([ev('result', { stopReason: 'stop', finalText: 'x', extra: { data: { n: 1 } } })]);
    expect(terminalFor(outcome({}), mapper.childFailure, mapper.data)).toEqual({ type: 'completed', data: { n: 1 } });
    expect(terminalFor(outcome({}), undefined, undefined)).toEqual({ type: 'completed' });
  });

  it('the retryable classification of every outcome error code', () => {
    const table: Array<[Outcome['status'], OutcomeErrorCode, string, boolean]> = [
      ['failed', 'spawn-failed', 'spawn_failed', false],
      ['failed', 'version-mismatch', 'protocol_error', false],
      ['failed', 'foreign-run', 'protocol_error', false],
      ['failed', 'event-file-truncated', 'protocol_error', false],
      ['failed', 'ready-timeout', 'ready_timeout', true],
      ['failed', 'no-exit-event', 'crashed', true],
      ['failed', 'child-error', 'child_failed', true],
      ['failed', 'channel-error', 'channel_error', true],
      ['timed-out', 'deadline', 'timed_out', true],
      ['timed-out', 'child-error', 'timed_out', true],
      ['cancelled', 'aborted', 'aborted', false],
      ['cancelled', 'parent-shutdown', 'aborted', false],
      ['cancelled', 'finalize-timeout', 'aborted', false],
      ['cancelled', 'child-error', 'aborted', false],
    ];
    for (const [status, errorCode, code, retryable] of table) {
      expect(terminalFor(outcome({ status, errorCode, error: 'why' }), undefined, undefined)).toEqual({ type: 'failed', details: 'why', code, retryable });
    }
  });

  it("a child's own failure classification wins for child errors", () => {
    const { mapper } = mapAll([ev('exit', { status: 'failed', error: 'quota', extra: { code: 'quota_exceeded', retryable: false } })]);
    const terminal = terminalFor(outcome({ status: 'failed', errorCode: 'child-error', error: 'quota' }), mapper.childFailure, undefined);
    expect(terminal).toEqual({ type: 'failed', details: 'quota', code: 'quota_exceeded', retryable: false });
  });
});

describe('otherAgentEvent', () => {
  it('makes a plain JSON event of a type this version does not define', () => {
    const event = otherAgentEvent('citation', { url: 'https://example.com', type: 'overridden' });
    expect(event).toEqual({ url: 'https://example.com', type: 'citation' });
    expect(JSON.parse(JSON.stringify(event))).toStrictEqual(event);
  });

  it('refuses a known type (TypeScript already does), an empty type and fields that are no object', () => {
    const known: string = 'failed';
    expect(() => otherAgentEvent(known, { details: 'x' })).toThrow(/"failed" is a known event type; yield it as \{ type: 'failed', \.\.\. \}/);
    expect(() => otherAgentEvent('')).toThrow(TypeError);
    expect(() => otherAgentEvent('x', [] as never)).toThrow(/fields must be an object/);
  });
});

describe('collect', () => {
  async function* stream(...events: AgentEvent[]): AsyncGenerator<AgentEvent> {
    yield* events;
  }

  it('concatenates text, ignores thinking and unknown events, returns data', async () => {
    const result = await collect(
      stream({ type: 'thinking', delta: 'no' }, { type: 'text', delta: 'a' }, otherAgentEvent('citation'), { type: 'text', delta: 'b' }, { type: 'completed', data: [1] }),
    );
    expect(result).toEqual({ text: 'ab', data: [1] });
    expect(await collect(stream({ type: 'completed' }))).toEqual({ text: '' });
  });

  it('throws AgentFailure on failed, and an Error on a stream without terminal', async () => {
    const failure = await collect(stream({ type: 'failed', details: 'd', retryable: true, code: 'c' })).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AgentFailure);
    expect(failure).toMatchObject({ details: 'd', retryable: true, code: 'c', message: 'd' });
    await expect(collect(stream({ type: 'text', delta: 'x' }))).rejects.toThrow(/without a terminal/);
  });
});

describe('InvokeStream', () => {
  it('yields nothing after the terminal even when the source has more', async () => {
    const stream = new InvokeStream(async () => [{ type: 'completed' }, { type: 'text', delta: 'late' }]);
    expect(await stream.next()).toEqual({ value: { type: 'completed' }, done: false });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it('a throwing source becomes one failed internal_error, not a throw', async () => {
    const stream = new InvokeStream(async () => {
      throw new Error('boom');
    });
    const first = await stream.next();
    expect(first.value).toMatchObject({ type: 'failed', code: 'internal_error', retryable: false });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it('return() wakes a pending next() and waits for the source to stop', async () => {
    let stopped = false;
    const stream = new InvokeStream(async () => ({
      pull: () => new Promise<AgentEvent[]>(() => undefined),
      stop: async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        stopped = true;
      },
    }));
    const pending = stream.next();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await stream.return();
    expect(stopped).toBe(true);
    expect(await pending).toEqual({ value: undefined, done: true });
  });
});
