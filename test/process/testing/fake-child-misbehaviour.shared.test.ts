// The fake child's misbehaviours and built-in scenarios, each observed from a scripted parent.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createReceiver } from '../../../src/wire/index.js';
import type { RejectionCode, WireEvent } from '../../../src/wire/index.js';
import { isAlive, waitUntilGone } from '../../../src/testing/index.js';
import type { FakeChild } from '../../../src/testing/index.js';
import { checkInvariants, scriptedChildren } from '../../helpers/scripted-parent.js';
import { procInfo } from '../../helpers/spawn-procs.js';

const { start, reap } = scriptedChildren();
afterEach(reap);

const exitOf = (events: WireEvent[]) => [...events].reverse().find((event) => event.type === 'exit');

/** Stays true for `ms`: a process that must NOT exit. */
async function staysAlive(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!isAlive(pid)) return false;
    await sleep(20);
  }
  return isAlive(pid);
}

/** The rejection codes a receiver gives the event file's lines (an empty list: all lines valid). */
function rejectionCodes(lines: string[]): RejectionCode[] {
  const receiver = createReceiver('event');
  return lines.flatMap((line) => {
    const result = receiver.receive(line);
    return result.ok ? [] : [result.rejection.code];
  });
}

describe('crashes', () => {
  it('crash: exit failed event, then exit code 2', async () => {
    const { parent } = start('crash', { task: 'go' });
    const { code } = await parent.waitExit();
    expect(code).toBe(2);
    expect(exitOf(parent.events())).toMatchObject({ status: 'failed', error: 'fake crash' });
  });

  it('crash-silent: no exit event, exit code 1', async () => {
    const { parent, fake } = start('crash-silent', { task: 'go' });
    const { code } = await parent.waitExit();
    expect(code).toBe(1);
    expect(parent.events().some((event) => event.type === 'exit')).toBe(false);
    expect(fake.transcript().exitCode).toBe(1);
  });

  it('a crash placed on a control type fires before that control is acked', async () => {
    const { parent } = start({ misbehaviours: [{ at: { control: 'steer' }, do: { crash: { code: 7 } } }], turns: [{ steps: [{ pause: 60_000 }] }] }, { task: 'go' });
    await parent.waitForEvent('turn-started');
    const steer = parent.send('steer', { text: 'boom' });
    const { code } = await parent.waitExit();
    expect(code).toBe(7);
    expect(parent.events().some((event) => event.type === 'control-ack' && event.ref === steer)).toBe(false);
  });
});

