// The fake fuseraft against seed 002 ("Live sessions"): event shapes, turns, interjections, interrupts, approvals
// answered one per request, questions, the bridge's result and exit codes, signals, transcripts, lifelines.
import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeFuseraft, FUSERAFT_BUILTIN_SCENARIOS, FUSERAFT_BRIDGE_SCENARIO_NAMES, FUSERAFT_REPL_SCENARIO_NAMES, isAlive, waitUntilGone } from '../../../src/testing/index.js';
import type { FakeFuseraft, FuseraftBridgeScenarioName, FuseraftReplScenarioName, FuseraftScenario } from '../../../src/testing/index.js';
import { PipedProcess, reapPiped, staysAlive } from '../../helpers/piped-fake.js';
import { procInfo } from '../../helpers/spawn-procs.js';

const run = promisify(execFile);
const script = resolve(import.meta.dirname, '../../..', 'dist', 'testing', 'fake-fuseraft.js');
type Event = Record<string, unknown>;

const fakes: FakeFuseraft[] = [];
afterEach(async () => {
  await reapPiped();
  for (const fake of fakes.splice(0)) {
    expect(fake.livePids()).toEqual([]);
    fake.cleanup();
  }
});

function repl(scenario: FuseraftScenario | FuseraftReplScenarioName, env: Record<string, string> = {}) {
  const fake = fakeFuseraft('repl', scenario);
  fakes.push(fake);
  return { fake, piped: new PipedProcess(fake, [], { stdin: true, env }) };
}

function bridge(scenario: FuseraftScenario | FuseraftBridgeScenarioName, task = 'fix the bug') {
  const fake = fakeFuseraft('bridge', scenario);
  fakes.push(fake);
  return { fake, piped: new PipedProcess(fake, [task], { stdin: true }) };
}

const prompt = (text: string) => ({ type: 'user_input', text });
const count = (events: Event[], type: string) => events.filter((event) => event['type'] === type).length;
const waitCount = (piped: PipedProcess, type: string, n: number) => piped.waitFor((events) => count(events, type) >= n, `${n} "${type}" events`);

/** Seed 002's events: required fields, then optional ones (`?` in the seed). */
const FIELDS: Record<string, { required: string[]; optional?: string[] }> = {
  turn_start: { required: ['type', 'text'] },
  token: { required: ['type', 'text'] },
  thinking: { required: ['type', 'text'] },
  tool_call: { required: ['type', 'id', 'name', 'summary'], optional: ['args', 'agent'] },
  tool_result: { required: ['type', 'id', 'name', 'ok', 'output'] },
  message_end: { required: ['type', 'turnIndex', 'toolCalls'], optional: ['inputTokens', 'outputTokens', 'cachedInputTokens', 'cumulativeCacheReadTokens'] },
  cancelled: { required: ['type'] },
  error: { required: ['type', 'text'] },
  retrying: { required: ['type', 'attempt', 'max'] },
  interjection: { required: ['type', 'status', 'count'] },
  session_end: { required: ['type'] },
  question: { required: ['type', 'question', 'options', 'allowOther'] },
  agent_starting: { required: ['type', 'agent'] },
  tool_calling: { required: ['type', 'agent', 'tool', 'argsSummary'] },
  token_budget_warning: { required: ['type', 'agent', 'inputTokens', 'warnThreshold'] },
  agent_message: { required: ['type', 'message', 'elapsedMs'] },
  result: { required: ['type', 'sessionId', 'task', 'config', 'succeeded', 'errorMessage', 'exitCode', 'turns', 'elapsedSeconds', 'inputTokens', 'outputTokens'] },
};
const READY = {
  repl: ['type', 'protocolVersion', 'sessionId', 'model', 'title', 'autoTitle', 'midTurnCommands'],
  bridge: ['type', 'protocolVersion', 'sessionId', 'task', 'config', 'resumed', 'agents'],
};
const APPROVAL_FIELDS: Record<string, string[]> = {
  shell_command: ['command'],
  tool_action: ['plugin', 'action', 'detail'],
  file_write: ['plugin', 'action', 'path', 'oldContent', 'newContent'],
  route_approval: ['keyword', 'sourceAgent', 'targetAgent'],
};
const AGENT_MESSAGE = ['agentName', 'role', 'content', 'turnIndex', 'timestamp', 'inputTokens', 'outputTokens', 'isCompactionSummary', 'toolCalls'];
const TURN_END = new Set(['message_end', 'cancelled', 'error']);

