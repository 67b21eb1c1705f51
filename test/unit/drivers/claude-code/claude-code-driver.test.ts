// The claude-code driver against a scripted Claude Code over a linked in-memory stdio pair (lines shaped like 2.1.328's): the handshake, turns, cost, permissions, cancel, steer and follow-up delivery, bad lines, the end.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLAUDE_FLAGS, claudeArgs, claudeCodeProtocol } from '../../../../src/drivers/claude-code/claude-code-driver.js';
import type { Control, Driver, DriverSink, SendOutcome } from '../../../../src/protocol/driver.js';
import type { ResolvedRunOptions } from '../../../../src/protocol/resolved-options.js';
import type { ApproveCallback } from '../../../../src/protocol/requests.js';
import { linkedStdio } from '../../../../src/testing/linked-stdio.js';
import type { StdioPeer } from '../../../../src/testing/linked-stdio.js';

const SESSION = '3e87b100-c440-4014-a40c-47aad42c842e';

/** Every fact the driver reported, in order, as short strings, and the events and other facts in full. */
function recorder() {
  const log: string[] = [];
  const events: Array<Record<string, unknown>> = [];
  const turns: Array<{ turn: number; stopReason: string; usage?: Record<string, unknown> }> = [];
  const results: Array<{ finalText?: string; usage?: unknown }> = [];
  const sink = {
    event: (event: Record<string, unknown>) => {
      events.push(event);
      log.push(`event ${String(event['type'])}`);
    },
    rejected: (event: { code: string }) => void log.push(`rejected ${event.code}`),
    lineAhead: () => undefined,
    ready: () => void log.push('ready'),
    ack: (ref: number, status: string, reason?: string) => void log.push(`ack ${ref} ${status}${reason === undefined ? '' : `: ${reason}`}`),
    delivery: (ref: number, delivery: string) => void log.push(`delivery ${ref} ${delivery}`),
    turnStarted: (turn: number) => void log.push(`turnStarted ${turn}`),
    turnCompleted: (report: { turn: number; stopReason: string; usage?: Record<string, unknown> }) => {
      turns.push(report);
      log.push(`turnCompleted ${report.turn} ${report.stopReason}`);
    },
    toolCalled: () => void log.push('toolCalled'),
    modelCall: () => undefined,
    result: (result: { answer: Promise<{ finalText?: string }>; usage?: unknown }) => {
      void result.answer.then((answer) => results.push({ ...(answer.finalText === undefined ? {} : { finalText: answer.finalText }), usage: result.usage }));
      log.push('result');
    },
    exit: (exit: { status: string; error?: string }) => void log.push(`exit ${exit.status}${exit.error === undefined ? '' : `: ${exit.error}`}`),
    fatal: (code: string, error: string) => void log.push(`fatal ${code}: ${error}`),
    broken: (reason: string) => void log.push(`broken ${reason}`),
    gone: () => void log.push('gone'),
    session: (id: string) => void log.push(`session ${id}`),
    rateLimit: (fields: { status: string }) => void log.push(`rateLimit ${fields.status}`),
    blocked: () => undefined,
    unblocked: () => undefined,
  } as unknown as DriverSink;
  return { sink, log, events, turns, results };
}

