// spawnRun matrix, faults: bad lines, protocol failures, crashes, lingering and stubborn trees, abort, deadline, ready timeout.
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import type { RejectedEvent, RunEvent } from '../../../src/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { BOUND_MS, checkStream, grandchildPidOf, expectEmptyStateDir, freshStateDir, reapLeftovers, supervise, within } from '../../helpers/spawn-harness.js';
import { procInfo } from '../../helpers/spawn-procs.js';

afterEach(reapLeftovers);

function rejected(events: RunEvent[]): RejectedEvent[] {
  return events.filter((event): event is RejectedEvent => event.type === 'rejected');
}

const LONG_TURN: Scenario = { turns: [{ steps: [{ pause: 60_000 }], answer: 'never' }] };

describe('bad lines are reported, counted, and the run goes on', () => {
  it('garbage, oversized, out-of-order, unknown-type and invalid-payload lines', async () => {
    const scenario: Scenario = {
      turns: [{ answer: 'still answered' }],
      misbehaviours: [
        {
          at: 'turn-start',
          do: {
            raw: [
              { kind: 'garbage' },
              { kind: 'oversized', bytes: 200_000 },
              { kind: 'out-of-order' },
              { kind: 'unknown-type' },
              { kind: 'invalid-payload' },
              { kind: 'literal', line: '[1,2,3]' },
              // No v: an invalid envelope. (It carries no seq: a readable seq would be consumed, and every later event would be out of order.)
              { kind: 'literal', line: '{"type":"info","run":"x"}' },
            ],
          },
        },
      ],
    };
    const s = supervise(scenario, { task: 'go' });
    const viaListener: RejectedEvent[] = [];
    s.run.on('rejected', (event) => viaListener.push(event));
    const outcome = await s.finish({ status: 'done', mirror: true });
    const codes = rejected(s.events).map((event) => event.code);
    expect(codes).toEqual(['malformed', 'too-large', 'out-of-order', 'unknown-type', 'invalid-payload', 'malformed', 'invalid']);
    expect(rejected(s.events).every((event) => !event.fatal && event.reason.length > 0)).toBe(true);
    expect(viaListener).toHaveLength(7);
    expect(outcome.rejectedLines).toBe(7);
    expect(outcome.finalText).toBe('still answered');
    expect(outcome.error).toBeUndefined();
  });

  it('several oversized lines in a row, each reported once, nothing held back', async () => {
    const scenario: Scenario = {
      turns: [{ answer: 'fine' }],
      misbehaviours: [{ at: 'turn-start', do: { raw: [{ kind: 'oversized', bytes: 70_000 }], repeat: 5 } }],
    };
    const s = supervise(scenario, { task: 'go' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(rejected(s.events).map((event) => event.code)).toEqual(Array(5).fill('too-large'));
    expect(outcome.finalText).toBe('fine');
  });

  it('lines written in pieces split inside multi-byte characters decode whole', async () => {
    const answer = 'ÄÖÜ 日本語 😀😀😀 '.repeat(50);
    const scenario: Scenario = {
      turns: [{ steps: [{ text: answer, chunks: 5 }], answer }],
      misbehaviours: [{ at: 'after-ready', do: { splitWrites: { pieces: 4, gapMs: 3 } } }],
    };
    const s = supervise(scenario, { task: 'go' });
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.rejectedLines).toBe(0);
    expect(outcome.finalText).toBe(answer);
    const deltas = s.events.map((event) => (event.type === 'assistant-text-delta' ? event.delta : '')).join('');
    expect(deltas).toBe(answer);
  });
});

describe('well-formed lines that make no sense', () => {
  it('duplicate and unknown acks, injections and drops of unknown refs, and lines after exit change nothing', async () => {
    const RUN_ID = 'nonsense-run';
    let seq = 1_000_000;
    const line = (type: string, fields: Record<string, unknown>) => ({ kind: 'literal' as const, line: JSON.stringify({ v: 1, seq: seq++, type, run: RUN_ID, ...fields }) });
    const scenario: Scenario = {
      turns: [{ answer: 'the answer' }],
      misbehaviours: [
        {
          at: 'before-result',
          do: [
            {
              raw: [
                line('control-ack', { ref: 1, status: 'rejected', reason: 'changed my mind' }),
                line('control-ack', { ref: 999, status: 'accepted' }),
                line('steering-injected', { ref: 999, text: 'never sent' }),
                line('info', { refs: [998, 999] }),
                line('result', { 'stop-reason': 'stop', 'final-text': 'the answer' }),
                line('exit', { status: 'done' }),
                line('result', { 'stop-reason': 'stop', 'final-text': 'a second answer' }),
                line('exit', { status: 'failed', error: 'a second exit' }),
              ],
            },
            { crash: { code: 0 } },
          ],
        },
      ],
    };
    const s = supervise(scenario, { keepAlive: true, runId: RUN_ID });
    const acks: string[] = [];
    s.run.on('ack', (ack, control) => acks.push(`${control}:${ack.status}`));
    await s.waitState('ready');
    const prompt = await s.control((run) => run.prompt('go'));
    expect(prompt).toMatchObject({ status: 'accepted', seq: 1 });
    await s.waitEvent((event) => event.type === 'turn-complete', 'turn-complete');
    await s.waitState('ready');
    await s.control((run) => run.close());
    const outcome = await s.finish({ status: 'done' });
    expect(acks).toEqual(['prompt:accepted', 'close:accepted']);
    expect(outcome.finalText).toBe('the answer');
    expect(outcome.rejectedLines).toBe(0);
    expect(s.events[s.events.length - 1]).toMatchObject({ type: 'exit', status: 'done', seq: 1_000_005 });
    expect(s.events.filter((event) => event.type === 'result')).toHaveLength(1);
  });
});

describe('protocol failures end the run failed, naming the failure', () => {
  it('version mismatch', async () => {
    const scenario: Scenario = { ...LONG_TURN, misbehaviours: [{ at: 'turn-start', do: { raw: [{ kind: 'wrong-version', v: 2 }] } }] };
    const s = supervise(scenario, { task: 'go' });
    const outcome = await s.finish({ status: 'failed', exitStatusDiffers: true });
    expect(outcome.errorCode).toBe('version-mismatch');
    expect(outcome.error).toMatch(/version/i);
    const fatal = rejected(s.events).find((event) => event.fatal);
    expect(fatal?.code).toBe('version-mismatch');
  });

  it('an event for another run', async () => {
    const scenario: Scenario = { ...LONG_TURN, misbehaviours: [{ at: 'turn-start', do: { raw: [{ kind: 'foreign-run', run: 'someone-else' }] } }] };
    const s = supervise(scenario, { task: 'go' });
    const outcome = await s.finish({ status: 'failed', exitStatusDiffers: true });
    expect(outcome.errorCode).toBe('foreign-run');
    expect(outcome.error).toMatch(/someone-else|another run|foreign/i);
    expect(rejected(s.events).find((event) => event.fatal)?.code).toBe('foreign-run');
  });

  it('the event file truncated', async () => {
    const scenario: Scenario = {
      turns: [{ steps: [{ pause: 300 }, { misbehave: { truncateEvents: { toBytes: 0 } } }, { pause: 60_000 }] }],
    };
    const s = supervise(scenario, { task: 'go' });
    const outcome = await s.finish({ status: 'failed', exitStatusDiffers: true });
    expect(outcome.errorCode).toBe('event-file-truncated');
    expect(outcome.error).toMatch(/truncat/i);
  });
});

describe('crashes', () => {
  it('crash with an exit event: the child says failed, exit code kept', async () => {
    const scenario: Scenario = { ...LONG_TURN, misbehaviours: [{ at: 'turn-start', do: { crash: { code: 3, exitEvent: true } } }] };
    const s = supervise(scenario, { task: 'go' });
    const outcome = await s.finish({ status: 'failed' });
    const exit = s.events[s.events.length - 1];
    expect(exit?.type === 'exit' && exit.synthetic).toBeFalsy();
    expect(outcome.exitCode).toBe(3);
    expect(outcome.signal).toBeNull();
    expect(outcome.killed).toBe(false);
    expect(outcome.finalText).toBeUndefined();
  });

  it('crash without an exit event: a synthetic exit ends the stream', async () => {
    const scenario: Scenario = { ...LONG_TURN, misbehaviours: [{ at: 'turn-start', do: { crash: { code: 4 } } }] };
    const s = supervise(scenario, { task: 'go' });
    const outcome = await s.finish({ status: 'failed' });
    const exit = s.events[s.events.length - 1];
    expect(exit).toMatchObject({ type: 'exit', status: 'failed', synthetic: true });
    expect(outcome.exitCode).toBe(4);
    expect(outcome.errorCode).toBe('no-exit-event');
    expect(outcome.error).toBeTypeOf('string');
  });

  it('killed from outside by SIGKILL: failed, signal reported', async () => {
    const s = supervise(LONG_TURN, { task: 'go' });
    await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
    process.kill(s.run.pid as number, 'SIGKILL');
    const outcome = await s.finish({ status: 'failed' });
    expect(outcome.signal).toBe('SIGKILL');
    expect(outcome.exitCode).toBeNull();
    expect(s.events[s.events.length - 1]).toMatchObject({ type: 'exit', synthetic: true });
  });

  it('a command that cannot be spawned: failed, spawnFailed, outcome still resolves, nothing left', async () => {
    const stateDir = freshStateDir();
    try {
      const run = spawnRun({ command: '/nonexistent/subvisor-no-such-binary', task: 'go', stateDir, killGraceMs: 200 });
      const events: RunEvent[] = [];
      run.on('event', (event) => events.push(event));
      const outcome = await within(run.outcome, BOUND_MS, 'outcome');
      expect(outcome.status).toBe('failed');
      expect(outcome.spawnFailed).toBe(true);
      expect(outcome.errorCode).toBe('spawn-failed');
      expect(outcome.error).toMatch(/ENOENT|not found|no such/i);
      checkStream(events, outcome);
      expect(events[events.length - 1]).toMatchObject({ type: 'exit', status: 'failed', synthetic: true });
      expectEmptyStateDir(stateDir);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});

describe('a child that does not speak the protocol at all', () => {
  async function notAWireChild(script: string, outputTailBytes?: number) {
    const stateDir = freshStateDir();
    try {
      const run = spawnRun({
        command: process.execPath,
        args: ['-e', script],
        task: 'go',
        stateDir,
        killGraceMs: 200,
        ...(outputTailBytes === undefined ? {} : { outputTailBytes }),
      });
      const events: RunEvent[] = [];
      run.on('event', (event) => events.push(event));
      const outcome = await within(run.outcome, BOUND_MS, 'outcome');
      checkStream(events, outcome);
      expectEmptyStateDir(stateDir);
      expect(outcome.status).toBe('failed');
      expect(outcome.errorCode).toBe('no-exit-event');
      return outcome;
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  }

  it('writes to stderr and exits 3: failed, exit code and its words in outputTail', async () => {
    const outcome = await notAWireChild("console.error('boom: no wire here'); process.exitCode = 3");
    expect(outcome.exitCode).toBe(3);
    expect(outcome.outputTail).toContain('boom: no wire here');
  });

  it('floods stdout: outputTail keeps only the last outputTailBytes', async () => {
    const outcome = await notAWireChild("process.stdout.write('x'.repeat(300000) + 'STDOUT-END')", 1000);
    expect(outcome.exitCode).toBe(0);
    expect(Buffer.byteLength(outcome.outputTail)).toBeLessThanOrEqual(1000);
    expect(outcome.outputTail.endsWith('STDOUT-END')).toBe(true);
  });
});

describe('the kill-after-grace backstop', () => {
  it('a child lingering after its exit event is reaped; outcome done', async () => {
    const scenario: Scenario = { turns: [{ answer: 'answered' }], misbehaviours: [{ at: 'after-exit', do: { linger: {} } }] };
    const s = supervise(scenario, { task: 'go' });
    const outcome = await s.finish({ status: 'done' });
    expect(outcome.finalText).toBe('answered');
    expect(outcome.killed).toBe(true);
    expect(outcome.escalated).toBe(false);
  });

  it('a lingering child that also ignores SIGTERM needs SIGKILL', async () => {
    const scenario: Scenario = {
      turns: [{ answer: 'answered' }],
      ignore: ['sigterm'],
      misbehaviours: [{ at: 'after-exit', do: { linger: {} } }],
    };
    const s = supervise(scenario, { task: 'go' });
    const outcome = await s.finish({ status: 'done' });
    expect(outcome.finalText).toBe('answered');
    expect(outcome.killed).toBe(true);
    expect(outcome.escalated).toBe(true);
  });

  it('child and grandchildren ignoring SIGTERM, one in its own session: none alive afterwards', async () => {
    const scenario: Scenario = {
      ignore: ['cancel', 'sigterm'],
      turns: [
        {
          steps: [
            { misbehave: [{ grandchildren: { count: 2, session: false } }, { grandchildren: { count: 1, session: true } }] },
            { pause: 60_000 },
          ],
        },
      ],
    };
    const s = supervise(scenario, { task: 'go' });
    const kills: string[] = [];
    s.run.on('kill', (step) => kills.push(step.signal));
    const reported = () => s.events.filter((event) => grandchildPidOf(event) !== undefined);
    await s.waitEvent(() => reported().length >= 3, 'three grandchild reports');
    const grandchildren = reported().map((event) => grandchildPidOf(event)!);
    const infos = grandchildren.map((pid) => procInfo(pid));
    expect(infos.every((info) => info !== undefined)).toBe(true);
    // The test means what it says: one grandchild leads its own session, the others share the child's group.
    expect(infos.filter((info) => info?.sid === info?.pid)).toHaveLength(1);
    expect(infos.filter((info) => info?.pgid === s.run.pid)).toHaveLength(2);
    const ack = await s.control((run) => run.cancel());
    expect(ack.status).toBe('accepted');
    const outcome = await s.finish({ status: 'cancelled', exitStatusDiffers: true });
    expect(outcome.killed).toBe(true);
    expect(outcome.escalated).toBe(true);
    expect(kills).toEqual(expect.arrayContaining(['SIGTERM', 'SIGKILL']));
    expect(kills.indexOf('SIGTERM')).toBeLessThan(kills.indexOf('SIGKILL'));
  });

  it('a grandchild in its own session, left behind by a child that exits right after spawning it, is reaped', async () => {
    for (const exitEvent of [true, false]) {
      const scenario: Scenario = {
        turns: [{ answer: 'x' }],
        misbehaviours: [
          { at: 'turn-start', do: [{ grandchildren: { count: 1, session: true } }, { crash: { code: 5, exitEvent, status: 'failed' } }] },
        ],
      };
      const s = supervise(scenario, { task: 'go' });
      const outcome = await s.finish({ status: 'failed' });
      expect(outcome.exitCode).toBe(5);
      expect(outcome.killed).toBe(true);
    }
  });

  it('the abort signal cancels the run (outcome cancelled) and reaps the tree', async () => {
    const controller = new AbortController();
    const scenario: Scenario = {
      turns: [{ steps: [{ misbehave: { grandchildren: { count: 1, session: true } } }, { pause: 60_000 }] }],
    };
    const s = supervise(scenario, { task: 'go', signal: controller.signal });
    await s.waitEvent((event) => grandchildPidOf(event) !== undefined, 'grandchild report');
    controller.abort();
    const outcome = await s.finish({ status: 'cancelled' });
    expect(outcome.errorCode).toBe('aborted');
  });

  it('an already aborted signal: cancelled, nothing left', async () => {
    const controller = new AbortController();
    controller.abort();
    const s = supervise('echo', { task: 'go', signal: controller.signal });
    const outcome = await s.finish({ status: 'cancelled' });
    expect(outcome.finalText).toBeUndefined();
  });

  it('a deadline the child ignores is enforced: timed-out, tree killed', async () => {
    const scenario: Scenario = {
      ...LONG_TURN,
      ignore: ['deadline', 'cancel', 'sigterm'],
      misbehaviours: [{ at: 'turn-start', do: { grandchildren: { count: 1, session: true } } }],
    };
    const started = Date.now();
    const s = supervise(scenario, { task: 'go', timeoutMs: 1000 });
    const outcome = await s.finish({ status: 'timed-out', exitStatusDiffers: true });
    expect(outcome.errorCode).toBe('deadline');
    expect(outcome.killed).toBe(true);
    expect(outcome.escalated).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('a deadline the child honours: timed-out by the child itself, no kill needed', async () => {
    // A generous grace: on a loaded machine the child's loop may wake well after the deadline, and the test is
    // about the child ending itself (no kill), not about how fast it notices.
    const s = supervise(LONG_TURN, { task: 'go', timeoutMs: 1000, killGraceMs: 3000 });
    const outcome = await s.finish({ status: 'timed-out', mirror: true });
    const exit = s.events[s.events.length - 1];
    expect(exit?.type === 'exit' && exit.synthetic).toBeFalsy();
    expect(outcome.killed).toBe(false);
  });

  it('ready never sent: failed after readyTimeoutMs, killed', async () => {
    const s = supervise({ ...LONG_TURN, readyDelayMs: 120_000 }, { task: 'go', readyTimeoutMs: 800 });
    const outcome = await s.finish({ status: 'failed' });
    expect(outcome.errorCode).toBe('ready-timeout');
    expect(outcome.error).toMatch(/ready/i);
    expect(outcome.killed).toBe(true);
    expect(outcome.durationMs).toBeGreaterThanOrEqual(800);
  });

  it('the built-in stubborn scenario under cancel: killed and escalated', async () => {
    const s = supervise('stubborn', { task: 'go' });
    await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
    await s.control((run) => run.cancel());
    const outcome = await s.finish({ exitStatusDiffers: true });
    expect(outcome.killed).toBe(true);
    expect(outcome.escalated).toBe(true);
  });
});
