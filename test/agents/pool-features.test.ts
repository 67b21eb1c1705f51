// The pool's features built for real agents, on the real codex 0.169.0 and claude 2.1.328 against fakeModel: the
// rate-limit gate shut by the model's 429, limits on the tree (a tool that allocates), and the sandbox (codex with its
// own sandbox inside ours, and without it; Claude Code under ours).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSupervisor, spawnRun } from '../../src/index.js';
import type { RunOptions } from '../../src/index.js';
import type { FakeModelAgent } from '../../src/testing/index.js';
import { agentBinary } from '../helpers/agent-binaries.js';
import type { AgentHarness } from '../helpers/agent-harness.js';
import { ANSWER, cellOptions, expectTreeGone, finishRun, openCell, until } from '../helpers/agent-cells.js';
import { watchGate } from '../helpers/gate-watch.js';

const MiB = 1024 * 1024;

/** The agents these features are proven on: the protocol, fakeModel's setup, and the binary. */
const AGENTS = [
  { protocol: 'codex', agent: 'codex', binary: 'codex' },
  { protocol: 'claude-code', agent: 'claude-code', binary: 'claude' },
] as const satisfies ReadonlyArray<{ protocol: RunOptions['protocol']; agent: FakeModelAgent; binary: 'codex' | 'claude' }>;

/**
 * The sandbox of a cell's agent: its HOME writable (Codex keeps its sessions under CODEX_HOME there, Claude Code its
 * under ~/.claude), and the network on, since the agent reaches fakeModel on the host's loopback (`network: false`
 * would cut it from its model).
 */
function sandboxFor(cell: AgentHarness) {
  return { writable: [cell.setup.home], network: true };
}