function options(extra: Partial<ResolvedRunOptions> = {}): ResolvedRunOptions {
  return {
    protocol: 'claude-code',
    command: 'claude',
    args: [],
    task: 'Say hello',
    resume: undefined,
    runId: 'run-1',
    maxFrameBytes: 1024 * 1024,
    maxAnswerChars: 1_000_000,
    readyTimeoutMs: 30_000,
    outputSchema: undefined,
    approve: undefined,
    budget: undefined,
    env: {},
    ...extra,
  } as ResolvedRunOptions;
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Waits (turn by turn, at most 1000 of them) until `check` holds. */
async function until(check: () => boolean): Promise<void> {
  for (let turns = 0; !check() && turns < 1000; turns++) await turn();
  expect(check()).toBe(true);
}

/** A driver on a linked pair, its recorder, and the scripted Claude Code's end of the pair. */
function started(extra: Partial<ResolvedRunOptions> = {}) {
  const record = recorder();
  const driver: Driver = claudeCodeProtocol.create({ runId: 'run-1', startedAt: Date.now(), options: options(extra), sink: record.sink, shouldPause: () => false, backpressure: () => false });
  const launch = driver.launch();
  const { io, peer } = linkedStdio();
  driver.attach!(io);
  const written = () => peer.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return { driver, launch, peer, written, ...record };
}

/** Answers subvisor's initialize (the first line it wrote). */
async function answerInitialize(peer: StdioPeer): Promise<void> {
  const initialize = JSON.parse(await peer.nextLine()) as { request_id: string; request: { subtype: string } };
  expect(initialize.request.subtype).toBe('initialize');
  peer.send({ type: 'control_response', response: { subtype: 'success', request_id: initialize.request_id, response: { commands: [] } } });
}

/** One plain turn as 2.1.328 writes it: init, the replay, deltas, the whole text, the result with the process's cost so far. */
function playTurn(peer: StdioPeer, text: string, totalCostUsd: number, replay?: string): void {
  peer.send({ type: 'system', subtype: 'init', session_id: SESSION, model: 'claude-opus-5-5', cwd: '/tmp/x', tools: ['Bash'] });
  if (replay !== undefined) peer.send({ type: 'user', message: { role: 'user', content: replay }, session_id: SESSION, parent_tool_use_id: null, isReplay: true });
  peer.send({ type: 'stream_event', event: { type: 'message_start', message: { model: 'claude-opus-5-5', usage: { input_tokens: 100 } } }, session_id: SESSION });
  peer.send({ type: 'stream_event', event: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }, session_id: SESSION });
  peer.send({ type: 'stream_event', event: { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } }, session_id: SESSION });
  peer.send({ type: 'assistant', message: { id: 'm1', role: 'assistant', content: [{ type: 'text', text }] }, session_id: SESSION, parent_tool_use_id: null });
  peer.send({ type: 'result', subtype: 'success', is_error: false, result: text, terminal_reason: 'completed', total_cost_usd: totalCostUsd, usage: { input_tokens: 100, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, iterations: [] }, session_id: SESSION });
}

function send(driver: Driver, control: Control): number {
  const outcome: SendOutcome = driver.send(control);
  if (outcome.kind !== 'sent') throw new Error(`not sent: ${JSON.stringify(outcome)}`);
  return outcome.ref;
}

