// Agent Handler conformance of asAgent over every protocol fake: MUST 1-3, JSON round trips, cleanup after return(), session_busy, the mapping.
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { asAgent, collect, AgentFailure, isKnownAgentEvent } from '../../../src/agent/index.js';
import type { AgentEvent, AgentOptions, SupervisedAgent } from '../../../src/agent/index.js';
import { spawnRun } from '../../../src/index.js';
import { fakeChild, isAlive } from '../../../src/testing/index.js';
import { ANSWER_TEXT, HUGE_ANSWER, HUGE_PREFIX, PROTOCOL_FAKES } from '../../helpers/agent-fakes.js';
import type { Behaviour, FakeInstance, ProtocolFake } from '../../helpers/agent-fakes.js';

/** The contract's bound: the tree is gone within 3 s of return(). */
const CLEANUP_BOUND_MS = 3000;

const open: Array<{ fake: FakeInstance; agent: SupervisedAgent }> = [];

afterEach(async () => {
  for (const { fake, agent } of open.splice(0)) {
    await agent.close();
    for (const pid of fake.livePids()) process.kill(pid, 'SIGKILL');
    fake.cleanup();
  }
});

function setUp(protocol: ProtocolFake, behaviour: Behaviour, extra: Partial<AgentOptions> = {}) {
  const fake = protocol.make(behaviour);
  const agent = asAgent({ ...fake.options, ...extra } as AgentOptions);
  open.push({ fake, agent });
  return { fake, agent };
}