describe('unresponsive children', () => {
  it('hang: ready, then no control is ever acked; SIGTERM still ends it', async () => {
    const { parent } = start('hang', { task: 'go' });
    await parent.waitForEvent('ready');
    expect(await staysAlive(parent.pid, 400)).toBe(true);
    expect(parent.events().map((event) => event.type)).toEqual(['agent-started', 'ready']);
    parent.child.kill('SIGTERM');
    expect((await parent.waitExit()).signal).toBe('SIGTERM');
  });

  it('never-ready: writes nothing at all', async () => {
    const { parent } = start('never-ready', { task: 'go' });
    expect(await staysAlive(parent.pid, 400)).toBe(true);
    expect(parent.lines()).toEqual([]);
  });

  it('stubborn: acks cancel but keeps running, and ignores SIGTERM; SIGKILL ends it', async () => {
    const { parent, fake } = start('stubborn', { task: 'go' });
    await parent.waitForEvent('turn-started');
    expect((await parent.ackOf(parent.send('cancel'))).status).toBe('accepted');
    parent.child.kill('SIGTERM');
    expect(await staysAlive(parent.pid, 400)).toBe(true);
    expect(parent.events().some((event) => event.type === 'exit')).toBe(false);
    parent.child.kill('SIGKILL');
    expect((await parent.waitExit()).signal).toBe('SIGKILL');
    const notes = fake.transcript().entries.filter((entry) => entry.kind === 'note').map((entry) => (entry.kind === 'note' ? entry.what : ''));
    expect(notes).toContain('ignored SIGTERM');
  });

  it('stop-acking: the prompt is acked, later controls are read but never acked', async () => {
    const { parent, fake } = start('stop-acking', { task: 'go' });
    await parent.waitForEvent('turn-started');
    const steer = parent.send('steer', { text: 'hello?' });
    await waitForTranscript(fake, (transcript) => transcript.controls.length === 2);
    expect(parent.events().filter((event) => event.type === 'control-ack').map((event) => event.type === 'control-ack' && event.ref)).toEqual([1]);
    expect(fake.transcript().controls[1]).toMatchObject({ action: 'ignored (stopped acking)' });
    expect(steer).toBe(2);
  });

  it('stopAcking apply: controls take effect without acks', async () => {
    const { parent } = start({ misbehaviours: [{ at: 'turn-start', do: { stopAcking: 'apply' } }], turns: [{ steps: [{ pause: 200 }], answer: 'done' }] }, { task: 'go' });
    await parent.waitForEvent('turn-started');
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(code).toBe(0);
    expect(parent.events().filter((event) => event.type === 'control-ack')).toHaveLength(1);
    expect(exitOf(parent.events())?.status).toBe('done');
  });

  it('ignore-finalize: finalize is accepted but the final turn never runs; cancel still ends the run', async () => {
    const { parent, fake } = start('ignore-finalize', { task: 'go' });
    await parent.waitForEvent('turn-started');
    expect((await parent.ackOf(parent.send('finalize'))).status).toBe('accepted');
    expect(await staysAlive(parent.pid, 300)).toBe(true);
    expect(parent.events().filter((event) => event.type === 'turn-started')).toHaveLength(1);
    await parent.ackOf(parent.send('cancel'));
    const { code } = await parent.waitExit();
    expect(exitOf(parent.events())?.status).toBe('cancelled');
    expect(checkInvariants(parent, code)).toEqual([]);
    expect(fake.transcript().states).toEqual(['starting', 'ready', 'running', 'finalizing', 'cancelled']);
  });

  it('ignore-deadline: stays alive past FEN_WIRE_DEADLINE', async () => {
    const { parent } = start('ignore-deadline', { task: 'go', deadline: Math.floor(Date.now() / 1000) - 1 });
    await parent.waitForEvent('turn-started');
    expect(await staysAlive(parent.pid, 500)).toBe(true);
    await parent.ackOf(parent.send('cancel'));
    expect((await parent.waitExit()).code).toBe(1);
  });
});

async function waitForTranscript(fake: FakeChild, predicate: (transcript: ReturnType<FakeChild['transcript']>) => boolean) {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    try {
      if (predicate(fake.transcript())) return;
    } catch {
      // not started yet
    }
    await sleep(10);
  }
  throw new Error('transcript condition not reached');
}

