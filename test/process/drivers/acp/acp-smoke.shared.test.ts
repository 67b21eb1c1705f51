// The real Gemini CLI (when installed) behind spawnRun({ protocol: 'acp' }) against fakeModel: one honest turn, its answer, session id and usage, thinking kept out of the answer, nothing left behind.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnRun } from '../../../../src/index.js';
import type { RunEvent } from '../../../../src/index.js';
import { fakeModel, waitUntilGone } from '../../../../src/testing/index.js';
import { agentBinary } from '../../../helpers/agent-binaries.js';
import { checkStream, within } from '../../../helpers/spawn-harness.js';

const gemini = agentBinary('gemini');

// Without the pinned binaries the suite says once how to install them (test/global-setup.ts).
describe.skipIf(gemini === undefined)('gemini --acp behind spawnRun (smoke)', () => {
  it('answers a prompt: the answer, the session id, token usage without cost, thinking kept out of the answer', async () => {
    await using model = await fakeModel({ turns: [{ thinking: 'The user wants a greeting.', text: 'Hello from the scripted model.' }] });
    const setup = model.setup('gemini');
    const cwd = mkdtempSync(join(tmpdir(), 'acp-smoke-cwd-'));
    const stateDir = mkdtempSync(join(tmpdir(), 'acp-smoke-state-'));
    try {
      const run = spawnRun({ protocol: 'acp', command: gemini!, args: ['--acp'], task: 'Say hello', cwd, env: setup.env, stateDir, readyTimeoutMs: 60_000, killGraceMs: 2_000 });
      const events: RunEvent[] = [];
      run.on('event', (event) => events.push(event));
      const outcome = await within(run.outcome, 90_000, 'the outcome');
      expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'done', finalText: 'Hello from the scripted model.', protocol: 'acp' });
      expect(outcome.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(outcome.usage?.inputTokens).toBeGreaterThan(0);
      expect(outcome.usage?.costUsd).toBeUndefined();
      // Gemini CLI 0.61.0 sends each thought part as "**subject**\ndescription", trimmed: fakeModel's parts have no subject.
      const thinking = events.filter((event) => event.type === 'assistant-thinking').map((event) => event.text).join('');
      expect(thinking.replaceAll('****\n', '').replace(/\s/g, '')).toContain('Theuserwantsagreeting.');
      expect(outcome.finalText).not.toContain('greeting');
      checkStream(events, outcome);
      expect(await waitUntilGone(run.pid === undefined ? [] : [run.pid], 10_000)).toEqual([]);
      expect(model.turnRequests.map((request) => request.userText)).toEqual(['Say hello']);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
      rmSync(stateDir, { recursive: true, force: true });
    }
  }, 120_000);
});
