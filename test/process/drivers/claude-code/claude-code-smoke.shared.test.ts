// The real Claude Code (when installed) behind spawnRun against fakeModel: one honest turn, its answer, session id, usage and cost, nothing left behind.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnRun } from '../../../../src/index.js';
import type { RunEvent } from '../../../../src/index.js';
import { fakeModel, waitUntilGone } from '../../../../src/testing/index.js';
import { agentBinary } from '../../../helpers/agent-binaries.js';
import { checkStream, within } from '../../../helpers/spawn-harness.js';

const claude = agentBinary('claude');

// Without the pinned binaries the suite says once how to install them (test/global-setup.ts).
describe.skipIf(claude === undefined)('claude stream-json behind spawnRun (smoke)', () => {
  it('answers a prompt: the answer, the session id, usage with its cost, thinking kept out of the answer', async () => {
    await using model = await fakeModel({ turns: [{ thinking: 'The user wants a greeting.', text: 'Hello from the scripted model.' }] });
    const setup = model.setup('claude-code');
    const cwd = mkdtempSync(join(tmpdir(), 'claude-smoke-cwd-'));
    const stateDir = mkdtempSync(join(tmpdir(), 'claude-smoke-state-'));
    try {
      const run = spawnRun({ protocol: 'claude-code', command: claude!, task: 'Say hello', cwd, env: setup.env, stateDir, readyTimeoutMs: 60_000, killGraceMs: 2_000 });
      const events: RunEvent[] = [];
      run.on('event', (event) => events.push(event));
      const outcome = await within(run.outcome, 90_000, 'the outcome');
      expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'done', finalText: 'Hello from the scripted model.' });
      expect(outcome.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(outcome.usage?.inputTokens).toBeGreaterThan(0);
      expect(outcome.usage?.costUsd).toBeGreaterThan(0);
      expect(events.filter((event) => event.type === 'assistant-thinking').map((event) => event.text)).toEqual(['The user wants a greeting.']);
      checkStream(events, outcome);
      expect(await waitUntilGone(run.pid === undefined ? [] : [run.pid], 10_000)).toEqual([]);
      expect(model.turnRequests.map((request) => request.userText)).toEqual(['Say hello']);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
      rmSync(stateDir, { recursive: true, force: true });
    }
  }, 120_000);
});