describe('process trees', () => {
  it('grandchildren: one in the group, one in its own session, both ignore SIGTERM and carry the token', async () => {
    const { parent, fake } = start('grandchildren', { task: 'go' });
    const events = await parent.waitFor((all) => all.filter((event) => 'grandchild-pid' in event).length === 2, 'two grandchildren');
    const pidOf = (ownSession: boolean) =>
      events.find((event) => 'grandchild-pid' in event && event['own-session?'] === ownSession)?.['grandchild-pid'] as number;
    const pids = [pidOf(false), pidOf(true)];
    const [child, first, second] = [parent.pid, pids[0] as number, pids[1] as number].map((pid) => procInfo(pid)!);
    expect(first?.pgid).toBe(child?.pgid);
    expect(first?.sid).toBe(child?.sid);
    expect(second?.sid).not.toBe(child?.sid);
    expect(second?.sid).toBe(pids[1]);
    expect(fake.transcript().grandchildren.sort()).toEqual([...pids].sort());
    expect(fake.livePids().sort()).toEqual([parent.pid, ...pids].sort());
    for (const pid of [parent.pid, ...pids]) process.kill(pid, 'SIGTERM');
    expect(await staysAlive(pids[0] as number, 300)).toBe(true);
    expect(isAlive(pids[1] as number) && isAlive(parent.pid)).toBe(true);
    for (const pid of [parent.pid, ...pids]) process.kill(pid, 'SIGKILL');
    expect(await waitUntilGone(pids)).toEqual([]);
  });

  it('grandchildren exit on their own after lifeMs, even orphaned', async () => {
    const { parent, fake } = start({ turns: [{ steps: [{ misbehave: { grandchildren: { count: 2, session: true, lifeMs: 400 } } }, { pause: 60_000 }] }] }, { task: 'go' });
    const events = await parent.waitFor((all) => all.filter((event) => 'grandchild-pid' in event).length === 2, 'two grandchildren');
    const pids = events.flatMap((event) => ('grandchild-pid' in event ? [event['grandchild-pid'] as number] : []));
    parent.child.kill('SIGKILL');
    await parent.waitExit();
    expect(await waitUntilGone(pids, 10_000)).toEqual([]);
    expect(fake.livePids()).toEqual([]);
  });
});

describe('bad event lines', () => {
  it('garbage: garbage, oversized, out-of-order, unknown-type and invalid-payload lines, then a normal run', async () => {
    const { parent } = start('garbage', { task: 'go' });
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(code).toBe(0);
    const lines = parent.lines();
    expect(rejectionCodes(lines)).toEqual(['malformed', 'too-large', 'out-of-order', 'unknown-type', 'invalid-payload']);
    expect(lines.some((line) => Buffer.byteLength(line) >= 65536)).toBe(true);
    const last = JSON.parse(lines.at(-1) as string) as WireEvent;
    expect(last).toMatchObject({ type: 'exit', status: 'done' });
  });

  it('version-mismatch and foreign-run builtins write one such line each', async () => {
    for (const [name, code] of [['version-mismatch', 'version-mismatch'], ['foreign-run', undefined]] as const) {
      const { parent } = start(name, { task: 'go' });
      await parent.waitFor((all) => all.length >= 5 && all.some((event) => event.v !== 1 || event.run !== parent.runId), name);
      const lines = parent.lines();
      if (code !== undefined) expect(rejectionCodes(lines)).toContain(code);
      else expect(lines.filter((line) => line.includes('"run":"another-run"'))).toHaveLength(1);
      expect(rejectionCodes(lines).filter((found) => found === 'out-of-order')).toEqual([]);
    }
  });

  it('truncate-events: the event file shrinks mid-run and writing goes on at the new end', async () => {
    const { parent, fake } = start('truncate-events', { task: 'go' });
    // The truncation wipes turn-started too: watch the child's transcript instead of the events.
    await waitForTranscript(fake, (transcript) => transcript.entries.some((entry) => entry.kind === 'note' && JSON.stringify(entry.detail).includes('truncateEvents')));
    expect(statSync(parent.eventPath).size).toBe(0);
    const steer = parent.send('steer', { text: 'still there?' });
    await parent.waitFor(() => parent.lines().length > 0, 'a line after truncation');
    expect(JSON.parse(parent.lines()[0] as string)).toMatchObject({ type: 'control-ack', ref: steer, status: 'accepted' });
  });

  it('split-writes: each line arrives in pieces cut inside multi-byte characters, and reassembles exactly', async () => {
    const { parent } = start(
      { misbehaviours: [{ at: 'before-ready', do: { splitWrites: { pieces: 2, gapMs: 150 } } }], turns: [{ answer: 'ü'.repeat(200) }] },
      { task: 'go' },
    );
    let sawTornCharacter = false;
    const until = Date.now() + 15_000;
    while (!sawTornCharacter && Date.now() < until && !parent.hasExited) {
      const fd = openSync(parent.eventPath, 'r');
      try {
        const size = statSync(parent.eventPath).size;
        const tail = Buffer.alloc(1);
        if (size > 0 && readSync(fd, tail, 0, 1, size - 1) === 1 && ((tail[0] as number) & 0xc0) === 0xc0) sawTornCharacter = true;
      } finally {
        closeSync(fd);
      }
      await sleep(5);
    }
    expect(sawTornCharacter).toBe(true);
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    const { code } = await parent.waitExit(30_000);
    expect(checkInvariants(parent, code)).toEqual([]);
    const answer = parent.events().find((event) => event.type === 'result');
    expect(answer?.type === 'result' && answer['final-text']).toBe('ü'.repeat(200));
  });
});

