// The stall watchdog in the run core: protocol-free (the in-memory driver, no process) and against a real Fen
// child that hangs mid-turn; `run.lastEventAt`; never armed outside a turn; a pooled run has it too.
import { afterEach, describe, expect, it } from 'vitest';
import { createSupervisor, spawnRun } from '../../../src/index.js';
import { createInMemoryRun, liveFakeProcesses } from '../../../src/testing/index.js';
import type { InMemoryChild } from '../../../src/testing/index.js';
import { cleanupPoolKit, fake, freshDir, runOptions } from '../../helpers/pool-kit.js';

afterEach(() => cleanupPoolKit());

/** Acks the task and opens a turn; answers cancel by exiting cancelled (a child that is silent, not deaf). */
function startTurn(child: InMemoryChild, onCancel = true): void {
  child.onControl = ({ ref, control }) => {
    if (control.type === 'prompt') {
      child.ack(ref, 'accepted');
      child.turnStarted();
    } else if (control.type === 'cancel' && onCancel) {
      child.ack(ref, 'accepted');
      child.exit('cancelled');
      child.gone();
    } else if (control.type === 'close') {
      child.ack(ref, 'accepted');
      child.exit('done');
      child.gone();
    }
  };
  child.ready();
}

describe('stallTimeoutMs (any protocol: the in-memory driver)', () => {
  it('cancels a turn that stays silent, errorCode stalled; lastEventAt is the last line', async () => {
    const { run, child } = createInMemoryRun({ task: 'go', stallTimeoutMs: 150, killGraceMs: 50 });
    expect(run.lastEventAt).toBeUndefined();
    startTurn(child);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const last = run.lastEventAt;
    expect(last).toBeGreaterThan(Date.now() - 1000);
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'stalled' });
    expect(outcome.error).toMatch(/wrote nothing for \d+ ms while a turn was open/);
    expect(child.controls.map(({ control }) => control.type)).toContain('cancel');
  });

  it('a child that does not answer the cancel either is dropped after the kill grace, still stalled', async () => {
    const { run, child } = createInMemoryRun({ task: 'go', stallTimeoutMs: 100, killGraceMs: 50 });
    startTurn(child, false);
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'stalled' });
    expect(child.disconnected).toBe(true);
  });

  it('is never armed outside a turn, and lines keep an open turn alive', async () => {
    const { run, child } = createInMemoryRun({ task: 'go', stallTimeoutMs: 150, killGraceMs: 50, keepAlive: true });
    child.onControl = ({ ref, control }) => {
      if (control.type === 'prompt') {
        child.ack(ref, 'accepted');
        child.turnStarted();
        // Talkative for 3 x the timeout, then the turn completes.
        let sent = 0;
        const timer = setInterval(() => {
          child.text('.');
          if (++sent === 12) {
            clearInterval(timer);
            child.turnComplete('stop');
          }
        }, 40);
      } else if (control.type === 'close') {
        child.ack(ref, 'accepted');
        child.result('ok');
        child.exit('done');
        child.gone();
      }
    };
    child.ready();
    await new Promise((resolve) => setTimeout(resolve, 600 + 500)); // the turn, then idle in ready past the timeout
    expect(run.ended).toBe(false);
    expect(run.state).toBe('ready');
    await run.close();
    expect((await run.outcome).status).toBe('done');
  });
});

describe('stallTimeoutMs against a real child', () => {
  it('a Fen child that hangs mid-turn is cancelled, then killed; nothing survives', async () => {
    const stateDir = freshDir();
    const hung = fake({ name: 'hung', misbehaviours: [{ at: 'turn-start', do: 'hang' }] });
    const run = spawnRun({ ...runOptions(hung), stateDir, task: 'go', stallTimeoutMs: 500, killGraceMs: 200 });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'stalled', killed: true });
    expect(run.lastEventAt).toBeDefined();
    expect(liveFakeProcesses(hung.child.token)).toEqual([]);
  });

  it('works through the pool (defaults), and a stalled run is retried by default when retries are on', async () => {
    const stateDir = freshDir();
    const hung = fake({ name: 'hung', misbehaviours: [{ at: 'turn-start', do: 'hang' }] });
    const sup = createSupervisor({ concurrency: 1, defaults: { ...runOptions(hung), stateDir, stallTimeoutMs: 400, killGraceMs: 100 }, retry: { attempts: 2 } });
    const run = sup.spawn({ task: 'go' });
    const final = await run.finalOutcome;
    expect(run.nextAttempt).toBeDefined();
    expect(final).toMatchObject({ status: 'cancelled', errorCode: 'stalled' });
    expect(sup.counts).toMatchObject({ cancelled: 1, retried: 1 });
    expect(run.lastEventAt).toBeDefined();
    await sup.shutdown();
    expect(liveFakeProcesses(hung.child.token)).toEqual([]);
  });
});
