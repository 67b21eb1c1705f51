// spawnRun matrix, scale: 50 concurrent runs, and the mirror vs. the child's own state over many randomized control scripts.
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlRefusedError } from '../../../src/index.js';
import type { Ack, Delivery, Outcome } from '../../../src/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { BOUND_MS, expectEmptyStateDir, freshStateDir, reapLeftovers, supervise, waitChildControl } from '../../helpers/spawn-harness.js';

afterEach(reapLeftovers);

describe('50 concurrent runs', () => {
  it('all end right, sharing one stateDir, and leave nothing behind', async () => {
    const stateDir = freshStateDir();
    try {
      const scenario: Scenario = {
        turns: [
          {
            steps: [{ tool: 'read', result: 'ok', durationMs: 30 }, { pause: 200 }],
            answer: { echo: true, prefix: 'answer:' },
          },
        ],
      };
      const crash: Scenario = { ...scenario, misbehaviours: [{ at: 'turn-start', do: { crash: { code: 9 } } }] };
      // Runs to cancel stay in their turn until cancelled, so the cancel always lands mid-turn.
      const long: Scenario = { turns: [{ steps: [{ tool: 'read', result: 'ok', durationMs: 30 }, { pause: 60_000 }] }] };
      const runs = Array.from({ length: 50 }, (_, index) => {
        const kind = index % 10 === 0 ? 'cancel' : index % 10 === 1 ? 'crash' : 'done';
        const s = supervise(kind === 'crash' ? crash : kind === 'cancel' ? long : scenario, {
          task: `task ${index}`,
          stateDir,
          child: { turnTickMs: 10, idleTickMs: 50 },
        });
        return { index, kind, s };
      });
      const ids = new Set(runs.map(({ s }) => s.run.id));
      expect(ids.size).toBe(50);
      const outcomes = await Promise.all(
        runs.map(async ({ index, kind, s }): Promise<Outcome> => {
          if (kind === 'cancel') {
            await s.waitEvent((event) => event.type === 'turn-started', 'turn-started', 60_000);
            await s.control((run) => run.cancel());
          }
          const status = kind === 'cancel' ? 'cancelled' : kind === 'crash' ? 'failed' : 'done';
          const outcome = await s.finish({ status, boundMs: 90_000 });
          if (kind === 'done') expect(outcome.finalText).toBe(`answer:task ${index}`);
          if (kind === 'crash') expect(outcome.exitCode).toBe(9);
          return outcome;
        }),
      );
      expect(outcomes.filter((outcome) => outcome.status === 'done')).toHaveLength(40);
      expectEmptyStateDir(stateDir);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  }, 180_000);
});

/** mulberry32: a small seeded PRNG, so a failing script can be replayed from its seed. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Step = 'prompt' | 'steer' | 'follow-up' | 'finalize' | 'close' | 'cancel' | 'burst' | 'quiet';
const STEPS: Step[] = ['prompt', 'prompt', 'steer', 'steer', 'follow-up', 'follow-up', 'finalize', 'close', 'cancel', 'burst', 'quiet', 'quiet'];

/** One randomized script: controls in random order and timing; the mirror must track the child throughout. */
async function randomizedRun(seed: number): Promise<string[]> {
  const random = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const scenario: Scenario = {
    name: `random-${seed}`,
    turns: [{ steps: [{ pause: 80 + Math.floor(random() * 300) }], answer: { echo: true, prefix: 't:' } }],
    finalTurn: { steps: [{ pause: 50 + Math.floor(random() * 200) }], answer: { echo: true, prefix: 'final:' } },
  };
  const s = supervise(scenario, { keepAlive: true, ...(random() < 0.5 ? { task: 'start' } : {}) });
  const script: string[] = [];
  const deliveries: Promise<Delivery>[] = [];
  const settled = new Set<Promise<Delivery>>();

  const sendOne = async (step: Exclude<Step, 'burst' | 'quiet'>): Promise<void> => {
    let ack: Ack;
    try {
      ack = await s.control((run) => {
        switch (step) {
          case 'prompt':
            return run.prompt(`p${script.length}`);
          case 'steer':
            return run.steer(`s${script.length}`);
          case 'follow-up':
            return run.followUp(`f${script.length}`);
          case 'finalize':
            return run.finalize();
          case 'close':
            return run.close();
          case 'cancel':
            return run.cancel();
        }
      });
    } catch (error) {
      // Only a control after the end may be refused.
      expect(error).toBeInstanceOf(ControlRefusedError);
      expect((error as ControlRefusedError).code).toBe('run-ended');
      return;
    }
    if (ack.delivery) {
      const delivery = ack.delivery;
      deliveries.push(delivery);
      void delivery.then(() => settled.add(delivery));
    }
    if (ack.status === 'unanswered') return;
    const entry = await waitChildControl(s, ack.seq);
    expect(entry?.ack?.status, `seed ${seed}: ack of ${step} (seq ${ack.seq}) vs the child's`).toBe(ack.status);
  };

  /** A quiet point: ready, every ack answered, every delivery settled. The child must then be in ready too. */
  const quiet = async (): Promise<void> => {
    const until = Date.now() + BOUND_MS;
    while (!s.run.ended && Date.now() < until) {
      await Promise.all(deliveries);
      if (s.run.ended) return;
      await s.waitState('ready').catch(() => undefined);
      if (s.run.state === 'ready' && deliveries.every((delivery) => settled.has(delivery))) break;
    }
    if (s.run.ended) return;
    expect(s.run.state).toBe('ready');
    let childState = s.child.transcript().finalState;
    while (childState !== s.run.state && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      childState = s.child.transcript().finalState;
    }
    expect(childState, `seed ${seed}: child vs mirror at a quiet point (script ${script.join(',')})`).toBe(s.run.state);
  };

  const length = 3 + Math.floor(random() * 6);
  for (let index = 0; index < length && !s.run.ended; index++) {
    const step = pick(STEPS);
    script.push(step);
    if (step === 'quiet') await quiet();
    else if (step === 'burst') await Promise.all([sendOne(pick(['steer', 'follow-up', 'prompt'] as const)), sendOne(pick(['steer', 'follow-up', 'finalize', 'close'] as const))]);
    else await sendOne(step);
  }
  if (!s.run.ended) {
    script.push('close');
    await sendOne('close');
  }
  const outcome = await s.finish({ mirror: true });
  script.push(`=> ${outcome.status}`);
  return script;
}

describe('the mirror vs. the child, over randomized control scripts', () => {
  it('24 seeded scripts: same states, same acks, same state at every quiet point', async () => {
    const seeds = Array.from({ length: 24 }, (_, index) => 1000 + index * 7919);
    const outcomes: string[] = [];
    // Four at a time: enough overlap to be realistic, little enough for a shared 2-core machine.
    for (let start = 0; start < seeds.length; start += 4) {
      const batch = seeds.slice(start, start + 4);
      const scripts = await Promise.all(batch.map((seed) => randomizedRun(seed)));
      for (const [offset, script] of scripts.entries()) outcomes.push(`${batch[offset]}: ${script.join(' ')}`);
    }
    // Every status should show up across the seeds, so the scripts really cover the table.
    const endings = new Set(outcomes.map((line) => line.slice(line.lastIndexOf('=> ') + 3)));
    expect([...endings].sort(), outcomes.join('\n')).toEqual(['cancelled', 'done']);
  }, 300_000);
});