describe('endings', () => {
  it('no-result: exit done with no result, code 0', async () => {
    const { parent } = start('no-result', { task: 'go' });
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(code).toBe(0);
    const events = parent.events();
    expect(events.some((event) => event.type === 'result')).toBe(false);
    expect(exitOf(events)?.status).toBe('done');
  });

  it('linger: alive after its exit event, ignoring SIGTERM, until killed', async () => {
    const { parent } = start('linger', { task: 'go' });
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    await parent.waitForEvent('exit');
    parent.child.kill('SIGTERM');
    expect(await staysAlive(parent.pid, 400)).toBe(true);
    parent.child.kill('SIGKILL');
    await parent.waitExit();
  });

  it('linger with ms: exits by itself afterwards with the exit code of its status', async () => {
    const { parent } = start({ misbehaviours: [{ at: 'after-exit', do: { linger: { ms: 300 } } }] }, { task: 'go' });
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    await parent.waitForEvent('exit');
    const exitSeen = Date.now();
    const { code } = await parent.waitExit();
    expect(Date.now() - exitSeen).toBeGreaterThanOrEqual(200);
    expect(code).toBe(0);
  });
});

describe('flood', () => {
  it('writes count events of about `bytes` bytes, each stamped with an increasing mono-ns', async () => {
    const { parent, fake } = start(
      { turns: [{ steps: [{ misbehave: { flood: { count: 500, bytes: 1000, stamp: true } } }], answer: 'ok' }] },
      { task: 'go' },
    );
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(checkInvariants(parent, code)).toEqual([]);
    const flood = parent.lines().filter((line) => line.includes('"mono-ns"'));
    expect(flood).toHaveLength(500);
    for (const line of flood) expect(Math.abs(Buffer.byteLength(line) + 1 - 1000)).toBeLessThanOrEqual(3);
    const stamps = flood.map((line) => BigInt((JSON.parse(line) as { 'mono-ns': string })['mono-ns']));
    for (let index = 1; index < stamps.length; index += 1) expect(stamps[index]! >= stamps[index - 1]!).toBe(true);
    expect(process.hrtime.bigint() >= stamps.at(-1)!).toBe(true);
    const note = fake.transcript().entries.find((entry) => entry.kind === 'note' && entry.what === 'flood');
    expect(note).toMatchObject({ detail: { count: 500, written: 500 } });
    expect(fake.transcript().events.length).toBeLessThan(100);
  });

  it('paces a flood at `rate` events per second', async () => {
    const { parent } = start({ turns: [{ steps: [{ misbehave: { flood: { count: 21, rate: 100, stamp: true } } }] }] }, { task: 'go' });
    await parent.waitForEvent('turn-complete');
    const stamps = parent.lines().filter((line) => line.includes('"mono-ns"')).map((line) => BigInt((JSON.parse(line) as { 'mono-ns': string })['mono-ns']));
    expect(stamps).toHaveLength(21);
    // 20 intervals at 100/s: at least ~200 ms from first to last (a lower bound only).
    expect(Number(stamps.at(-1)! - stamps[0]!) / 1e6).toBeGreaterThanOrEqual(180);
  });
});