/** Consumes a stream to its end, recording whether iteration threw (it must not). */
async function drain(events: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const seen: AgentEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

/** MUST 1 and the JSON rule: one terminal, last; every event unchanged by a JSON round trip. */
function expectConformant(events: AgentEvent[]): AgentEvent {
  const terminals = events.filter((event) => event.type === 'completed' || event.type === 'failed');
  expect(terminals).toHaveLength(1);
  expect(events[events.length - 1]).toBe(terminals[0]);
  for (const event of events) {
    expect(typeof event.type).toBe('string');
    expect(JSON.parse(JSON.stringify(event))).toStrictEqual(event);
  }
  const terminal = terminals[0]!;
  if (isKnownAgentEvent(terminal) && terminal.type === 'failed') {
    expect(typeof terminal.details).toBe('string');
    expect(typeof terminal.retryable).toBe('boolean');
  }
  return terminal;
}

/** The concatenated deltas of one event type. */
function joined(events: AgentEvent[], type: 'text' | 'thinking'): string {
  return events
    .filter((event) => event.type === type)
    .map((event) => (event as { delta: string }).delta)
    .join('');
}

async function waitFor(check: () => boolean, boundMs = 30_000): Promise<void> {
  const until = Date.now() + boundMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(PROTOCOL_FAKES)('asAgent over the $protocol fake', (protocol) => {
  describe('MUST 1 and the mapping', () => {
    it('ends with exactly one completed, last; the text is never doubled and never holds thinking', async () => {
      const { fake, agent } = setUp(protocol, 'answer');
      const events = await drain(agent.invoke({ session: 's' }, { text: 'question' }));
      expect(expectConformant(events)).toStrictEqual({ type: 'completed' });
      expect(joined(events, 'text')).toBe(ANSWER_TEXT);
      expect(joined(events, 'thinking')).toBe(protocol.answer.thinking);
      const started = events.filter((event) => event.type === 'tool_started');
      const ended = events.filter((event) => event.type === 'tool_ended');
      expect(started).toEqual([{ type: 'tool_started', id: expect.any(String), name: 'read', args: protocol.answer.toolArgs }]);
      expect(ended).toEqual([
        { type: 'tool_ended', id: (started[0] as { id: string }).id, isError: false, content: protocol.answer.toolContent },
      ]);
      expect(events.indexOf(started[0]!)).toBeLessThan(events.indexOf(ended[0]!));
      // Everything else is passed through as non-terminal run events.
      for (const event of events) {
        expect(['text', 'thinking', 'tool_started', 'tool_ended', 'completed', 'run_event']).toContain(event.type);
      }
      expect(fake.livePids()).toEqual([]);
    });

    it('collect() gives the whole 1 MiB answer once, from the answer file', async () => {
      const { agent } = setUp(protocol, 'huge-answer');
      const { text } = await collect(agent.invoke({ session: 's' }, { text: 'write a lot' }));
      expect(text.startsWith(HUGE_PREFIX)).toBe(true);
      expect(text.slice(HUGE_PREFIX.length) === HUGE_ANSWER).toBe(true);
    });
  });

  describe('MUST 2: failures are events, never thrown', () => {
    it('a crash mid-turn is one failed { code: crashed, retryable: true }', async () => {
      const { fake, agent } = setUp(protocol, 'crash');
      const terminal = expectConformant(await drain(agent.invoke({ session: 's' }, { text: 'go' })));
      expect(terminal).toMatchObject({ type: 'failed', code: 'crashed', retryable: true });
      expect(fake.livePids()).toEqual([]);
    });

    it('a hung child past its deadline is one failed { code: timed_out, retryable: true }, tree reaped', async () => {
      const { fake, agent } = setUp(protocol, 'hang', { timeoutMs: 1000 });
      const terminal = expectConformant(await drain(agent.invoke({ session: 's' }, { text: 'go' })));
      expect(terminal).toMatchObject({ type: 'failed', code: 'timed_out', retryable: true });
      expect(fake.livePids()).toEqual([]);
    });

    it('a command that cannot start is one failed { code: spawn_failed, retryable: false }', async () => {
      const { agent } = setUp(protocol, 'answer', { command: '/nonexistent/agent-binary' });
      const terminal = expectConformant(await drain(agent.invoke({ session: 's' }, { text: 'go' })));
      expect(terminal).toMatchObject({ type: 'failed', code: 'spawn_failed', retryable: false });
    });

    it('invalid run options and invalid input are one failed each, not a throw', async () => {
      const { agent } = setUp(protocol, 'answer', { killGraceMs: -1 });
      expect(expectConformant(await drain(agent.invoke({ session: 's' }, { text: 'go' })))).toMatchObject({ code: 'invalid_options', retryable: false });
      const { agent: fine } = setUp(protocol, 'answer');
      const bad = fine.invoke(null as never, { text: 'go' });
      expect(expectConformant(await drain(bad))).toMatchObject({ code: 'invalid_input', retryable: false });
    });

    it('collect() throws AgentFailure with details, retryable and code', async () => {
      const { agent } = setUp(protocol, 'crash');
      const failure = await collect(agent.invoke({ session: 's' }, { text: 'go' })).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(AgentFailure);
      expect(failure).toMatchObject({ retryable: true, code: 'crashed' });
      expect((failure as AgentFailure).details).toMatch(/exit/);
    });
  });

  describe('MUST 3: the consumer stops', () => {
    it('break mid quiet tool call: cancelled, then killed; return() resolves once the tree is gone, within 3 s', async () => {
      const { fake, agent } = setUp(protocol, 'quiet-tool');
      const stream = agent.invoke({ session: 's' }, { text: 'go' });
      const seen: AgentEvent[] = [];
      for await (const event of stream) {
        seen.push(event);
        if (event.type === 'tool_started') break; // for-await calls return() and awaits it
      }
      expect(fake.livePids()).toEqual([]);
      expect(seen.some((event) => event.type === 'completed' || event.type === 'failed')).toBe(false);
      expect(await stream.next()).toEqual({ value: undefined, done: true });
    });

    it('return() while a next() is pending does not deadlock; the pending next() ends; no terminal after it', async () => {
      const { fake, agent } = setUp(protocol, 'quiet-tool');
      const stream = agent.invoke({ session: 's' }, { text: 'go' });
      for (;;) {
        const { value } = await stream.next();
        if (value?.type === 'tool_started') break;
      }
      const pending = stream.next(); // nothing will come for a minute
      const started = Date.now();
      const returned = await stream.return!();
      const took = Date.now() - started;
      expect(returned).toEqual({ value: undefined, done: true });
      expect(fake.livePids()).toEqual([]);
      expect(took).toBeLessThan(CLEANUP_BOUND_MS);
      expect(await pending).toEqual({ value: undefined, done: true });
      expect(await stream.next()).toEqual({ value: undefined, done: true });
    });

    it('a child ignoring cancel and SIGTERM, with grandchildren in their own session: all gone within 3 s of return()', async () => {
      const { fake, agent } = setUp(protocol, 'stubborn');
      const stream = agent.invoke({ session: 's' }, { text: 'go' });
      // Pull events until the child has recorded both grandchildren (each pull leaves a next() pending at most briefly).
      let grandchildren: number[] = [];
      while (grandchildren.length < 2) {
        const pulled = await Promise.race([stream.next(), new Promise((resolve) => setTimeout(resolve, 50, 'tick'))]);
        if (typeof pulled === 'object' && (pulled as IteratorResult<AgentEvent>).done) break;
        grandchildren = fake.grandchildPids();
      }
      expect(grandchildren).toHaveLength(2);
      for (const pid of grandchildren) expect(isAlive(pid)).toBe(true);
      const started = Date.now();
      await stream.return!();
      expect(Date.now() - started).toBeLessThan(CLEANUP_BOUND_MS);
      for (const pid of grandchildren) expect(isAlive(pid)).toBe(false);
      expect(fake.livePids()).toEqual([]);
    });

    it('return() before the first next() starts nothing', async () => {
      const { fake, agent } = setUp(protocol, 'answer');
      const stream = agent.invoke({ session: 's' }, { text: 'go' });
      expect(await stream.return!()).toEqual({ value: undefined, done: true });
      expect(await stream.next()).toEqual({ value: undefined, done: true });
      expect(fake.started()).toBe(0);
    });
  });

  describe('cancellation from elsewhere', () => {
    it('an abort signal is one failed { code: aborted, retryable: false }', async () => {
      const controller = new AbortController();
      const { fake, agent } = setUp(protocol, 'quiet-tool', { signal: controller.signal });
      const events: AgentEvent[] = [];
      for await (const event of agent.invoke({ session: 's' }, { text: 'go' })) {
        events.push(event);
        if (event.type === 'tool_started') controller.abort();
      }
      expect(expectConformant(events)).toMatchObject({ type: 'failed', code: 'aborted', retryable: false });
      expect(fake.livePids()).toEqual([]);
    });

    it('dispatch abort is one failed { code: aborted } for the invoke in flight', async () => {
      const { agent } = setUp(protocol, 'quiet-tool');
      const events: AgentEvent[] = [];
      for await (const event of agent.invoke({ session: 's' }, { text: 'go' })) {
        events.push(event);
        if (event.type === 'tool_started') expect((await agent.dispatch('s', { type: 'abort' })).status).toBe('accepted');
      }
      expect(expectConformant(events)).toMatchObject({ type: 'failed', code: 'aborted', retryable: false });
    });

    it('agent.close() ends the invoke in flight with failed aborted; later invokes fail agent_closed', async () => {
      const { agent } = setUp(protocol, 'quiet-tool');
      const events: AgentEvent[] = [];
      for await (const event of agent.invoke({ session: 's' }, { text: 'go' })) {
        events.push(event);
        if (event.type === 'tool_started') void agent.close();
      }
      expect(expectConformant(events)).toMatchObject({ code: 'aborted', retryable: false });
      const later = await drain(agent.invoke({ session: 't' }, { text: 'go' }));
      expect(later).toEqual([{ type: 'failed', code: 'agent_closed', retryable: false, details: expect.any(String) }]);
    });
  });

  describe('sessions', () => {
    it.each(['fresh', 'keep-alive'] as const)('%s: a second invoke on a busy session yields exactly one failed session_busy', async (sessions) => {
      const { fake, agent } = setUp(protocol, 'quiet-tool', { sessions });
      const first = agent.invoke({ session: 's' }, { text: 'go' });
      for (;;) {
        const { value } = await first.next();
        if (value?.type === 'tool_started') break;
      }
      const second = await drain(agent.invoke({ session: 's' }, { text: 'again' }));
      expect(second).toEqual([{ type: 'failed', code: 'session_busy', retryable: true, details: expect.any(String) }]);
      expect(fake.started()).toBe(1);
      await first.return!();
      expect(fake.livePids()).toEqual([]);
    });

    it.runIf(protocol.keepAlive)('keep-alive: invokes of one session share one child; idle sessions close', async () => {
      const { fake, agent } = setUp(protocol, 'answer', { sessions: 'keep-alive', idleTimeoutMs: 300 });
      for (let turn = 0; turn < 2; turn++) {
        const events = await drain(agent.invoke({ session: 's' }, { text: `turn ${turn}` }));
        expectConformant(events);
        expect(joined(events, 'text')).toBe(ANSWER_TEXT);
      }
      expect(fake.started()).toBe(1);
      await waitFor(() => fake.livePids().length === 0);
      // The next invoke starts a new child.
      expectConformant(await drain(agent.invoke({ session: 's' }, { text: 'later' })));
      expect(fake.started()).toBe(2);
      await agent.close();
      expect(fake.livePids()).toEqual([]);
    });

    it.runIf(protocol.keepAlive)('keep-alive: a crash between turns is survived by the next invoke', async () => {
      const { fake, agent } = setUp(protocol, 'answer', { sessions: 'keep-alive' });
      expectConformant(await drain(agent.invoke({ session: 's' }, { text: 'one' })));
      const pids = fake.livePids();
      for (const pid of pids) process.kill(pid, 'SIGKILL');
      // Reaped, not only dead: a prompt written in the instant between the death and the parent's wait
      // could be taken by a protocol without acks (fuseraft) and fail with the crash (see docs/agent.md).
      await waitFor(() => pids.every((pid) => !existsSync(`/proc/${pid}`)));
      expect(expectConformant(await drain(agent.invoke({ session: 's' }, { text: 'two' })))).toEqual({ type: 'completed' });
    });

    it('dispatch on a session with no invoke in flight resolves rejected', async () => {
      const { agent } = setUp(protocol, 'answer');
      expect(await agent.dispatch('nobody', { type: 'steer', text: 'x' })).toMatchObject({ status: 'rejected' });
    });
  });
});

describe("collect()'s text and the run's answer", () => {
  it('text is every streamed piece, the text before a tool call included; outcome.finalText is the answer alone', async () => {
    const child = fakeChild(
      { name: 'reads-then-answers', turns: [{ steps: [{ text: 'Reading the file first. ' }, { tool: 'read_file', result: 'ok' }], answer: 'The answer.' }] },
      { turnTickMs: 5, idleTickMs: 20 },
    );
    try {
      const { text } = await collect(asAgent({ ...child }).invoke({ session: 's' }, { text: 'question' }));
      const outcome = await spawnRun({ ...child, task: 'question' }).outcome;
      expect(text).toBe('Reading the file first. The answer.');
      expect(outcome.finalText).toBe('The answer.');
    } finally {
      child.cleanup();
    }
  });
});
