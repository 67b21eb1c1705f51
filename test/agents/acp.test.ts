// The real Gemini CLI (the pinned 0.61.0 in .agents/, `gemini --acp`) through protocol 'acp' in every cell against
// fakeModel: each with the invariants of every protocol (one outcome within the bound, the last event one exit equal to
// it, no process of the tree left: Gemini CLI relaunches itself as a child node process, so the tree has a grandchild).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnRun } from '../../src/index.js';
import type { Ack, ApprovalRequest, RunOptions } from '../../src/index.js';
import { agentBinary } from '../helpers/agent-binaries.js';
import { parentSigkillCell, poolCell, supervisePipelineCell, traceCell } from '../helpers/agent-common-cells.js';
import type { CellAgent } from '../helpers/agent-common-cells.js';
import type { AgentHarness } from '../helpers/agent-harness.js';
import { ANSWER, cellOptions, finishRun, openCell, runs, streamed, THINKING, until } from '../helpers/agent-cells.js';

/** Opens a cell and runs `body` (the harness kills what is left and removes the folders when the test finishes). */
async function inCell(turns: Parameters<typeof openCell>[1], body: (cell: AgentHarness) => Promise<void>): Promise<void> {
  await body(await openCell('gemini', turns));
}

/** The options of a Gemini CLI cell's run (`gemini --acp`), with `extra`. */
const acpOptions = (cell: AgentHarness, extra: Partial<RunOptions> = {}): RunOptions => cellOptions('acp', cell, { args: ['--acp'], ...extra });
const gemini: CellAgent = { agent: 'gemini', options: acpOptions };