describe.each(AGENTS)('pool features on the real $binary', ({ protocol, agent, binary }) => {
  const options = (cell: AgentHarness, extra: Partial<RunOptions> = {}) => cellOptions(protocol, cell, extra);

  it.skipIf(agentBinary(binary) === undefined)("rate-limit gate: the model's 429 to one run shuts the pool; nothing starts until it reopens; every run ends done", async () => {
    const cell = await openCell(agent, [{ error: { status: 429, message: 'scripted rate limit', retryAfterSeconds: 2 } }, { text: ANSWER, times: Infinity }]);
    const sup = createSupervisor({ concurrency: 3, defaults: options(cell), rateLimit: { holdMs: 2000, rampMs: 500 } });
    try {
      const watch = watchGate(sup);
      const first = sup.spawn({ task: 'first' });
      await until(() => sup.rateLimited['default']?.state === 'shut', 60_000, 'the gate shut by the 429');
      const later = [sup.spawn({ task: 'second' }), sup.spawn({ task: 'third' })];
      const outcomes = await Promise.all([first, ...later].map((run) => run.outcome));
      expect(outcomes.map((outcome) => [outcome.status, outcome.finalText])).toEqual(Array(3).fill(['done', ANSWER]));
      watch.expectHeldWhileShut();
      // The first run's own retry (the agent retries a 429 itself) is untouched by the gate: it answered too.
      expect(cell.model.turnRequests.length).toBe(4);
      // The gate opens by time alone, through its ramp's steps, which may outlast the runs.
      await until(() => Object.keys(sup.rateLimited).length === 0, 30_000, 'the gate open again');
    } finally {
      await sup.shutdown({ mode: 'cancel' });
    }
    await expectTreeGone(cell, 10_000);
  });

  it.skipIf(agentBinary(binary) === undefined)("warm: each task goes to a waiting child, and a listener attached right after spawn() hears its turn from the start", async () => {
    const cell = await openCell(agent, [{ text: ANSWER, times: Infinity }]);
    const sup = createSupervisor({ concurrency: 2, warm: 1, defaults: options(cell) });
    try {
      // Four tasks one after another: the later ones go to children started as replacements, which a driver that
      // starts the turn as it writes the prompt (claude-code's) once lost turn-started to.
      for (const task of ['one', 'two', 'three', 'four']) {
        await until(() => sup.counts.warm >= 1, 60_000, 'a warm child waiting');
        const run = sup.spawn({ task, retainEvents: false });
        const heard: string[] = [];
        run.on('event', (event) => heard.push(event.type));
        expect(await run.outcome).toMatchObject({ status: 'done', finalText: ANSWER });
        // The child's own start (ready, notices) may come first; the task's turn is heard whole, then its exit.
        expect(heard.filter((type) => type === 'turn-started' || type === 'turn-complete' || type === 'exit'), heard.join(' ')).toEqual(['turn-started', 'turn-complete', 'exit']);
      }
      expect(cell.model.turnRequests.map((request) => request.userText)).toEqual(['one', 'two', 'three', 'four']);
    } finally {
      await sup.shutdown({ mode: 'cancel' });
    }
    await expectTreeGone(cell, 10_000);
  });

  it.skipIf(agentBinary(binary) === undefined)('limits: an approved tool that allocates past memoryBytes ends the run memory-limit, and the whole tree goes', async () => {
    const hog = `node -e 'const held = []; setInterval(() => held.push(Buffer.alloc(${64 * MiB}, 1)), 100)'`;
    const cell = await openCell(agent, [{ text: 'Allocating.', shell: hog }, { text: 'never' }]);
    // The agent alone is 100-300 MiB resident: the limit leaves it room, and the tool goes far over.
    const limit = 900 * MiB;
    const run = spawnRun(options(cell, { task: 'Allocate', approve: () => true, limits: { memoryBytes: limit, sampleIntervalMs: 250 } }));
    const { outcome } = await finishRun(cell, run);
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'memory-limit', limits: { exceeded: { limit: 'memoryBytes', max: limit } } });
    expect(outcome.limits?.exceeded?.seen).toBeGreaterThan(limit);
  });

  it.skipIf(agentBinary(binary) === undefined)('sandbox: the agent runs under bubblewrap (its own sandbox, if any, inside): the answer, and the tool writes in cwd', async () => {
    const cell = await openCell(agent, [{ text: 'Writing.', shell: 'touch inside.txt && echo done' }, { text: ANSWER }]);
    const { outcome } = await finishRun(cell, spawnRun(options(cell, { task: 'Write a file', approve: () => true, sandbox: sandboxFor(cell) })));
    expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER });
    expect(existsSync(join(cell.cwd, 'inside.txt'))).toBe(true);
    expect(cell.model.turnRequests[1]?.toolResults[0]?.output).toContain('done');
  });

  it.skipIf(agentBinary(binary) === undefined)("sandbox: a tool's write outside cwd lands without ours and fails with it (codex's own sandbox off)", async () => {
    const outside = mkdtempSync(join(tmpdir(), `${agent}-outside-`));
    try {
      const write = (name: string) => `touch ${join(outside, name)}; touch inside-${name}; echo wrote`;
      // Codex's own bubblewrap would refuse the write by itself: off, so only subvisor's sandbox stands in the way.
      const unconfined = protocol === 'codex' ? { args: ['-c', 'sandbox_mode="danger-full-access"'] } : {};
      const bare = await openCell(agent, [{ text: 'Writing.', shell: write('bare') }, { text: ANSWER }]);
      await finishRun(bare, spawnRun(options(bare, { task: 'Write', ...unconfined, approve: () => true })));
      expect(existsSync(join(outside, 'bare'))).toBe(true);

      const boxed = await openCell(agent, [{ text: 'Writing.', shell: write('boxed') }, { text: ANSWER }]);
      const run = spawnRun(options(boxed, { task: 'Write', ...unconfined, approve: () => true, sandbox: sandboxFor(boxed) }));
      const { outcome } = await finishRun(boxed, run);
      expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER });
      expect(existsSync(join(boxed.cwd, 'inside-boxed'))).toBe(true);
      expect(existsSync(join(outside, 'boxed'))).toBe(false);
      expect(boxed.model.turnRequests[1]?.toolResults[0]?.output).toMatch(/No such file or directory|Read-only file system|Permission denied/);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