describe('claude-code driver', () => {
  it('starts claude with its stream-json flags, the budget, resume, then the caller args; refuses args that change the channel', () => {
    expect(claudeArgs({ args: ['--model', 'opus'], budget: { maxTurns: 3, maxCostUsd: 0.5 }, resume: SESSION })).toEqual([...CLAUDE_FLAGS, '--max-turns', '3', '--max-budget-usd', '0.5', '--resume', SESSION, '--model', 'opus']);
    expect(CLAUDE_FLAGS).toEqual(expect.arrayContaining(['--input-format', 'stream-json', '--permission-prompt-tool', 'stdio', '--include-partial-messages', '--replay-user-messages']));
    expect(() => claudeCodeProtocol.validate(options({ args: ['--output-format=text'] }))).toThrow(/--output-format/);
    expect(() => claudeCodeProtocol.validate(options({ args: ['--model', 'x'] }))).not.toThrow();
    expect(claudeCodeProtocol).toMatchObject({ defaultCommand: 'claude', resumes: true, asksApproval: true, reports: { costUsd: true } });
  });

  it('writes the task behind initialize, is ready once initialize is answered; a turn is its result: usage, the cost, the answer; close ends stdin, exit 0 is done', async () => {
    const { driver, launch, peer, written, log, events, turns, results } = started();
    expect(launch).toMatchObject({ taskRef: 1, process: { command: 'claude', stdin: 'pipe', stdout: 'driver' } });
    await until(() => peer.lines.length === 2);
    expect(written()[1]).toEqual({ type: 'user', message: { role: 'user', content: 'Say hello' }, parent_tool_use_id: null, session_id: '' });
    expect(log).toEqual([]);
    await answerInitialize(peer);
    await until(() => log.length === 5);
    expect(log).toEqual(['ready', 'event ready', 'ack 1 accepted', 'turnStarted 1', 'event turn-started']);
    playTurn(peer, 'Hello.', 0.05, 'Say hello');
    await until(() => turns.length === 1);
    expect(log).toContain(`session ${SESSION}`);
    expect(events.map((event) => event['type'])).toEqual(['ready', 'turn-started', 'agent-started', 'user', 'llm-start', 'assistant-text-delta', 'llm-end', 'assistant-text', 'turn-complete']);
    expect(events.find((event) => event['type'] === 'llm-end')).toMatchObject({ stopReason: 'end_turn', usage: { inputTokens: 100, outputTokens: 5 } });
    expect(turns[0]).toMatchObject({ turn: 1, stopReason: 'end_turn', usage: { inputTokens: 100, outputTokens: 5, costUsd: 0.05 } });
    send(driver, { type: 'close' });
    await until(() => peer.inputEnded);
    peer.end();
    await driver.finish({ exitCode: 0, signal: null, spawnFailed: false });
    await until(() => results.length === 1);
    expect(results[0]).toMatchObject({ finalText: 'Hello.' });
    expect(log.at(-1)).toBe('exit done');
    driver.dispose();
  });

  it("counts the cost of each turn as the growth of the process's cumulative total_cost_usd", async () => {
    const { driver, peer, turns } = started({ task: undefined });
    await answerInitialize(peer);
    await until(() => peer.inputEnded === false && peer.lines.length === 1);
    await turn();
    send(driver, { type: 'prompt', text: 'one' });
    playTurn(peer, 'first', 0.05);
    await until(() => turns.length === 1);
    send(driver, { type: 'prompt', text: 'two' });
    playTurn(peer, 'second', 0.125);
    await until(() => turns.length === 2);
    expect(turns.map((report) => report.usage?.['costUsd'])).toEqual([0.05, 0.075]);
    driver.dispose();
  });

  it('permissions: no approve denies; approve true allows with the input unchanged; a withdrawn question gets no answer', async () => {
    let release: (answer: boolean) => void = () => undefined;
    const approve: ApproveCallback = (request) => (request.kind === 'shell_command' && request.known && request.command === 'ls' ? true : new Promise<boolean>((resolve) => (release = resolve)));
    const { peer, written, events, log } = started({ approve });
    await answerInitialize(peer);
    const ask = (id: string, tool: string, input: Record<string, unknown>) => peer.send({ type: 'control_request', request_id: id, request: { subtype: 'can_use_tool', tool_name: tool, input, tool_use_id: `t-${id}` } });
    ask('q1', 'Bash', { command: 'ls' });
    await until(() => written().some((line) => line['type'] === 'control_response'));
    const answer = written().find((line) => line['type'] === 'control_response');
    expect(answer).toEqual({ type: 'control_response', response: { subtype: 'success', request_id: 'q1', response: { behavior: 'allow', updatedInput: { command: 'ls' } } } });
    // 2.1.328 with --replay-user-messages echoes subvisor's answer back: no bad line. A second echo of it is one.
    peer.send(answer!);
    peer.send(answer!);
    await until(() => log.some((entry) => entry.startsWith('rejected')));
    expect(log.filter((entry) => entry.startsWith('rejected'))).toEqual(['rejected invalid']);
    ask('q2', 'Write', { file_path: '/tmp/x', content: 'y' });
    await until(() => events.some((event) => event['nativeType'] === 'can_use_tool' && event['requestId'] === 'q2'));
    peer.send({ type: 'control_cancel_request', request_id: 'q2' });
    await until(() => events.some((event) => event['nativeType'] === 'control_cancel_request'));
    release(true);
    await turn();
    expect(written().filter((line) => line['type'] === 'control_response')).toHaveLength(1);

    const plain = started();
    await answerInitialize(plain.peer);
    plain.peer.send({ type: 'control_request', request_id: 'q3', request: { subtype: 'can_use_tool', tool_name: 'Bash', input: { command: 'rm -rf x' } } });
    await until(() => plain.written().some((line) => line['type'] === 'control_response'));
    expect(plain.written().find((line) => line['type'] === 'control_response')).toMatchObject({ response: { request_id: 'q3', response: { behavior: 'deny', message: expect.stringContaining('no approve callback') } } });
    expect(plain.events.find((event) => event['nativeType'] === 'approval_response')).toMatchObject({ approved: false, decidedBy: 'no-callback', kind: 'shell_command' });
  });

  it('cancel: interrupt, then stdin ends after the aborted result; Claude Code exiting 1 is cancelled', async () => {
    const { driver, peer, written, log } = started();
    await answerInitialize(peer);
    await until(() => peer.lines.length === 2);
    send(driver, { type: 'cancel' });
    await until(() => peer.lines.length === 3);
    const interrupt = written()[2] as { request_id: string; request: unknown };
    expect(interrupt).toMatchObject({ type: 'control_request', request: { subtype: 'interrupt' } });
    expect(peer.inputEnded).toBe(false);
    peer.send({ type: 'control_response', response: { subtype: 'success', request_id: interrupt.request_id, response: { still_queued: [] } } });
    peer.send({ type: 'user', message: { role: 'user', content: [{ type: 'text', text: '[Request interrupted by user]' }] }, session_id: SESSION });
    peer.send({ type: 'result', subtype: 'success', is_error: false, terminal_reason: 'aborted_streaming', total_cost_usd: 0.01, usage: {} });
    await until(() => peer.inputEnded);
    expect(log).toContain('turnCompleted 1 aborted');
    peer.end();
    await driver.finish({ exitCode: 1, signal: null, spawnFailed: false });
    expect(log.at(-1)).toBe('exit cancelled');
  });

  it('cancel before ready: the task written behind initialize is interrupted, and stdin ends after its aborted result', async () => {
    const { driver, peer, written, log } = started();
    await until(() => peer.lines.length === 2);
    send(driver, { type: 'cancel' });
    await until(() => peer.lines.length === 3);
    expect(written()[2]).toMatchObject({ type: 'control_request', request: { subtype: 'interrupt' } });
    expect(peer.inputEnded).toBe(false);
    await answerInitialize(peer);
    peer.send({ type: 'result', subtype: 'error_during_execution', is_error: false, terminal_reason: 'aborted_streaming', total_cost_usd: 0, usage: {} });
    await until(() => peer.inputEnded);
    expect(log).not.toContain('ready');
    peer.end();
    await driver.finish({ exitCode: 1, signal: null, spawnFailed: false });
    expect(log.at(-1)).toBe('exit cancelled');
  });

  it('steer mid-turn: written at once, accepted, delivered when Claude Code replays it; one never replayed is dropped at the exit', async () => {
    const { driver, peer, written, log, events } = started();
    await answerInitialize(peer);
    await until(() => peer.lines.length === 2);
    const steer = send(driver, { type: 'steer', text: 'also say banana' });
    await until(() => peer.lines.length === 3);
    expect(written()[2]).toMatchObject({ type: 'user', message: { content: 'also say banana' } });
    await until(() => log.includes(`ack ${steer} accepted`));
    expect(log).not.toContain(`delivery ${steer} injected`);
    peer.send({ type: 'user', message: { role: 'user', content: 'also say banana' }, session_id: SESSION, isReplay: true });
    await until(() => log.includes(`delivery ${steer} injected`));
    expect(events.find((event) => event['type'] === 'steering-injected')).toMatchObject({ text: 'also say banana', ref: steer });
    const late = send(driver, { type: 'steer', text: 'never read' });
    await until(() => peer.lines.length === 4);
    peer.end();
    await driver.finish({ exitCode: null, signal: 'SIGKILL', spawnFailed: false });
    expect(log).toContain(`delivery ${late} dropped`);
  });

  it('follow-up mid-turn: held until the result, then written as the next turn and delivered', async () => {
    const { driver, peer, written, log, turns } = started();
    await answerInitialize(peer);
    await until(() => peer.lines.length === 2);
    const followUp = send(driver, { type: 'follow-up', text: 'and then?' });
    await turn();
    await turn();
    expect(peer.lines).toHaveLength(2);
    playTurn(peer, 'first', 0.01);
    await until(() => peer.lines.length === 3);
    expect(written()[2]).toMatchObject({ type: 'user', message: { content: 'and then?' } });
    expect(log).toContain(`delivery ${followUp} injected`);
    expect(log).toContain('turnStarted 2');
    playTurn(peer, 'second', 0.02);
    await until(() => turns.length === 2);
    driver.dispose();
  });

  it("a failed result carries the model's message: after the end of stdin, exit 1 is failed with it", async () => {
    const { driver, peer, log } = started();
    await answerInitialize(peer);
    peer.send({ type: 'result', subtype: 'success', is_error: true, api_error_status: 400, result: 'API Error: 400 bad request', terminal_reason: 'api_error', total_cost_usd: 0, usage: {} });
    await until(() => log.includes('turnCompleted 1 error'));
    send(driver, { type: 'close' });
    await until(() => peer.inputEnded);
    peer.end();
    await driver.finish({ exitCode: 1, signal: null, spawnFailed: false });
    expect(log.at(-1)).toBe('exit failed: API Error: 400 bad request');
  });

  it('--resume of a session Claude Code does not have: its first result says so, the run fails unknown-session', async () => {
    const { peer, log } = started({ resume: '01a24e1b-0000-4000-8000-000000000000' });
    await answerInitialize(peer);
    peer.send({ type: 'result', subtype: 'error_during_execution', is_error: true, num_turns: 0, total_cost_usd: 0, usage: {}, errors: ['No conversation found with session ID: 01a24e1b-0000-4000-8000-000000000000'] });
    await until(() => log.some((entry) => entry.startsWith('fatal')));
    expect(log.at(-1)).toBe('fatal unknown-session: claude could not resume the session: No conversation found with session ID: 01a24e1b-0000-4000-8000-000000000000');
    const plain = started();
    await answerInitialize(plain.peer);
    plain.peer.send({ type: 'result', subtype: 'error_during_execution', is_error: true, num_turns: 0, total_cost_usd: 0, usage: {}, errors: ['No conversation found with session ID: x'] });
    await until(() => plain.log.includes('turnCompleted 1 error'));
    expect(plain.log.some((entry) => entry.startsWith('fatal'))).toBe(false);
  });

  it('bad lines are rejected and the run goes on; a request it does not serve gets an error answer; rate-limit news is reported', async () => {
    const { driver, peer, written, log, events } = started();
    await answerInitialize(peer);
    peer.send('this is not JSON');
    peer.send({ type: 'control_response', response: { subtype: 'success', request_id: 'nobody' } });
    peer.send({ type: 'assistant', message: 'not an object' });
    peer.send({ type: 'control_request', request_id: 'h1', request: { subtype: 'hook_callback', callback_id: 'x' } });
    peer.send({ type: 'system', subtype: 'api_retry', attempt: 1, max_retries: 10, retry_delay_ms: 1127, error_status: 429, error: 'rate_limit' });
    peer.send({ type: 'some_future_type', detail: 1 });
    playTurn(peer, 'still fine', 0.01);
    await until(() => log.includes('turnCompleted 1 end_turn') && written().some((line) => line['type'] === 'control_response'));
    expect(log.filter((entry) => entry.startsWith('rejected'))).toEqual(['rejected malformed', 'rejected invalid', 'rejected invalid-payload']);
    expect(written().find((line) => line['type'] === 'control_response')).toEqual({ type: 'control_response', response: { subtype: 'error', request_id: 'h1', error: 'subvisor does not serve hook_callback' } });
    expect(log).toContain('rateLimit limited');
    expect(events.find((event) => event['type'] === 'rate-limit')).toMatchObject({ status: 'limited', retryAfterMs: 1127, httpStatus: 429, agentRetries: true, attempt: 1, maxAttempts: 10 });
    expect(events.find((event) => event['type'] === 'info' && event['nativeType'] === 'some_future_type')).toMatchObject({ extra: { detail: 1 } });
    driver.dispose();
  });

  it('a tool call and its result: the call from the assistant message, the result named after it', async () => {
    const { driver, peer, events, log } = started();
    await answerInitialize(peer);
    peer.send({ type: 'assistant', message: { id: 'm1', content: [{ type: 'thinking', thinking: 'hmm' }, { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } }] }, parent_tool_use_id: null });
    peer.send({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a\nb', is_error: false }] }, parent_tool_use_id: null });
    await until(() => events.some((event) => event['type'] === 'tool-result'));
    expect(events.find((event) => event['type'] === 'assistant-thinking')).toMatchObject({ text: 'hmm', contentIndex: 0 });
    expect(events.find((event) => event['type'] === 'tool-call')).toMatchObject({ name: 'Bash', id: 'toolu_1', arguments: { command: 'ls' } });
    expect(events.find((event) => event['type'] === 'tool-result')).toMatchObject({ name: 'Bash', toolCallId: 'toolu_1', isError: false, result: 'a\nb' });
    expect(log).toContain('toolCalled');
    driver.dispose();
  });

  it('removes the socket a killed Claude Code leaves ($XDG_RUNTIME_DIR/cc-socks/<pid>.sock), and nothing that is not a socket', async () => {
    const runtime = mkdtempSync(join(tmpdir(), 'claude-runtime-'));
    const server = createServer();
    try {
      mkdirSync(join(runtime, 'cc-socks'));
      const socket = join(runtime, 'cc-socks', '4242.sock');
      await new Promise<void>((resolve) => server.listen(socket, resolve));
      const killed = started({ env: { XDG_RUNTIME_DIR: runtime } });
      killed.peer.end();
      await killed.driver.finish({ exitCode: null, signal: 'SIGKILL', spawnFailed: false });
      expect(existsSync(socket)).toBe(false);
      writeFileSync(socket, 'not a socket');
      const other = started({ env: { XDG_RUNTIME_DIR: runtime } });
      other.peer.end();
      await other.driver.finish({ exitCode: 0, signal: null, spawnFailed: false });
      expect(existsSync(socket)).toBe(true);
    } finally {
      server.close();
      rmSync(runtime, { recursive: true, force: true });
    }
  });
});