describe.skipIf(agentBinary('gemini') === undefined)('acp (Gemini CLI 0.61.0, gemini --acp, in .agents/)', () => {
  it('honest: the answer, the session id, token usage and no cost; no secret in what the caller sees', async () => {
    await inCell([{ text: ANSWER }], async (cell) => {
      const { events, outcome } = await finishRun(cell, spawnRun(acpOptions(cell, { task: 'Say the answer' })));
      expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER, turns: 1, protocol: 'acp' });
      expect(outcome.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(outcome.usage?.inputTokens).toBeGreaterThan(0);
      expect(outcome.usage?.outputTokens).toBeGreaterThan(0);
      expect(outcome.usage?.costUsd).toBeUndefined();
      expect(events.find((event) => event.type === 'info' && event.nativeType === 'authMethods')).toBeDefined();
      expect(cell.model.turnRequests[0]?.userText).toBe('Say the answer');
      const key = cell.env['FAKE_MODEL_API_KEY'] ?? cell.env['GEMINI_API_KEY']!;
      expect(JSON.stringify([events, outcome])).not.toContain(key);
    });
  });

  it('thinking: the thoughts stream as thinking and never reach the answer', async () => {
    await inCell([{ thinking: `I think ${THINKING} here`, text: ANSWER }], async (cell) => {
      const { events, outcome } = await finishRun(cell, spawnRun(acpOptions(cell, { task: 'Think, then answer' })));
      // Gemini CLI 0.61.0 sends each thought part as "**subject**\ndescription": fakeModel's parts have no subject.
      expect(streamed(events, 'assistant-thinking-delta').replaceAll('****\n', '')).toContain(THINKING);
      expect(streamed(events, 'assistant-text-delta')).toBe(ANSWER);
      expect(outcome.finalText).toBe(ANSWER);
      expect(JSON.stringify(outcome)).not.toContain(THINKING);
    });
  });

  it('tool-approved: approve sees the tool call, the file the tool writes exists, its output reaches the model', async () => {
    await inCell([{ text: 'I will create the file.', shell: 'touch allowed.txt && echo made' }, { text: 'Created it.' }], async (cell) => {
      const asked: ApprovalRequest[] = [];
      const run = spawnRun(acpOptions(cell, { task: 'Create allowed.txt', approve: (request) => (asked.push(request), request.known) }));
      const { events, outcome } = await finishRun(cell, run);
      expect(existsSync(join(cell.cwd, 'allowed.txt'))).toBe(true);
      expect(asked).toEqual([expect.objectContaining({ protocol: 'acp', kind: 'tool_call', known: true, toolKind: 'execute', title: expect.stringContaining('touch allowed.txt') })]);
      expect(events.find((event) => event.type === 'tool-call')).toMatchObject({ name: 'execute' });
      expect(events.find((event) => event.type === 'tool-result')).toMatchObject({ isError: false });
      expect(cell.model.turnRequests[1]?.toolResults[0]?.output).toContain('made');
      expect(outcome).toMatchObject({ status: 'done', finalText: 'Created it.' });
    });
  });

  it('tool-denied: without approve the reject_once option is chosen, the file does not exist, the turn goes on', async () => {
    await inCell([{ text: 'I will create the file.', shell: 'touch denied.txt' }, { text: 'It was refused.' }], async (cell) => {
      const { events, outcome } = await finishRun(cell, spawnRun(acpOptions(cell, { task: 'Create denied.txt' })));
      expect(existsSync(join(cell.cwd, 'denied.txt'))).toBe(false);
      expect(events.find((event) => event.type === 'tool-result')).toMatchObject({ isError: true });
      expect(events.find((event) => event.type === 'info' && event.nativeType === 'approval_response')).toMatchObject({ approved: false, decidedBy: 'no-callback' });
      expect(outcome).toMatchObject({ status: 'done', finalText: 'It was refused.' });
    });
  });

  it('cancel-mid-stream: session/cancel stops the stream, the prompt answers cancelled, the run ends cancelled', async () => {
    const pieces = Array.from({ length: 40 }, (_, i) => `piece${i} `);
    await inCell([{ text: pieces, delayMs: 250 }], async (cell) => {
      const run = spawnRun(acpOptions(cell, { task: 'Stream slowly' }));
      run.on('event', (event) => {
        if (event.type === 'assistant-text-delta') void run.cancel();
      });
      const { events, outcome } = await finishRun(cell, run);
      expect(outcome.status).toBe('cancelled');
      expect(streamed(events, 'assistant-text-delta').length).toBeLessThan(pieces.join('').length);
      expect(events.find((event) => event.type === 'turn-complete')).toMatchObject({ stopReason: 'aborted' });
    });
  });

  it('cancel-mid-command: an approved command and its grandchild are gone with the cancelled run', async () => {
    await inCell([{ text: 'Sleeping.', shell: "sh -c 'sleep 60 & wait'" }, { text: 'never' }], async (cell) => {
      const run = spawnRun(acpOptions(cell, { task: 'Sleep', approve: () => true }));
      const ran = finishRun(cell, run);
      await until(() => runs(cell, 'sleep'), 60_000, 'the command sleeping');
      await run.cancel();
      const { outcome } = await ran;
      expect(outcome.status).toBe('cancelled');
    });
  });

  it('rate-limit: a 429 Gemini CLI retries by itself (no news of it on ACP), then the answer', async () => {
    await inCell([{ error: { status: 429, message: 'scripted rate limit', retryAfterSeconds: 1 } }, { text: ANSWER }], async (cell) => {
      const { events, outcome } = await finishRun(cell, spawnRun(acpOptions(cell, { task: 'Answer despite the limit' })));
      expect(events.filter((event) => event.type === 'rate-limit')).toEqual([]);
      expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER });
    });
  });

  it('output-schema: the answer is checked against the schema and becomes outcome.data', async () => {
    await inCell([{ text: '{"answer": 42}' }], async (cell) => {
      const outputSchema = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'], additionalProperties: false };
      const { outcome } = await finishRun(cell, spawnRun(acpOptions(cell, { task: 'Answer as JSON', outputSchema })));
      expect(outcome).toMatchObject({ status: 'done', data: { answer: 42 } });
    });
  });

  it("finalize mid-stream: session/cancel, then the note as one last prompt whose answer is the run's", async () => {
    const pieces = Array.from({ length: 40 }, (_, i) => `piece${i} `);
    await inCell([{ text: pieces, delayMs: 250 }, { text: 'Final summary.' }], async (cell) => {
      const run = spawnRun(acpOptions(cell, { task: 'Stream slowly' }));
      let asked = false;
      run.on('event', (event) => {
        if (event.type !== 'assistant-text-delta' || asked) return;
        asked = true;
        void run.finalize('FINALIZE: summarise now.');
      });
      const { events, outcome } = await finishRun(cell, run);
      expect(events.filter((event) => event.type === 'turn-complete').map((event) => event.stopReason)).toEqual(['aborted', 'end_turn']);
      expect(cell.model.turnRequests.at(-1)?.userText).toBe('FINALIZE: summarise now.');
      expect(outcome).toMatchObject({ status: 'done', turns: 2, finalText: 'Final summary.' });
    });
  });

  it('deadline-hang: a stream that hangs ends timed-out at the deadline, nothing left', async () => {
    await inCell([{ text: 'working', hang: true }], async (cell) => {
      const { outcome, ms } = await finishRun(cell, spawnRun(acpOptions(cell, { task: 'Hang', timeoutMs: 30_000 })));
      expect(outcome).toMatchObject({ status: 'timed-out', errorCode: 'deadline' });
      expect(ms).toBeLessThan(30_000 + 3 * 2000 + 10_000);
    });
  });

  it('second-prompt: a second prompt in the same session, then close', async () => {
    await inCell([{ text: 'first answer' }, { text: 'second answer' }], async (cell) => {
      const run = spawnRun(acpOptions(cell, { task: 'First', keepAlive: true }));
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

  it("model-400: the prompt's JSON-RPC error ends the run failed with the model's message", async () => {
    await inCell(() => ({ error: { status: 400, message: 'scripted failure: bad request' } }), async (cell) => {
      const { outcome } = await finishRun(cell, spawnRun(acpOptions(cell, { task: 'Fail' })));
      expect(outcome).toMatchObject({ status: 'failed', error: 'scripted failure: bad request' });
    });
  });

  it('steer: refused while a prompt runs (ACP v1 has no steer); a follow-up is queued as the next prompt', async () => {
    const pieces = ['one ', 'two ', 'three ', 'four ', 'five ', 'six'];
    await inCell([{ text: pieces, delayMs: 300 }, { text: 'After the follow-up, banana.' }], async (cell) => {
      const run = spawnRun(acpOptions(cell, { task: 'Count slowly' }));
      let steer: Promise<Ack> | undefined;
      let followUp: Promise<Ack> | undefined;
      run.on('event', (event) => {
        if (event.type !== 'assistant-text-delta' || steer !== undefined) return;
        steer = run.steer('STEER: also say banana');
        followUp = run.followUp('FOLLOW-UP: say banana');
      });
      const { outcome } = await finishRun(cell, run);
      expect(await steer).toMatchObject({ status: 'rejected', reason: expect.stringContaining('ACP v1 has no steer') });
      expect(await followUp).toMatchObject({ status: 'accepted' });
      expect(await (await followUp!).delivery).toBe('injected');
      expect(cell.model.turnRequests.map((request) => request.userText)).toEqual(['Count slowly', 'FOLLOW-UP: say banana']);
      expect(outcome).toMatchObject({ status: 'done', turns: 2, finalText: 'After the follow-up, banana.' });
    });
  });

  it('parent-sigkill: a parent killed with SIGKILL while a command sleeps leaves nothing of the tree', () => parentSigkillCell(gemini));

  it('supervise-pipeline: supervise --protocol acp -- gemini --acp prints the answer into a pipe and exits 0', () => supervisePipelineCell(gemini));

  it('resume: a second run loads the session by its id (session/load) and the model sees the first exchange', async () => {
    await inCell([{ text: 'Remember 7.' }, { text: 'It was 7.' }], async (cell) => {
      const run = spawnRun(acpOptions(cell, { task: 'Remember 7' }));
      let created = 0;
      run.on('event', (event) => void (event.type === 'ready' && (created = Date.now())));
      const first = await finishRun(cell, run);
      const sessionId = first.outcome.sessionId!;
      // Gemini CLI 0.61.0 names a session's file by the minute it began, and a session/load in that same minute
      // rewrites that file empty before reading it ("No previous sessions found"): load it in a later minute.
      await until(() => Math.floor(Date.now() / 60_000) > Math.floor(created / 60_000), 61_000, 'the next minute');
      const second = await finishRun(cell, spawnRun(acpOptions(cell, { task: 'What was it?', resume: sessionId })));
      expect(second.outcome).toMatchObject({ status: 'done', finalText: 'It was 7.', sessionId });
      expect(cell.model.turnRequests[1]?.userTexts).toEqual(['Remember 7', 'What was it?']);
    });
  });

  it("resume-unknown: a session id Gemini CLI does not have fails the run unknown-session with the agent's reason", async () => {
    await inCell([{ text: ANSWER }], async (cell) => {
      const { outcome } = await finishRun(cell, spawnRun(acpOptions(cell, { task: 'x', resume: '01a24e1b-0000-4000-8000-000000000000' })));
      expect(outcome).toMatchObject({ status: 'failed', errorCode: 'unknown-session', error: expect.stringContaining('the agent refused session/load: Internal error: ') });
    });
  });

  it('pool: a warm gemini child takes the task, its run is journaled, the budget counts its turns', () => poolCell(gemini));

  it('trace: with an OpenTelemetry SDK the run has its span, and gemini its context in TRACEPARENT', () => traceCell(gemini));

  it('durable: refused at spawn (an ACP agent speaks on pipes, which do not outlive the parent)', async () => {
    await inCell([{ text: ANSWER }], async (cell) => {
      expect(() => spawnRun(acpOptions(cell, { task: 'x', durable: {} }))).toThrow(/durable/);
    });
  });
});
