// The hostile matrix's rows for the stdio JSON protocols (codex, claude-code, acp), against a hostile agent process
// rather than the real binaries: one that never gets ready and ignores SIGTERM with a setsid grandchild, one that
// crashes mid-line, one that writes garbage and exits. Each cell: exactly one outcome within its bound, never done,
// the last event the one exit with the outcome's status, and nothing of the tree left.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../../src/index.js';
import type { Outcome, RunEvent, RunOptions } from '../../../../src/index.js';
import { waitUntilGone } from '../../../../src/testing/index.js';
import { taggedProcesses } from '../../../helpers/agent-harness.js';

const AGENT = fileURLToPath(new URL('../../../helpers/hostile-stdio-agent.mjs', import.meta.url));
const TAG = 'SUBVISOR_HOSTILE_AGENT';
/** Every cell's run ends within this: the ready bound, the ladder's grace and the kill, with room for a loaded machine. */
const OUTCOME_BOUND_MS = 30_000;

const scratch: string[] = [];
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs the hostile agent under `protocol` doing `behaviour`; the invariants of every cell are checked here. */
async function hostileRun(protocol: 'codex' | 'claude-code' | 'acp', behaviour: string, extra: Partial<RunOptions> = {}): Promise<{ outcome: Outcome; events: RunEvent[] }> {
  const tag = randomUUID();
  const stateDir = mkdtempSync(join(tmpdir(), 'hostile-stdio-'));
  scratch.push(stateDir);
  const run = spawnRun({
    protocol,
    command: AGENT,
    task: 'go',
    stateDir,
    env: { HOSTILE_BEHAVIOUR: behaviour, [TAG]: tag },
    readyTimeoutMs: 2_000,
    killGraceMs: 300,
    handleParentSignals: false,
    ...extra,
  });
  const events: RunEvent[] = [];
  const collected = (async () => {
    for await (const event of run) events.push(event);
  })();
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    run.outcome,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no outcome within ${OUTCOME_BOUND_MS} ms`)), OUTCOME_BOUND_MS))),
  ]).finally(() => clearTimeout(timer));
  await collected;
  expect(outcome.status).not.toBe('done');
  expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
  expect(events.at(-1)).toMatchObject({ type: 'exit', status: outcome.status });
  expect(await waitUntilGone(() => taggedProcesses(`${TAG}=${tag}`), 10_000)).toEqual([]);
  expect(readdirSync(stateDir)).toEqual([]);
  return { outcome, events };
}

describe.each(['codex', 'claude-code', 'acp'] as const)('a hostile agent behind protocol %s', (protocol) => {
  it('never ready, ignoring SIGTERM, with a grandchild in its own session that ignores it too: ready-timeout, the ladder, the whole tree gone', async () => {
    const { outcome } = await hostileRun(protocol, 'never-ready');
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'ready-timeout', killed: true, escalated: true });
  });

  it('crashes mid-line: failed, never done, the half line not taken for a message', async () => {
    const { outcome, events } = await hostileRun(protocol, 'crash-mid-line');
    expect(outcome.status).toBe('failed');
    expect(events.some((event) => event.type === 'ready')).toBe(false);
  });

  it('writes garbage and exits: each bad line a rejection the caller sees, one outcome, failed', async () => {
    const { outcome, events } = await hostileRun(protocol, 'garbage-exit');
    expect(outcome.status).toBe('failed');
    expect(outcome.rejectedLines).toBeGreaterThanOrEqual(2);
    expect(events.filter((event) => event.type === 'rejected').length).toBe(outcome.rejectedLines);
  });
});
