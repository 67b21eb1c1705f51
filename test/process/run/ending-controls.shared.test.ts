// cancel/close/finalize on a run that has ended or is ending resolve an Ack that says so and never reject; the other controls reject.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlRefusedError } from '../../../src/index.js';
import type { Ack } from '../../../src/index.js';
import { hostileRun } from '../../helpers/hostile-run.js';
import { reapLeftovers, supervise, within } from '../../helpers/spawn-harness.js';

afterEach(reapLeftovers);

const ENDED = { status: 'unanswered', seq: 0, runEnded: true };

describe('ending controls never reject', () => {
  it('a program calling run.cancel() from a timer after the run finished does not crash', async () => {
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const stateDir = mkdtempSync(join(tmpdir(), 'subvisor-ending-'));
    try {
      const child = spawn(process.execPath, [join(root, 'test/helpers/ending-controls-parent.mjs'), stateDir], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await within(new Promise<number | null>((resolve) => child.on('exit', resolve)), 20_000, 'the program').catch(
        (error: unknown) => {
          child.kill('SIGKILL');
          throw error;
        },
      );
      expect(code, stderr).toBe(0);
      const printed = JSON.parse(stdout.trim()) as { status: string; acks: Ack[] };
      expect(printed.status).toBe('done');
      expect(printed.acks).toHaveLength(6);
      for (const ack of printed.acks) expect(ack).toMatchObject(ENDED);
      expect(readdirSync(stateDir)).toEqual([]);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('while ending (a cancel on its way), a second cancel, close and finalize resolve runEnded; prompt/steer/followUp reject', async () => {
    const s = supervise({ turns: [{ steps: [{ pause: 60_000 }] }] }, { task: 'go', keepAlive: true });
    await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
    const first = s.run.cancel();
    const again = await s.run.cancel();
    expect(again).toMatchObject(ENDED);
    expect(again.reason).toContain('ending');
    await expect(s.run.close()).resolves.toMatchObject(ENDED);
    await expect(s.run.finalize()).resolves.toMatchObject(ENDED);
    for (const refused of [s.run.prompt('p'), s.run.steer('s'), s.run.followUp('f')]) {
      await expect(refused).rejects.toBeInstanceOf(ControlRefusedError);
      await expect(refused).rejects.toMatchObject({ code: 'run-ended' });
    }
    expect((await first).status).toBe('accepted');
    await s.finish({ status: 'cancelled' });
  });

  it('after the child wrote exit (the run is ending, the process not yet gone): cancel resolves runEnded', async () => {
    const hostile = hostileRun([{ ready: true }, { ack: 'task' }, { exit: 'done' }]);
    try {
      const ended = new Promise<void>((resolve) => hostile.run.on('event', (event) => event.type === 'exit' && resolve()));
      await within(ended, 20_000, 'exit event');
      await expect(hostile.run.cancel()).resolves.toMatchObject(ENDED);
      const outcome = await within(hostile.run.outcome, 20_000, 'outcome');
      expect(outcome.status).toBe('done');
      await expect(hostile.run.cancel()).resolves.toMatchObject(ENDED);
      expect(hostile.leftovers()).toEqual([]);
    } finally {
      hostile.cleanup();
    }
  });
});

describe('a control whose ackTimeoutMs ran out is unanswered for every purpose', () => {
  it('a task prompt the child never answers does not block the automatic close (keepAlive false)', async () => {
    // ready, but the task is never acked: once ackTimeoutMs passes, the run is idle and closes itself.
    const hostile = hostileRun([{ ready: true }, { hang: true }], { ackTimeoutMs: 300 });
    try {
      const closes: Ack[] = [];
      hostile.run.on('ack', (ack, type) => type === 'close' && closes.push(ack));
      const taskAck = await within(hostile.run.taskAck, 20_000, 'task ack');
      expect(taskAck).toMatchObject({ status: 'unanswered', seq: 1 });
      const outcome = await within(hostile.run.outcome, 20_000, 'outcome');
      expect(outcome.status).toBe('done');
      expect(outcome.killed).toBe(false);
      expect(closes).toEqual([{ status: 'accepted', seq: 2 }]);
      expect(hostile.leftovers()).toEqual([]);
    } finally {
      hostile.cleanup();
    }
  });
});
