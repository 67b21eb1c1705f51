// The pool's features built for real agents, on the real codex 0.169.0 against fakeModel: the rate-limit gate shut by the
// model's 429, limits on the tree (a tool that allocates), and the sandbox (codex and its own sandbox inside ours).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSupervisor, spawnRun } from '../../src/index.js';
import { agentBinary } from '../helpers/agent-binaries.js';
import type { AgentHarness } from '../helpers/agent-harness.js';
import { watchGate } from '../helpers/gate-watch.js';
import { ANSWER, codexOptions, expectTreeGone, finishRun, openCodexCell, until } from '../helpers/codex-cells.js';

const MiB = 1024 * 1024;

describe.skipIf(agentBinary('codex') === undefined)('pool features on the real codex (0.169.0 in .agents/)', () => {
  it("rate-limit gate: the model's 429 to one run shuts the pool; nothing starts until it reopens; every run ends done", async () => {
    const cell = await openCodexCell([
      { error: { status: 429, message: 'scripted rate limit', retryAfterSeconds: 2 } },
      { text: ANSWER, times: Infinity },
    ]);
    const sup = createSupervisor({ concurrency: 3, defaults: codexOptions(cell), rateLimit: { holdMs: 2000, rampMs: 500 } });
    try {
      const watch = watchGate(sup);
      const first = sup.spawn({ task: 'first' });
      await until(() => sup.rateLimited['default']?.state === 'shut', 60_000, 'the gate shut by the 429');
      const later = [sup.spawn({ task: 'second' }), sup.spawn({ task: 'third' })];
      const outcomes = await Promise.all([first, ...later].map((run) => run.outcome));
      expect(outcomes.map((outcome) => [outcome.status, outcome.finalText])).toEqual(Array(3).fill(['done', ANSWER]));
      watch.expectHeldWhileShut();
      // The first run's own retry (codex retries a 429 itself) is untouched by the gate: it answered too.
      expect(cell.model.turnRequests.length).toBe(4);
      expect(sup.rateLimited).toEqual({});
    } finally {
      await sup.shutdown({ mode: 'cancel' });
    }
    await expectTreeGone(cell, 10_000);
  });

  it('limits: an approved tool that allocates past memoryBytes ends the run memory-limit, and the whole tree goes', async () => {
    const hog = `node -e 'const held = []; setInterval(() => held.push(Buffer.alloc(${64 * MiB}, 1)), 100)'`;
    const cell = await openCodexCell([{ text: 'Allocating.', shell: hog }, { text: 'never' }]);
    const run = spawnRun(codexOptions(cell, { task: 'Allocate', approve: () => true, limits: { memoryBytes: 700 * MiB, sampleIntervalMs: 250 } }));
    const { outcome } = await finishRun(cell, run);
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'memory-limit', limits: { exceeded: { limit: 'memoryBytes', max: 700 * MiB } } });
    expect(outcome.limits?.exceeded?.seen).toBeGreaterThan(700 * MiB);
  });

  it('sandbox: codex runs under bubblewrap with its own sandbox inside: the answer, and the tool writes in cwd', async () => {
    const cell = await openCodexCell([{ text: 'Writing.', shell: 'touch inside.txt && echo done' }, { text: ANSWER }]);
    const { outcome } = await finishRun(cell, spawnRun(codexOptions(cell, { task: 'Write a file', approve: () => true, sandbox: sandboxFor(cell) })));
    expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER });
    expect(existsSync(join(cell.cwd, 'inside.txt'))).toBe(true);
    expect(cell.model.turnRequests[1]?.toolResults[0]?.output).toContain('done');
  });

  it("sandbox: with codex's own sandbox off, a tool's write outside cwd lands without ours and fails with it", async () => {
    const outside = mkdtempSync(join(tmpdir(), 'codex-outside-'));
    try {
      const write = (name: string) => `touch ${join(outside, name)}; touch inside-${name}; echo wrote`;
      const unconfined = ['-c', 'sandbox_mode="danger-full-access"'];
      const bare = await openCodexCell([{ text: 'Writing.', shell: write('bare') }, { text: ANSWER }]);
      await finishRun(bare, spawnRun(codexOptions(bare, { task: 'Write', args: unconfined, approve: () => true })));
      expect(existsSync(join(outside, 'bare'))).toBe(true);

      const boxed = await openCodexCell([{ text: 'Writing.', shell: write('boxed') }, { text: ANSWER }]);
      const { outcome } = await finishRun(boxed, spawnRun(codexOptions(boxed, { task: 'Write', args: unconfined, approve: () => true, sandbox: sandboxFor(boxed) })));
      expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER });
      expect(existsSync(join(boxed.cwd, 'inside-boxed'))).toBe(true);
      expect(existsSync(join(outside, 'boxed'))).toBe(false);
      expect(boxed.model.turnRequests[1]?.toolResults[0]?.output).toMatch(/No such file or directory|Read-only file system|Permission denied/);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

/**
 * The sandbox of a cell's codex: its HOME writable (Codex keeps its sessions under CODEX_HOME there), and the network on,
 * since Codex reaches fakeModel on the host's loopback (`network: false` would cut the agent from its model).
 */
function sandboxFor(cell: AgentHarness) {
  return { writable: [cell.setup.home], network: true };
}
