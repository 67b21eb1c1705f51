// The real codex app-server (the pinned 0.169.0 in .agents/) through every cell against fakeModel: each with the invariants
// of every protocol (one outcome within the bound, the last event one exit equal to it, no process of the tree left).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnRun } from '../../src/index.js';
import type { ApprovalRequest, RateLimitFields, RunOptions } from '../../src/index.js';
import { agentBinary } from '../helpers/agent-binaries.js';
import { parentSigkillCell, poolCell, supervisePipelineCell, traceCell } from '../helpers/agent-common-cells.js';
import type { CellAgent } from '../helpers/agent-common-cells.js';
import type { AgentHarness } from '../helpers/agent-harness.js';
import { ANSWER, cellOptions, finishRun, openCell, runs, streamed, THINKING, until } from '../helpers/agent-cells.js';

const codexOptions = (cell: AgentHarness, extra: Partial<RunOptions> = {}): RunOptions => cellOptions('codex', cell, extra);
const codex: CellAgent = { agent: 'codex', options: codexOptions };

/** Opens a cell and runs `body` (the harness kills what is left and removes the folders when the test finishes). */
async function inCell(turns: Parameters<typeof openCell>[1], body: (cell: AgentHarness) => Promise<void>): Promise<void> {
  await body(await openCell('codex', turns));
}