/**
 * Every way a session's stdout breaks seed 002: `ready` first with its exact fields; every known event with
 * exactly its fields (with `known` false, unknown types and extra fields are allowed: clients must ignore them); repl turns open with `turn_start`
 * and end with exactly one of `message_end`, `cancelled`, `error`; `session_end` / `result` last.
 */
function fuseraftProblems(events: Event[], mode: 'repl' | 'bridge', known = true): string[] {
  const problems: string[] = [];
  const ready = events[0];
  if (ready?.['type'] !== 'ready') problems.push('the first event is not ready');
  else if (Object.keys(ready).join(',') !== READY[mode].join(',')) problems.push(`ready has ${Object.keys(ready).join(',')}`);
  let open = false;
  events.slice(1).forEach((event, index) => {
    const type = String(event['type']);
    const keys = Object.keys(event);
    if (type === 'approval_request') {
      const kind = String(event['kind']);
      const expected = APPROVAL_FIELDS[kind];
      if (expected !== undefined && keys.join(',') !== ['type', 'kind', ...expected].join(',')) problems.push(`approval ${kind} has ${keys.join(',')}`);
      return;
    }
    const spec = FIELDS[type];
    if (spec === undefined) {
      if (known) problems.push(`event ${index + 1}: unknown type ${type}`);
      return;
    }
    const allowed = [...spec.required, ...(spec.optional ?? [])];
    // With `known` false (noise scenarios), extra fields a newer fuseraft may add are allowed.
    if (spec.required.some((key) => !keys.includes(key)) || (known && keys.some((key) => !allowed.includes(key)))) problems.push(`${type} has ${keys.join(',')}`);
    if (type === 'agent_message') {
      const message = event['message'] as Event;
      if (Object.keys(message).join(',') !== AGENT_MESSAGE.join(',')) problems.push(`AgentMessage has ${Object.keys(message).join(',')}`);
      for (const call of message['toolCalls'] as Event[]) if (Object.keys(call).join(',') !== 'name,argsSummary,succeeded') problems.push('AgentMessage toolCalls fields');
    }
    if (mode === 'repl') {
      if (type === 'turn_start') {
        if (open) problems.push('turn_start inside a turn');
        open = true;
      } else if (TURN_END.has(type) && open) open = false;
      else if (['token', 'thinking', 'tool_call', 'tool_result', 'retrying', 'approval_request', 'question'].includes(type) && !open) problems.push(`${type} outside a turn`);
    }
  });
  const last = String(events.at(-1)?.['type']);
  if (mode === 'repl' && last !== 'session_end') problems.push(`the last event is ${last}`);
  if (mode === 'bridge' && last !== 'result') problems.push(`the last event is ${last}`);
  return problems;
}

describe('fakeFuseraft()', () => {
  it('describes repl and bridge processes; the bridge gets a private config file', () => {
    const chat = fakeFuseraft('repl');
    const session = fakeFuseraft('bridge', 'failure', { transcript: false });
    fakes.push(chat, session);
    expect(chat.args).toEqual([script, 'chat', 'repl', '--vscode', '--no-banner']);
    expect(session.args).toEqual([script, 'failure', 'run', '--bridge', '-c', session.config]);
    expect(session.config).toMatch(/fuseraft\.yaml$/);
    // Spread into spawnRun's options, a fake carries exactly the spawn options.
    expect(Object.keys({ ...session })).toEqual(['command', 'args', 'env']);
    expect(() => fakeFuseraft('bridge', 'chat' as 'success')).toThrow(/unknown built-in scenario/);
    expect(Object.keys(FUSERAFT_BUILTIN_SCENARIOS.repl).sort()).toEqual([...FUSERAFT_REPL_SCENARIO_NAMES].sort());
    expect(Object.keys(FUSERAFT_BUILTIN_SCENARIOS.bridge).sort()).toEqual([...FUSERAFT_BRIDGE_SCENARIO_NAMES].sort());
  });
});

