// A tool-call budget on the real agents against fakeModel: once the limit is reached the run is asked for its answer,
// and a tool the model still calls in that turn is denied without asking `approve` (Claude Code and Codex do call one).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnRun } from '../../src/index.js';
import type { ApprovalRequest, RunOptions } from '../../src/index.js';
import type { FakeModelAgent } from '../../src/testing/index.js';
import { agentBinary } from '../helpers/agent-binaries.js';
import { cellOptions, finishRun, openCell } from '../helpers/agent-cells.js';

const AGENTS = [
  { protocol: 'claude-code', agent: 'claude-code', binary: 'claude', extra: {} },
  { protocol: 'codex', agent: 'codex', binary: 'codex', extra: {} },
  { protocol: 'acp', agent: 'gemini', binary: 'gemini', extra: { args: ['--acp'] } },
] as const satisfies ReadonlyArray<{ protocol: RunOptions['protocol']; agent: FakeModelAgent; binary: 'claude' | 'codex' | 'gemini'; extra: Partial<RunOptions> }>;

describe.each(AGENTS)('a tool-call budget on the real $binary', ({ protocol, agent, binary, extra }) => {
  it.skipIf(agentBinary(binary) === undefined)('maxToolCalls: no tool runs past the limit, whatever approve says, and the run ends with one outcome', async () => {
    // The model calls a tool, then (in the turn the finalize asks to be tool-free) another: only the first may run.
    const cell = await openCell(agent, [
      { text: 'First tool.', shell: 'touch first.txt' },
      { text: 'Another tool.', shell: 'touch second.txt' },
      { text: 'That is all.', times: Infinity },
    ]);
    const asked: ApprovalRequest[] = [];
    const run = spawnRun(cellOptions(protocol, cell, { ...extra, task: 'Use tools', budget: { maxToolCalls: 1 }, approve: (request) => (asked.push(request), true) }));
    const { outcome } = await finishRun(cell, run);
    expect(existsSync(join(cell.cwd, 'second.txt')), 'a tool ran past the budget').toBe(false);
    expect(asked.length).toBeLessThanOrEqual(1);
    expect(outcome.budget?.exceeded).toMatchObject({ limit: 'maxToolCalls' });
    expect(['done', 'cancelled']).toContain(outcome.status);
  });
});