describe.skipIf(agentBinary('codex') === undefined)('codex (codex 0.169.0 app-server in .agents/)', () => {
  it('honest: the answer, the thread id as session id, token usage and no cost; no secret in what the caller sees', async () => {
    await inCell([{ text: ANSWER }], async (cell) => {
      const config = readFileSync(cell.setup.files[0]!, 'utf8');
      const { events, outcome } = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'Say the answer' })));
      // The app-server README says thread/start marks the project trusted in config.toml: 0.169.0 does not.
      expect(readFileSync(cell.setup.files[0]!, 'utf8')).toBe(config);
      expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER, turns: 1, protocol: 'codex', model: 'fake-model' });
      expect(outcome.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(outcome.usage?.inputTokens).toBeGreaterThan(0);
      expect(outcome.usage?.outputTokens).toBeGreaterThan(0);
      expect(outcome.usage?.costUsd).toBeUndefined();
      expect(cell.model.turnRequests[0]?.userText).toBe('Say the answer');
      const key = cell.env['FAKE_MODEL_API_KEY']!;
      expect(JSON.stringify([events, outcome])).not.toContain(key);
    });
  });

  it('thinking: the reasoning streams as thinking and never reaches the answer', async () => {
    await inCell([{ thinking: `I think ${THINKING} here`, text: ANSWER }], async (cell) => {
      const { events, outcome } = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'Think, then answer' })));
      expect(streamed(events, 'assistant-thinking-delta')).toContain(THINKING);
      expect(streamed(events, 'assistant-text-delta')).toBe(ANSWER);
      expect(outcome.finalText).toBe(ANSWER);
      expect(JSON.stringify(outcome)).not.toContain(THINKING);
    });
  });

  it('tool-approved: approve sees the command, the file the tool writes exists, its output reaches the model', async () => {
    await inCell([{ text: 'I will create the file.', shell: 'touch allowed.txt && echo made' }, { text: 'Created it.' }], async (cell) => {
      const asked: ApprovalRequest[] = [];
      const run = spawnRun(codexOptions(cell, { task: 'Create allowed.txt', approve: (request) => (asked.push(request), request.known) }));
      const { events, outcome } = await finishRun(cell, run);
      expect(existsSync(join(cell.cwd, 'allowed.txt'))).toBe(true);
      expect(asked).toEqual([expect.objectContaining({ protocol: 'codex', kind: 'shell_command', command: expect.stringContaining('touch allowed.txt && echo made') })]);
      expect(events.find((event) => event.type === 'tool-call')).toMatchObject({ name: 'commandExecution', arguments: { command: expect.stringContaining('touch allowed.txt') } });
      expect(events.find((event) => event.type === 'tool-result')).toMatchObject({ isError: false, result: 'made\n' });
      expect(cell.model.turnRequests[1]?.toolResults[0]?.output).toContain('made');
      expect(outcome).toMatchObject({ status: 'done', finalText: 'Created it.' });
    });
  });

  it('tool-denied: without approve the command is declined, the file does not exist, the turn goes on', async () => {
    await inCell([{ text: 'I will create the file.', shell: 'touch denied.txt' }, { text: 'It was refused.' }], async (cell) => {
      const { events, outcome } = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'Create denied.txt' })));
      expect(existsSync(join(cell.cwd, 'denied.txt'))).toBe(false);
      expect(events.find((event) => event.type === 'tool-result')).toMatchObject({ isError: true });
      expect(events.find((event) => event.type === 'info' && event.nativeType === 'approval_response')).toMatchObject({ approved: false, decidedBy: 'no-callback' });
      expect(cell.model.turnRequests[1]?.toolResults[0]?.output).toContain('rejected');
      expect(outcome).toMatchObject({ status: 'done', finalText: 'It was refused.' });
    });
  });

  it('cancel-mid-stream: turn/interrupt stops the stream, the run ends cancelled', async () => {
    const pieces = Array.from({ length: 40 }, (_, i) => `piece${i} `);
    await inCell([{ text: pieces, delayMs: 250 }], async (cell) => {
      const run = spawnRun(codexOptions(cell, { task: 'Stream slowly' }));
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

  it('cancel-mid-command: a running command and its grandchild are gone with the run (turn/interrupt leaves them; the ladder does not)', async () => {
    await inCell([{ text: 'Sleeping.', shell: "sh -c 'sleep 60 & wait'" }, { text: 'never' }], async (cell) => {
      const run = spawnRun(codexOptions(cell, { task: 'Sleep', approve: () => true }));
      const ran = finishRun(cell, run);
      await until(() => runs(cell, 'sleep'), 60_000, 'the command sleeping');
      await run.cancel();
      const { outcome } = await ran;
      expect(outcome.status).toBe('cancelled');
    });
  });

  it('deadline-hang: a stream that hangs ends timed-out at the deadline, nothing left', async () => {
    await inCell([{ text: 'working', hang: true }], async (cell) => {
      const { outcome, ms } = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'Hang', timeoutMs: 20_000 })));
      expect(outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline' });
      expect(ms).toBeLessThan(20_000 + 3 * 2000 + 10_000);
    });
  });

  it('second-prompt: a second turn in the same thread, then close', async () => {
    await inCell([{ text: 'first answer' }, { text: 'second answer' }], async (cell) => {
      const run = spawnRun(codexOptions(cell, { task: 'First', keepAlive: true }));
      let completes = 0;
      run.on('event', (event) => {
        if (event.type !== 'turn-complete') return;
        completes++;
        if (completes === 1) void run.prompt('Second');
        else void run.close();
      });
      const { outcome } = await finishRun(cell, run);
      expect(outcome).toMatchObject({ status: 'done', turns: 2, finalText: 'second answer' });
      expect(cell.model.turnRequests.map((request) => request.userText)).toEqual(['First', 'Second']);
      expect(cell.model.turnRequests[1]?.userTexts).toEqual(['First', 'Second']);
    });
  });

  it("model-400: the run ends failed with the model's own message", async () => {
    await inCell(() => ({ error: { status: 400, message: 'scripted failure: bad request' } }), async (cell) => {
      const { outcome } = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'Fail' })));
      expect(outcome).toMatchObject({ status: 'failed', error: 'scripted failure: bad request' });
    });
  });

  it('steer: turn/steer reaches the model within the same turn', async () => {
    const pieces = ['one ', 'two ', 'three ', 'four ', 'five ', 'six ', 'seven ', 'eight'];
    await inCell([{ text: pieces, delayMs: 400 }, { text: 'After the steer, banana.' }], async (cell) => {
      const run = spawnRun(codexOptions(cell, { task: 'Count slowly' }));
      let delivery: Promise<string | undefined> | undefined;
      let status: string | undefined;
      run.on('event', (event) => {
        if (event.type !== 'assistant-text-delta' || delivery !== undefined) return;
        const ack = run.steer('STEER: also say banana');
        delivery = ack.then((answer) => ((status = answer.status), answer.delivery));
      });
      const { events, outcome } = await finishRun(cell, run);
      expect(status).toBe('accepted');
      expect(await delivery).toBe('injected');
      expect(events.some((event) => event.type === 'steering-injected')).toBe(true);
      expect(cell.model.turnRequests[1]?.userTexts).toEqual(['Count slowly', 'STEER: also say banana']);
      expect(cell.model.turnRequests[0]?.ended).toBe('client-closed');
      expect(outcome).toMatchObject({ status: 'done', turns: 1, finalText: 'After the steer, banana.' });
    });
  });

  it('rate-limit: a 429 Codex retries gives rate-limit news, then the answer', async () => {
    await inCell([{ error: { status: 429, message: 'scripted rate limit', retryAfterSeconds: 1 } }, { text: ANSWER }], async (cell) => {
      const run = spawnRun(codexOptions(cell, { task: 'Answer despite the limit' }));
      const heard: RateLimitFields[] = [];
      run.on('rate-limit', (report) => heard.push(report));
      const { events, outcome } = await finishRun(cell, run);
      expect(heard[0]).toMatchObject({ status: 'limited', httpStatus: 429, agentRetries: true, nativeType: 'error', attempt: 1 });
      expect(events.filter((event) => event.type === 'rate-limit')).toHaveLength(heard.length);
      expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER });
    });
  });

  it('parent-sigkill: a parent killed with SIGKILL while a command sleeps leaves nothing of the tree', () => parentSigkillCell(codex));

  it('supervise-pipeline: supervise --protocol codex prints the answer into a pipe and exits 0', () => supervisePipelineCell(codex));

  it('resume: a second run resumes the thread by its id and the model sees the first exchange', async () => {
    await inCell([{ text: 'Remember 7.' }, { text: 'It was 7.' }], async (cell) => {
      const first = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'Remember 7' })));
      const threadId = first.outcome.sessionId!;
      const second = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'What was it?', resume: threadId })));
      expect(second.outcome).toMatchObject({ status: 'done', finalText: 'It was 7.', sessionId: threadId });
      expect(cell.model.turnRequests[1]?.userTexts).toEqual(['Remember 7', 'What was it?']);
      const unknown = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'x', resume: '01a24e1b-0000-7000-8000-000000000000' })));
      expect(unknown.outcome).toMatchObject({ status: 'failed', errorCode: 'unknown-session' });
    });
  });

  it('policy: -c approval_policy="never" in args lets Codex run the command without asking (sandboxed to cwd)', async () => {
    await inCell([{ shell: 'touch never-asked.txt' }, { text: 'Done.' }], async (cell) => {
      const asked: ApprovalRequest[] = [];
      const run = spawnRun(codexOptions(cell, { task: 'Touch it', args: ['-c', 'approval_policy="never"'], approve: (request) => (asked.push(request), false) }));
      const { events, outcome } = await finishRun(cell, run);
      expect(asked).toEqual([]);
      expect(existsSync(join(cell.cwd, 'never-asked.txt'))).toBe(true);
      expect(events.find((event) => event.type === 'ready')).toMatchObject({ extra: { approvalPolicy: 'never' } });
      expect(outcome.status).toBe('done');
    });
  });

  it('output-schema: the schema goes with turn/start (Codex asks the model for strict JSON), the answer becomes outcome.data', async () => {
    await inCell([{ text: '{"answer": 42}' }], async (cell) => {
      const outputSchema = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'], additionalProperties: false };
      const { outcome } = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'Answer as JSON', outputSchema })));
      expect(outcome).toMatchObject({ status: 'done', data: { answer: 42 } });
      const body = cell.model.turnRequests[0]?.body as { text?: { format?: unknown } };
      expect(body.text?.format).toMatchObject({ type: 'json_schema', strict: true, schema: outputSchema });
    });
  });

  it('pool: a warm codex child takes the task, its run is journaled, the budget counts its turns', () => poolCell(codex));

  it('trace: with an OpenTelemetry SDK the run has its span, and codex its context in TRACEPARENT', () => traceCell(codex));
});