describe('repl --vscode', () => {
  it('chat: ready, one turn per message, message_end with usage; closing stdin ends with session_end, exit 0', async () => {
    const { fake, piped } = repl('chat');
    await piped.waitForType('ready');
    piped.send(prompt('first'));
    await waitCount(piped, 'message_end', 1);
    piped.send(prompt('second'));
    await waitCount(piped, 'message_end', 2);
    piped.child.stdin?.end();
    expect((await piped.exit()).code).toBe(0);
    const events = piped.objects();
    expect(fuseraftProblems(events, 'repl')).toEqual([]);
    expect(events[0]).toMatchObject({ protocolVersion: 1, model: 'fake-model-1', title: null, autoTitle: null });
    const ends = events.filter((event) => event['type'] === 'message_end');
    expect(ends).toEqual([
      { type: 'message_end', turnIndex: 0, toolCalls: ['read_file'], inputTokens: 1200, outputTokens: expect.any(Number) },
      { type: 'message_end', turnIndex: 1, toolCalls: ['read_file'], inputTokens: 2400, outputTokens: expect.any(Number) },
    ]);
    const tokens = events.filter((event) => event['type'] === 'token').map((event) => event['text']).join('');
    expect(tokens).toBe('You asked: firstYou asked: second');
    expect(events.find((event) => event['type'] === 'turn_start')).toEqual({ type: 'turn_start', text: null });
    expect(fake.transcript()).toMatchObject({ exitCode: 0, unexpected: [] });
    expect(fake.transcript().inputs.map((input) => input.as)).toEqual(['user_input', 'user_input']);
  });

  it('interjections: a mid-turn message joins at the next boundary; one after the last boundary is carried to a new turn', async () => {
    const { fake, piped } = repl('interjections');
    await piped.waitForType('ready');
    piped.send(prompt('start'));
    await piped.waitForType('token');
    piped.send(prompt('also this'));
    await piped.waitForType('interjection');
    await waitCount(piped, 'token', 2);
    piped.send(prompt('and later that'));
    await waitCount(piped, 'message_end', 2);
    piped.child.stdin?.end();
    expect((await piped.exit()).code).toBe(0);
    const events = piped.objects();
    expect(fuseraftProblems(events, 'repl')).toEqual([]);
    expect(events.filter((event) => event['type'] === 'interjection')).toEqual([
      { type: 'interjection', status: 'joined', count: 1 },
      { type: 'interjection', status: 'carried', count: 1 },
    ]);
    expect(events.filter((event) => event['type'] === 'turn_start')).toEqual([
      { type: 'turn_start', text: null },
      { type: 'turn_start', text: 'and later that' },
    ]);
    const tokens = events.filter((event) => event['type'] === 'token').map((event) => String(event['text']));
    expect(tokens).toContain('Heard: start / also this');
    expect(tokens.at(-1)).toBe('and later that');
    expect(fake.transcript().inputs.map((input) => input.as)).toEqual(['user_input', 'interjection', 'interjection']);
  });

  it('interrupt mid-turn: queued messages dropped, cancelled, no message_end; idle interrupts are discarded, idle SIGINT acknowledged', async () => {
    const { fake, piped } = repl('slow');
    await piped.waitForType('ready');
    piped.send({ type: 'interrupt' });
    piped.send(prompt('go'));
    await piped.waitForType('token');
    piped.send(prompt('queued'));
    await piped.waitFor(() => fake.transcript().inputs.length === 3, 'the queued message read');
    piped.send({ type: 'interrupt' });
    await piped.waitForType('cancelled');
    piped.child.kill('SIGINT');
    await waitCount(piped, 'cancelled', 2);
    piped.send(prompt('again'));
    await waitCount(piped, 'turn_start', 2);
    piped.child.kill('SIGINT');
    await waitCount(piped, 'cancelled', 3);
    piped.child.stdin?.end();
    expect((await piped.exit()).code).toBe(0);
    const types = piped.objects().map((event) => event['type']);
    expect(types).toEqual(['ready', 'turn_start', 'token', 'interjection', 'cancelled', 'cancelled', 'turn_start', 'token', 'cancelled', 'session_end']);
    expect(piped.objects()[3]).toEqual({ type: 'interjection', status: 'dropped', count: 1 });
    expect(fake.transcript().inputs.map((input) => input.as)).toEqual(['interrupt-idle', 'user_input', 'interjection', 'interrupt', 'user_input']);
    expect(fake.transcript().signals.map((signal) => signal.action)).toEqual(['interrupt-idle', 'interrupt']);
  });

  it('approvals: each request is answered by exactly the next response; malformed counts as denied; the transcript pairs them', async () => {
    const { fake, piped } = repl('approvals');
    await piped.waitForType('ready');
    piped.send(prompt('go'));
    const answers = [{ type: 'approval_response', approved: true }, { type: 'approval_response', approved: false }, { type: 'approval_response', approved: 'yes' }, { type: 'approval_response', approved: true }];
    for (const [index, answer] of answers.entries()) {
      await waitCount(piped, 'approval_request', index + 1);
      piped.send(answer);
    }
    await piped.waitForType('message_end');
    piped.child.stdin?.end();
    expect((await piped.exit()).code).toBe(0);
    const events = piped.objects();
    expect(fuseraftProblems(events, 'repl')).toEqual([]);
    expect(events.filter((event) => event['type'] === 'approval_request').map((event) => event['kind'])).toEqual(['shell_command', 'tool_action', 'file_write', 'network_access']);
    expect(events.filter((event) => event['type'] === 'tool_result').map((event) => event['ok'])).toEqual([true, false, false, true]);
    const transcript = fake.transcript();
    expect(transcript.approvals.map((approval) => [approval.index, approval.request['kind'], approval.approved, approval.how])).toEqual([
      [0, 'shell_command', true, 'response'],
      [1, 'tool_action', false, 'response'],
      [2, 'file_write', false, 'malformed'],
      [3, 'network_access', true, 'response'],
    ]);
    expect(transcript.approvals.map((approval) => approval.line)).toEqual(answers.map((answer) => JSON.stringify(answer)));
    expect(transcript.unexpected).toEqual([]);
  });

  it('approvals: an extra response answers the next request early; another line denies; end of stdin denies', async () => {
    const { fake, piped } = repl('approvals');
    await piped.waitForType('ready');
    piped.send(prompt('go'));
    await waitCount(piped, 'approval_request', 1);
    piped.send({ type: 'approval_response', approved: false });
    piped.send({ type: 'approval_response', approved: true }); // one too many: it will answer request 2
    await waitCount(piped, 'approval_request', 3);
    piped.send({ type: 'question_response', answer: 'x' }); // not an approval: counts as a denial of request 3
    await waitCount(piped, 'approval_request', 4);
    piped.child.stdin?.end();
    expect((await piped.exit()).code).toBe(0);
    const transcript = fake.transcript();
    // The extra response is early only if it is read before request 2 is asked: on a loaded machine the
    // fake may already be asking, and then it answers request 2 as an ordinary response. Both are right.
    const early = transcript.approvals[1]?.how === 'early-response';
    expect(transcript.approvals.map((approval) => [approval.approved, approval.how])).toEqual([
      [false, 'response'],
      [true, early ? 'early-response' : 'response'],
      [false, 'other-line'],
      [false, 'end-of-stdin'],
    ]);
    expect(transcript.unexpected.map((input) => input.as)).toEqual(early ? ['early-response', 'denial'] : ['denial']);
  });

  it('questions: asked only with FUSERAFT_VSCODE_QUESTIONS=1, answered by the next question_response', async () => {
    const asked = repl('questions', { FUSERAFT_VSCODE_QUESTIONS: '1' });
    const silent = repl('questions');
    for (const { piped } of [asked, silent]) {
      await piped.waitForType('ready');
      piped.send(prompt('deploy'));
    }
    await asked.piped.waitForType('question');
    asked.piped.send({ type: 'question_response', answer: 'dev' });
    for (const { piped } of [asked, silent]) {
      await piped.waitForType('message_end');
      piped.child.stdin?.end();
      expect((await piped.exit()).code).toBe(0);
      expect(fuseraftProblems(piped.objects(), 'repl')).toEqual([]);
    }
    expect(asked.piped.objects().find((event) => event['type'] === 'question')).toEqual({ type: 'question', question: 'Which branch?', options: ['main', 'dev'], allowOther: true });
    expect(asked.piped.objects().find((event) => event['type'] === 'token')?.['text']).toBe('Going with: deploy / answer: dev');
    expect(asked.fake.transcript().questions).toMatchObject([{ answer: 'dev', how: 'response' }]);
    expect(count(silent.piped.objects(), 'question')).toBe(0);
  });

  it('error turns end with error and no message_end; the chat goes on', async () => {
    const { piped } = repl('error-turn');
    await piped.waitForType('ready');
    piped.send(prompt('one'));
    await piped.waitForType('error');
    piped.send(prompt('two'));
    await piped.waitForType('message_end');
    piped.child.stdin?.end();
    expect((await piped.exit()).code).toBe(0);
    expect(fuseraftProblems(piped.objects(), 'repl')).toEqual([]);
    expect(piped.objects().map((event) => event['type'])).toEqual(['ready', 'turn_start', 'token', 'error', 'turn_start', 'token', 'message_end', 'session_end']);
  });

  it('big-output caps tool_result.output at 100 000 characters; retrying is an event of the turn', async () => {
    const big = repl('big-output');
    const retry = repl('retrying');
    for (const { piped } of [big, retry]) {
      await piped.waitForType('ready');
      piped.send(prompt('go'));
      await piped.waitForType('message_end');
      piped.child.stdin?.end();
      expect((await piped.exit()).code).toBe(0);
      expect(fuseraftProblems(piped.objects(), 'repl')).toEqual([]);
    }
    expect(String(big.piped.objects().find((event) => event['type'] === 'tool_result')?.['output']).length).toBe(100_000);
    expect(retry.piped.objects().find((event) => event['type'] === 'retrying')).toEqual({ type: 'retrying', attempt: 1, max: 2 });
  });

  it('closing stdin mid-turn lets the turn finish, then session_end', async () => {
    const { piped } = repl({ turns: [{ steps: [{ token: 'a' }, { pause: 300, join: false }, { token: 'b' }] }] });
    await piped.waitForType('ready');
    piped.send(prompt('go'));
    await piped.waitForType('token');
    piped.child.stdin?.end();
    expect((await piped.exit()).code).toBe(0);
    expect(piped.objects().map((event) => event['type']).slice(-3)).toEqual(['token', 'message_end', 'session_end']);
  });

  it('misbehaviours: wrong protocol version, noise lines, a crash mid-turn, SIGTERM', async () => {
    const wrong = repl('wrong-version');
    const noise = repl('noise');
    const crash = repl('crash');
    const term = repl('slow');
    for (const { piped } of [wrong, noise, crash, term]) {
      await piped.waitForType('ready');
      piped.send(prompt('go'));
    }
    await noise.piped.waitForType('message_end');
    await wrong.piped.waitForType('message_end');
    for (const { piped } of [wrong, noise]) piped.child.stdin?.end();
    expect((await wrong.piped.exit()).code).toBe(0);
    expect(wrong.piped.objects()[0]).toMatchObject({ type: 'ready', protocolVersion: 2 });
    expect((await noise.piped.exit()).code).toBe(0);
    expect(noise.piped.lines()[0]).toBe('fuseraft: loading plugins...');
    expect(noise.piped.lines()).toContain('Slash command output leaked to stdout');
    expect(fuseraftProblems(noise.piped.objects(), 'repl', false)).toEqual([]);
    expect(noise.piped.objects().find((event) => 'xFutureField' in event)).toMatchObject({ type: 'token' });
    expect((await crash.piped.exit()).code).toBe(3);
    expect(crash.piped.objects().map((event) => event['type'])).toEqual(['ready', 'turn_start', 'token']);
    await term.piped.waitForType('token');
    term.piped.child.kill('SIGTERM');
    expect((await term.piped.exit()).signal).toBe('SIGTERM');
  });

  it('stubborn: ignores interrupt, SIGINT and SIGTERM; grandchildren in its group and in their own session', async () => {
    const { fake, piped } = repl('stubborn');
    await piped.waitForType('ready');
    piped.send(prompt('go'));
    const until = Date.now() + 30_000;
    while (fake.transcript().grandchildren.length < 2 && Date.now() < until) await sleep(20);
    const [inGroup, ownSession] = fake.transcript().grandchildren as [number, number];
    expect(procInfo(inGroup)?.pgid).toBe(piped.pid);
    expect(procInfo(ownSession)?.sid).toBe(ownSession);
    piped.send({ type: 'interrupt' });
    piped.child.kill('SIGINT');
    await sleep(50);
    piped.child.kill('SIGTERM');
    expect(await staysAlive(piped, 300)).toBe(true);
    expect(count(piped.objects(), 'cancelled')).toBe(0);
    process.kill(-piped.pid, 'SIGKILL');
    expect((await piped.exit()).signal).toBe('SIGKILL');
    expect(await waitUntilGone([inGroup], 10_000)).toEqual([]);
    expect(isAlive(ownSession)).toBe(true);
    process.kill(ownSession, 'SIGKILL');
    expect(await waitUntilGone([ownSession], 10_000)).toEqual([]);
    expect(fake.transcript().inputs.map((input) => input.as)).toEqual(['user_input', 'ignored']);
  });
});

