// The real Claude Code (the pinned 2.1.328 in .agents/) through every cell against fakeModel: each with the invariants
// of every protocol (one outcome within the bound, the last event one exit equal to it, no process of the tree left).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnRun } from '../../src/index.js';
import type { ApprovalRequest, Delivery, RateLimitFields, RunOptions } from '../../src/index.js';
import { agentBinary } from '../helpers/agent-binaries.js';
import { parentSigkillCell, poolCell, supervisePipelineCell, traceCell } from '../helpers/agent-common-cells.js';
import type { CellAgent } from '../helpers/agent-common-cells.js';
import type { AgentHarness } from '../helpers/agent-harness.js';
import { ANSWER, cellOptions, finishRun, openCell, runs, streamed, THINKING, until } from '../helpers/agent-cells.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const claudeOptions = (cell: AgentHarness, extra: Partial<RunOptions> = {}): RunOptions => cellOptions('claude-code', cell, extra);
const claude: CellAgent = { agent: 'claude-code', options: claudeOptions };

/** Claude Code's sockets in the cell's runtime folder ($XDG_RUNTIME_DIR/cc-socks): one is left by a killed process. */
function sockets(cell: AgentHarness): string[] {
  const dir = join(cell.env['XDG_RUNTIME_DIR']!, 'cc-socks');
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Opens a cell and runs `body` (the harness kills what is left and removes the folders when the test finishes). */
async function inCell(turns: Parameters<typeof openCell>[1], body: (cell: AgentHarness) => Promise<void>): Promise<void> {
  await body(await openCell('claude-code', turns));
}

describe.skipIf(agentBinary('claude') === undefined)('claude-code (Claude Code 2.1.328 in .agents/)', () => {
  it('honest: the answer, the session id, token usage and the cost; no secret in what the caller sees', async () => {
    await inCell([{ text: ANSWER }], async (cell) => {
      const { events, outcome } = await finishRun(cell, spawnRun(claudeOptions(cell, { task: 'Say the answer' })));
      expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER, turns: 1, protocol: 'claude-code' });
      expect(outcome.sessionId).toMatch(UUID);
      expect(outcome.usage?.inputTokens).toBeGreaterThan(0);
      expect(outcome.usage?.outputTokens).toBeGreaterThan(0);
      expect(outcome.usage?.costUsd).toBeGreaterThan(0);
      expect(typeof outcome.model).toBe('string');
      expect(events.find((event) => event.type === 'ready')).toBeDefined();
      expect(cell.model.turnRequests[0]?.userText).toBe('Say the answer');
      const key = cell.env['ANTHROPIC_API_KEY']!;
      expect(key.length).toBeGreaterThan(0);
      expect(JSON.stringify([events, outcome])).not.toContain(key);
    });
  });

  it('thinking: the thinking streams as thinking and never reaches the answer', async () => {
    await inCell([{ thinking: `I think ${THINKING} here`, text: ANSWER }], async (cell) => {
      const { events, outcome } = await finishRun(cell, spawnRun(claudeOptions(cell, { task: 'Think, then answer' })));
      expect(streamed(events, 'assistant-thinking-delta')).toContain(THINKING);
      expect(events.find((event) => event.type === 'assistant-thinking')).toMatchObject({ text: `I think ${THINKING} here` });
      expect(streamed(events, 'assistant-text-delta')).toBe(ANSWER);
      expect(outcome.finalText).toBe(ANSWER);
      expect(JSON.stringify(outcome)).not.toContain(THINKING);
    });
  });

  it('tool-approved: approve sees the Bash command, the file the tool writes exists, its output reaches the model', async () => {
    await inCell([{ text: 'I will create the file.', shell: 'touch allowed.txt && echo made' }, { text: 'Created it.' }], async (cell) => {
      const asked: ApprovalRequest[] = [];
      const run = spawnRun(claudeOptions(cell, { task: 'Create allowed.txt', approve: (request) => (asked.push(request), request.known) }));
      const { events, outcome } = await finishRun(cell, run);
      expect(existsSync(join(cell.cwd, 'allowed.txt'))).toBe(true);
      expect(asked).toEqual([expect.objectContaining({ protocol: 'claude-code', kind: 'shell_command', command: 'touch allowed.txt && echo made' })]);
      expect(events.find((event) => event.type === 'tool-call')).toMatchObject({ name: 'Bash', arguments: { command: 'touch allowed.txt && echo made' } });
      expect(events.find((event) => event.type === 'tool-result')).toMatchObject({ name: 'Bash', isError: false, result: 'made' });
      expect(cell.model.turnRequests[1]?.toolResults[0]?.output).toContain('made');
      expect(outcome).toMatchObject({ status: 'done', finalText: 'Created it.', turns: 1 });
      // 2.1.328 echoes subvisor's answer to its permission question: no rejected line for it.
      expect(outcome.rejectedLines).toBe(0);
      expect(events.filter((event) => event.type === 'rejected')).toEqual([]);
    });
  });

  it('tool-denied: without approve the command is denied, the file does not exist, the turn goes on', async () => {
    await inCell([{ text: 'I will create the file.', shell: 'touch denied.txt' }, { text: 'It was refused.' }], async (cell) => {
      const { events, outcome } = await finishRun(cell, spawnRun(claudeOptions(cell, { task: 'Create denied.txt' })));
      expect(existsSync(join(cell.cwd, 'denied.txt'))).toBe(false);
      expect(events.find((event) => event.type === 'info' && event.nativeType === 'approval_response')).toMatchObject({ approved: false, decidedBy: 'no-callback' });
      expect(events.find((event) => event.type === 'tool-result')).toMatchObject({ isError: true });
      expect(cell.model.turnRequests[1]?.toolResults[0]).toMatchObject({ isError: true, output: expect.stringContaining('Denied') });
      expect(outcome).toMatchObject({ status: 'done', finalText: 'It was refused.' });
    });
  });

  it('cancel-mid-stream: interrupt stops the stream, the run ends cancelled', async () => {
    const pieces = Array.from({ length: 40 }, (_, i) => `piece${i} `);
    await inCell([{ text: pieces, delayMs: 250 }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'Stream slowly' }));
      run.on('event', (event) => {
        if (event.type === 'assistant-text-delta') void run.cancel();
      });
      const { events, outcome } = await finishRun(cell, run);
      expect(outcome.status).toBe('cancelled');
      expect(streamed(events, 'assistant-text-delta').length).toBeLessThan(pieces.join('').length);
      expect(events.find((event) => event.type === 'turn-complete')).toMatchObject({ stopReason: 'aborted' });
      expect(cell.model.turnRequests[0]?.ended).toBe('client-closed');
    });
  });

  it('cancel-mid-command: a running Bash command (its own session) and its grandchild are gone with the run', async () => {
    await inCell([{ text: 'Sleeping.', shell: "sh -c 'sleep 60 & wait'" }, { text: 'never' }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'Sleep', approve: () => true }));
      const ran = finishRun(cell, run);
      await until(() => runs(cell, 'sleep'), 60_000, 'the command sleeping');
      await run.cancel();
      const { outcome } = await ran;
      expect(outcome.status).toBe('cancelled');
      expect(sockets(cell)).toEqual([]);
    });
  });

  it('deadline-hang: a stream that hangs ends timed-out at the deadline, nothing left', async () => {
    await inCell([{ text: 'working', hang: true }], async (cell) => {
      const { outcome, ms } = await finishRun(cell, spawnRun(claudeOptions(cell, { task: 'Hang', timeoutMs: 20_000 })));
      expect(outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline' });
      expect(ms).toBeLessThan(20_000 + 3 * 2000 + 10_000);
      expect(sockets(cell)).toEqual([]);
    });
  });

  it('second-prompt: a second turn in the same conversation, then close; the cost is the latest figure, not a sum', async () => {
    await inCell([{ text: 'first answer' }, { text: 'second answer' }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'First', keepAlive: true }));
      const costs: number[] = [];
      run.on('event', (event) => {
        if (event.type !== 'turn-complete') return;
        costs.push(Number((event.extra as { total_cost_usd?: number } | undefined)?.total_cost_usd));
        if (costs.length === 1) void run.prompt('Second');
        else void run.close();
      });
      const { outcome } = await finishRun(cell, run);
      expect(outcome).toMatchObject({ status: 'done', turns: 2, finalText: 'second answer' });
      expect(cell.model.turnRequests.map((request) => request.userText)).toEqual(['First', 'Second']);
      expect(cell.model.turnRequests[1]?.userTexts).toEqual(['First', 'Second']);
      expect(costs[1]).toBeGreaterThan(costs[0]!);
      expect(outcome.usage?.costUsd).toBe(costs[1]);
    });
  });

  it("model-400: the run ends failed with the model's own message", async () => {
    await inCell(() => ({ error: { status: 400, message: 'scripted failure: bad request' } }), async (cell) => {
      const { outcome } = await finishRun(cell, spawnRun(claudeOptions(cell, { task: 'Fail' })));
      expect(outcome).toMatchObject({ status: 'failed', error: 'API Error: 400 scripted failure: bad request' });
    });
  });

  it('steer: a steer sent while a tool runs reaches the model within the same turn, delivered when Claude Code takes it up', async () => {
    await inCell([{ text: 'Waiting a moment.', shell: 'sleep 2' }, { text: 'After the steer, banana.' }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'Wait, then answer', approve: () => true }));
      let delivery: Promise<Delivery | undefined> | undefined;
      let status: string | undefined;
      run.on('event', (event) => {
        if (event.type !== 'tool-call' || delivery !== undefined) return;
        delivery = run.steer('STEER: also say banana').then((answer) => ((status = answer.status), answer.delivery));
      });
      const { events, outcome } = await finishRun(cell, run);
      expect(status).toBe('accepted');
      expect(await delivery).toBe('injected');
      expect(events.find((event) => event.type === 'steering-injected')).toMatchObject({ text: 'STEER: also say banana' });
      expect(cell.model.turnRequests[1]?.latestTexts.join('\n')).toContain('STEER: also say banana');
      expect(outcome).toMatchObject({ status: 'done', turns: 1, finalText: 'After the steer, banana.' });
    });
  });

  it('steer while text streams (no tool call left): Claude Code runs it as the next turn, delivered when it takes it up', async () => {
    const pieces = ['one ', 'two ', 'three ', 'four'];
    await inCell([{ text: pieces, delayMs: 300 }, { text: 'After the steer, banana.' }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'Count' }));
      let delivery: Promise<Delivery | undefined> | undefined;
      run.on('event', (event) => {
        if (event.type !== 'assistant-text-delta' || delivery !== undefined) return;
        delivery = run.steer('STEER: also say banana').then((answer) => answer.delivery);
      });
      const { events, outcome } = await finishRun(cell, run);
      expect(await delivery).toBe('injected');
      expect(events.find((event) => event.type === 'steering-injected')).toMatchObject({ text: 'STEER: also say banana' });
      expect(cell.model.turnRequests.map((request) => request.userText)).toEqual(['Count', 'STEER: also say banana']);
      expect(outcome).toMatchObject({ status: 'done', turns: 2, finalText: 'After the steer, banana.' });
    });
  });

  it('follow-up: a follow-up sent mid-turn waits for the turn, then is the next turn', async () => {
    const pieces = ['one ', 'two ', 'three ', 'four'];
    await inCell([{ text: pieces, delayMs: 300 }, { text: 'The follow-up answer.' }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'Count' }));
      let delivery: Promise<Delivery | undefined> | undefined;
      run.on('event', (event) => {
        if (event.type !== 'assistant-text-delta' || delivery !== undefined) return;
        delivery = run.followUp('And then?').then((answer) => answer.delivery);
      });
      const { events, outcome } = await finishRun(cell, run);
      expect(await delivery).toBe('injected');
      expect(events.find((event) => event.type === 'follow-up-injected')).toMatchObject({ text: 'And then?' });
      expect(cell.model.turnRequests.map((request) => request.userText)).toEqual(['Count', 'And then?']);
      expect(outcome).toMatchObject({ status: 'done', turns: 2, finalText: 'The follow-up answer.' });
    });
  });

  it('finalize: mid-stream, the turn is interrupted, then the note is one last turn whose answer is the run\'s', async () => {
    const pieces = Array.from({ length: 40 }, (_, i) => `piece${i} `);
    await inCell([{ text: pieces, delayMs: 250 }, { text: 'The final answer.' }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'Stream slowly' }));
      let asked = false;
      run.on('event', (event) => {
        if (event.type !== 'assistant-text-delta' || asked) return;
        asked = true;
        void run.finalize('Stop now and give the final answer.');
      });
      const { events, outcome } = await finishRun(cell, run);
      expect(events.filter((event) => event.type === 'turn-complete').map((event) => event.stopReason)).toEqual(['aborted', 'end_turn']);
      // 2.1.328 puts its own "[Request interrupted by user]" before the next user text.
      expect(cell.model.turnRequests[1]?.userText).toBe('[Request interrupted by user]\n\nStop now and give the final answer.');
      expect(outcome).toMatchObject({ status: 'done', turns: 2, finalText: 'The final answer.' });
    });
  });

  it('rate-limit: a 429 Claude Code retries gives rate-limit news (system/api_retry), then the answer', async () => {
    await inCell([{ error: { status: 429, message: 'scripted rate limit', retryAfterSeconds: 1 } }, { text: ANSWER }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'Answer despite the limit' }));
      const heard: RateLimitFields[] = [];
      run.on('rate-limit', (report) => heard.push(report));
      const { events, outcome } = await finishRun(cell, run);
      expect(heard[0]).toMatchObject({ status: 'limited', httpStatus: 429, agentRetries: true, nativeType: 'system/api_retry', attempt: 1 });
      expect(events.filter((event) => event.type === 'rate-limit')).toHaveLength(heard.length);
      expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER });
    });
  });

  it('parent-sigkill: a parent killed with SIGKILL while a Bash command sleeps leaves nothing of the tree', () =>
    // With its parent gone Claude Code's stdin ends: it exits by itself and removes its socket.
    parentSigkillCell(claude, (cell) => expect(sockets(cell)).toEqual([])));

  it('supervise-pipeline: supervise --protocol claude-code prints the answer into a pipe and exits 0', () => supervisePipelineCell(claude));

  it('resume: a second run resumes the session by its id (close let Claude Code write it) and the model sees the first exchange', async () => {
    await inCell([{ text: 'Remember 7.' }, { text: 'It was 7.' }], async (cell) => {
      const first = await finishRun(cell, spawnRun(claudeOptions(cell, { task: 'Remember 7' })));
      const sessionId = first.outcome.sessionId!;
      const second = await finishRun(cell, spawnRun(claudeOptions(cell, { task: 'What was it?', resume: sessionId })));
      expect(second.outcome).toMatchObject({ status: 'done', finalText: 'It was 7.', sessionId });
      expect(cell.model.turnRequests[1]?.userTexts).toEqual(['Remember 7', 'What was it?']);
      const unknown = await finishRun(cell, spawnRun(claudeOptions(cell, { task: 'x', resume: '01a24e1b-0000-4000-8000-000000000000' })));
      expect(unknown.outcome).toMatchObject({ status: 'failed', errorCode: 'unknown-session' });
      expect(unknown.outcome.error).toContain('No conversation found with session ID: 01a24e1b-0000-4000-8000-000000000000');
      expect(cell.model.turnRequests).toHaveLength(2);
    });
  });

  it('budget: maxTurns becomes --max-turns: Claude Code stops after one model request, the run fails with its message', async () => {
    await inCell([{ text: 'Running.', shell: 'echo one' }, { text: 'never' }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'Run it', approve: () => true, budget: { maxTurns: 1 } }));
      const { outcome } = await finishRun(cell, run);
      expect(cell.model.turnRequests).toHaveLength(1);
      // subvisor's own count reached its limit too: its verdict names both.
      expect(outcome.status).toBe('failed');
      expect(outcome.error).toContain('Reached maximum number of turns (1)');
    });
  });

  it("budget: maxCostUsd becomes --max-budget-usd: past it Claude Code ends the turn, the run fails with its message and its cost", async () => {
    await inCell([{ text: 'Running.', shell: 'touch costly.txt' }, { text: 'never' }], async (cell) => {
      const run = spawnRun(claudeOptions(cell, { task: 'Run it', approve: () => true, budget: { maxCostUsd: 0.01 } }));
      const { events, outcome } = await finishRun(cell, run);
      expect(cell.model.turnRequests).toHaveLength(1);
      expect(events.find((event) => event.type === 'turn-complete')).toMatchObject({ stopReason: 'error', extra: { subtype: 'error_max_budget_usd', terminal_reason: 'budget_exhausted' } });
      expect(outcome.status).toBe('failed');
      expect(outcome.error).toContain('Reached maximum budget ($0.01)');
      expect(outcome.usage?.costUsd).toBeGreaterThan(0.01);
    });
  });

  it('output-schema: the JSON answer becomes outcome.data', async () => {
    await inCell([{ text: '{"answer": 42}' }], async (cell) => {
      const outputSchema = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'], additionalProperties: false };
      const { outcome } = await finishRun(cell, spawnRun(claudeOptions(cell, { task: 'Answer as JSON', outputSchema })));
      expect(outcome).toMatchObject({ status: 'done', data: { answer: 42 } });
    });
  });

  it('pool: a warm Claude Code child takes the task, its run is journaled, the budget counts its turns', () => poolCell(claude));

  it('trace: with an OpenTelemetry SDK the run has its span, and Claude Code its context in TRACEPARENT', () => traceCell(claude));
});