describe('run --bridge', () => {
  it('success: ready, agents, an Orchestrator correction, a budget warning, an approval, result last; exit 0', async () => {
    const { fake, piped } = bridge('success');
    await piped.waitForType('approval_request');
    piped.send({ type: 'user_input', text: 'not read by the bridge' });
    piped.send({ type: 'approval_response', approved: true });
    expect((await piped.exit()).code).toBe(0);
    const events = piped.objects();
    expect(fuseraftProblems(events, 'bridge')).toEqual([]);
    expect(events[0]).toMatchObject({ protocolVersion: 1, task: 'fix the bug', config: fake.config, resumed: false, agents: ['Planner', 'Coder'] });
    const messages = events.filter((event) => event['type'] === 'agent_message').map((event) => event['message'] as Event);
    expect(messages.map((message) => [message['agentName'], message['role']])).toEqual([['Planner', 'assistant'], ['Orchestrator', 'user'], ['Coder', 'assistant']]);
    expect(messages[2]?.['content']).toBe('Done: fix the bug');
    expect(events.at(-1)).toMatchObject({ type: 'result', succeeded: true, errorMessage: null, exitCode: 0, turns: 2, inputTokens: 4500 });
    expect(fake.transcript().approvals).toMatchObject([{ approved: true, how: 'response' }]);
    expect(fake.transcript().unexpected.map((input) => input.as)).toEqual(['ignored']);
  });

  it('failure: result succeeded false with the error, exit with its exitCode; a missing config fails before the start', async () => {
    const failure = bridge('failure');
    expect((await failure.piped.exit()).code).toBe(1);
    expect(fuseraftProblems(failure.piped.objects(), 'bridge')).toEqual([]);
    expect(failure.piped.objects().at(-1)).toMatchObject({ succeeded: false, errorMessage: 'Max turns reached without a terminating keyword.', exitCode: 1, turns: 1 });
    const fake = fakeFuseraft('bridge', 'success', { config: '/nonexistent/fuseraft.yaml' });
    fakes.push(fake);
    const missing = new PipedProcess(fake, ['x'], { stdin: true });
    expect((await missing.exit()).code).toBe(1);
    expect(missing.objects()).toEqual([
      expect.objectContaining({ type: 'result', sessionId: null, succeeded: false, errorMessage: 'Config file not found: /nonexistent/fuseraft.yaml', exitCode: 1 }),
    ]);
  });

  for (const how of ['interrupt', 'SIGINT'] as const) {
    it(`slow: ${how} cancels the session: result succeeded false, exit 130`, async () => {
      const { piped } = bridge('slow');
      await piped.waitForType('agent_starting');
      if (how === 'interrupt') piped.send({ type: 'interrupt' });
      else piped.child.kill('SIGINT');
      expect((await piped.exit()).code).toBe(130);
      expect(fuseraftProblems(piped.objects(), 'bridge')).toEqual([]);
      expect(piped.objects().at(-1)).toMatchObject({ type: 'result', succeeded: false, errorMessage: 'Session cancelled.', exitCode: 130 });
    });
  }

  it('approvals: a route_approval and an unknown kind, one response each', async () => {
    const { fake, piped } = bridge('approvals');
    await waitCount(piped, 'approval_request', 1);
    piped.send({ type: 'approval_response', approved: true });
    await waitCount(piped, 'approval_request', 2);
    piped.send({ type: 'approval_response', approved: false });
    expect((await piped.exit()).code).toBe(0);
    expect(fuseraftProblems(piped.objects(), 'bridge')).toEqual([]);
    expect(fake.transcript().approvals.map((approval) => [approval.request['kind'], approval.approved])).toEqual([['route_approval', true], ['budget_increase', false]]);
  });

  it('misbehaviours: wrong version, noise, a crash with no result', async () => {
    const wrong = bridge('wrong-version');
    const noise = bridge('noise');
    const crash = bridge('crash');
    for (const { piped } of [wrong, noise]) piped.child.stdin?.end();
    expect((await wrong.piped.exit()).code).toBe(0);
    expect(wrong.piped.objects()[0]).toMatchObject({ type: 'ready', protocolVersion: 2 });
    expect((await noise.piped.exit()).code).toBe(0);
    expect(noise.piped.lines()[0]).toBe('fuseraft: loading config...');
    expect(fuseraftProblems(noise.piped.objects(), 'bridge', false)).toEqual([]);
    expect((await crash.piped.exit()).code).toBe(3);
    expect(crash.piped.objects().map((event) => event['type'])).toEqual(['ready', 'agent_starting', 'agent_message']);
  });

  it('exits when its parent dies (orphaned mid-session)', async () => {
    const fake = fakeFuseraft('bridge', 'slow');
    fakes.push(fake);
    const middleScript = `
      const { spawn } = require('node:child_process');
      const child = spawn(process.argv[1], process.argv.slice(2), { stdio: 'ignore', detached: true });
      console.log(child.pid);
      setInterval(() => {}, 1000);`;
    const middle = spawn(process.execPath, ['-e', middleScript, fake.command, ...fake.args, 'x'], { env: { ...process.env, ...fake.env }, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const childPid = await new Promise<number>((resolvePid) => middle.stdout.once('data', (data: Buffer) => resolvePid(Number(String(data).trim()))));
      const until = Date.now() + 20_000;
      while (fake.transcripts()[0]?.events.length !== 2 && Date.now() < until) await sleep(20);
      middle.kill('SIGKILL');
      expect(await waitUntilGone([childPid], 15_000)).toEqual([]);
      expect(fake.transcript()).toMatchObject({ exitCode: 1, complete: true });
    } finally {
      middle.kill('SIGKILL');
    }
  });
});

describe('the command line', () => {
  it('refuses what fuseraft refuses (exit 1) and a malformed scenario (exit 2)', async () => {
    for (const argv of [['repl'], ['repl', '--vscode', '--bogus'], ['run', '-c', 'x', 'task'], ['run', '--bridge', '--hitl', '-c', 'x', 'task'], ['run', '--bridge', 'task'], ['run', '--bridge', '-c', 'x'], []]) {
      const failure = await run(process.execPath, [script, ...argv], { timeout: 30_000 }).catch((error: unknown) => error);
      expect(failure, argv.join(' ')).toMatchObject({ code: 1, stdout: '' });
    }
    const fake = fakeFuseraft('repl', { turns: [{ steps: [{ nope: 1 }] }] } as never, { transcript: false });
    fakes.push(fake);
    const failure = await run(fake.command, fake.args, { env: { ...process.env, ...fake.env } }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 2, stderr: expect.stringContaining('turns[0].steps[0] must be an object') });
    expect((await run(process.execPath, [script, '--help'])).stdout).toContain('usage: subvisor-fake-fuseraft');
  });
});
