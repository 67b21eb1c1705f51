// Conformance of the fake child's channel handling: bad controls, version mismatch, deadline, control file, big answers, parent death.
import { execFile, spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createReceiver, MAX_LINE_BYTES, rejectionAck } from '../../../src/wire/index.js';
import type { WireEvent } from '../../../src/wire/index.js';
import { expandText } from '../../../src/testing/text.js';
import { fakeChild, isAlive, waitUntilGone } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { checkInvariants, FAST_TICKS, scriptedChildren } from '../../helpers/scripted-parent.js';

const FAST = FAST_TICKS;
const LONG: Scenario = { turns: [{ steps: [{ pause: 60_000 }], answer: 'never' }] };

const { start, reap } = scriptedChildren();
afterEach(reap);

const acks = (events: WireEvent[]) => events.filter((event): event is Extract<WireEvent, { type: 'control-ack' }> => event.type === 'control-ack');
const exitOf = (events: WireEvent[]) => {
  const last = events.at(-1);
  return last?.type === 'exit' ? last : undefined;
};

describe('bad control lines', () => {
  it('answers each invalid line with exactly one rejection ack (ref only when the seq is usable), then goes on', async () => {
    const { parent } = start('echo');
    await parent.waitForEvent('ready');
    const run = parent.runId;
    const lines = [
      'not json at all',
      '[1,2,3]',
      JSON.stringify({ seq: 1, type: 'prompt', run, text: 'no v' }),
      JSON.stringify({ v: 1, seq: 2, type: 'ready', run }),
      JSON.stringify({ v: 1, seq: 3, type: 'dance', run }),
      JSON.stringify({ v: 1, seq: 4, type: 'prompt', run }),
      JSON.stringify({ v: 1, seq: 4, type: 'cancel', run }),
      JSON.stringify({ v: 1, seq: 5, type: 'cancel', run: 'someone-else' }),
      JSON.stringify({ v: 1, seq: 6, type: 'prompt', run, text: 'still fine', 'extra-field': true }),
      '',
    ];
    parent.appendRaw(`${lines.join('\n')}\n`);
    const events = await parent.waitFor((all) => acks(all).length === lines.length, 'all acks');
    const got = acks(events).map((ack) => [ack.status, ack.ref, ack.reason]);
    // The acks are exactly what the wire core's receiver + rejectionAck make of the same lines.
    const receiver = createReceiver('control');
    const expected = lines.map((line) => {
      const result = receiver.receive(line);
      if (!result.ok) {
        const ack = rejectionAck(result.rejection);
        return [ack.status, ack.ref, ack.reason];
      }
      return result.message.run === run
        ? ['accepted', result.message.seq, undefined]
        : ['rejected', result.message.seq, `run ${result.message.run} is not ${run}`];
    });
    expect(got).toEqual(expected);
    expect(got.map((ack) => ack[1])).toEqual([undefined, undefined, 1, 2, 3, 4, undefined, 5, 6, undefined]);
    expect(got[3]?.[2]).toBe('ready is not a control message');
    expect(got[4]?.[2]).toBe('unknown control type: dance');
    expect(got[7]?.[2]).toBe(`run someone-else is not ${run}`);
    await parent.waitForEvent('turn-complete');
    parent.appendRaw(`${JSON.stringify({ v: 1, seq: 7, type: 'close', run })}\n`);
    const { code } = await parent.waitExit();
    expect(code).toBe(0);
    expect(checkInvariants(parent, code)).toEqual([]);
  });

  it('rejects a too-long control line once, skips to its newline, and reads the next line', async () => {
    const { parent, fake } = start('echo');
    await parent.waitForEvent('ready');
    const run = parent.runId;
    const line = (seq: number, bytes: number) => {
      const head = JSON.stringify({ v: 1, seq, type: 'prompt', run, text: '' }).slice(0, -2);
      return `${head}${'é'.repeat((bytes - head.length - 2) / 2)}"}`;
    };
    const atLimit = line(1, MAX_LINE_BYTES); // 65536 bytes: too large
    const justFits = line(2, MAX_LINE_BYTES - 2); // 65534 bytes: legal
    expect(Buffer.byteLength(atLimit)).toBe(MAX_LINE_BYTES);
    const huge = `${'x'.repeat(200_000)}`; // spans several reads
    parent.appendRaw(`${atLimit}\n${huge}\n${justFits}\n`);
    const events = await parent.waitFor((all) => acks(all).length === 3, 'three acks');
    const [first, second, third] = acks(events);
    expect(first).toMatchObject({ status: 'rejected', reason: expect.stringContaining('65536') });
    expect(first?.ref).toBeUndefined();
    expect(second).toMatchObject({ status: 'rejected' });
    expect(second?.ref).toBeUndefined();
    expect(third).toMatchObject({ status: 'accepted', ref: 2 });
    await parent.waitForEvent('turn-complete');
    parent.appendRaw(`${JSON.stringify({ v: 1, seq: 3, type: 'close', run })}\n`);
    const { code } = await parent.waitExit();
    expect(checkInvariants(parent, code)).toEqual([]);
    const transcript = fake.transcript();
    expect(transcript.controls).toHaveLength(4);
    expect(transcript.controls[0]?.rejection?.code).toBe('too-large');
  });

  it('a version mismatch gets no ack: the child exits failed (code 1) and reads no further', async () => {
    const { parent } = start(LONG);
    await parent.waitForEvent('ready');
    const seq = parent.send('prompt', { text: 'go' });
    await parent.waitForEvent('turn-started');
    parent.appendRaw(`${JSON.stringify({ v: 2, seq: seq + 1, type: 'cancel', run: parent.runId })}\n`);
    parent.appendRaw(`${JSON.stringify({ v: 1, seq: seq + 2, type: 'cancel', run: parent.runId })}\n`);
    const { code } = await parent.waitExit();
    expect(code).toBe(1);
    const events = parent.events();
    expect(acks(events).map((ack) => ack.ref)).toEqual([seq]);
    expect(exitOf(events)).toMatchObject({ status: 'failed', error: expect.stringContaining('version') });
    expect(events.at(-2)).toMatchObject({ type: 'turn-complete', 'stop-reason': 'aborted' });
  });
});

describe('deadline', () => {
  it('a passed FEN_WIRE_DEADLINE ends a running turn: aborted turn-complete, exit timed-out, code 1', async () => {
    // Far enough ahead that a loaded machine still starts the turn before it.
    const deadline = Math.ceil(Date.now() / 1000) + 3;
    const { parent, fake } = start(LONG, { deadline, task: 'work forever' });
    await parent.waitForEvent('turn-started');
    const { code } = await parent.waitExit();
    expect(code).toBe(1);
    expect(Date.now()).toBeGreaterThanOrEqual(deadline * 1000);
    const events = parent.events();
    expect(exitOf(events)?.status).toBe('timed-out');
    expect(events.at(-2)).toMatchObject({ type: 'turn-complete', 'stop-reason': 'aborted' });
    expect(checkInvariants(parent, code)).toEqual([]);
    expect(fake.transcript().finalState).toBe('timed-out');
  });

  it('a deadline already passed at start times out right after ready', async () => {
    const { parent } = start('echo', { deadline: Math.floor(Date.now() / 1000) - 10 });
    const { code } = await parent.waitExit();
    expect(code).toBe(1);
    expect(parent.events().map((event) => event.type)).toEqual(['agent-started', 'ready', 'exit']);
    expect(exitOf(parent.events())?.status).toBe('timed-out');
  });
});

describe('the control file', () => {
  it('may be created after the child started', async () => {
    const { parent } = start('echo', { createControl: false });
    await parent.waitForEvent('ready');
    expect(existsSync(parent.controlPath)).toBe(false);
    const seq = parent.send('prompt', { text: 'late file' });
    expect((await parent.ackOf(seq)).status).toBe('accepted');
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(checkInvariants(parent, code)).toEqual([]);
  });

  it('shrinking below the consumed offset is fatal: exit failed', async () => {
    const { parent } = start(LONG);
    await parent.waitForEvent('ready');
    await parent.ackOf(parent.send('prompt', { text: 'go' }));
    truncateSync(parent.controlPath, 0);
    const { code } = await parent.waitExit();
    expect(code).toBe(1);
    const events = parent.events();
    expect(exitOf(events)).toMatchObject({ status: 'failed', error: expect.stringContaining('shrank') });
    expect(events.at(-2)).toMatchObject({ type: 'turn-complete', 'stop-reason': 'aborted' });
    expect(checkInvariants(parent, code)).toEqual([]);
  });
});

describe('the answer', () => {
  it('a 1 MiB multi-byte answer goes whole to a private final-text-path file; final-text is a cut prefix', async () => {
    const { parent } = start('huge-answer', { task: 'write a lot' });
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    const { code } = await parent.waitExit();
    expect(code).toBe(0);
    expect(checkInvariants(parent, code)).toEqual([]);
    const resultLine = parent.lines().find((line) => line.includes('"type":"result"')) as string;
    expect(Buffer.byteLength(resultLine)).toBeLessThan(MAX_LINE_BYTES);
    const result = parent.events().find((event) => event.type === 'result');
    if (result?.type !== 'result') throw new Error('no result');
    const path = result['final-text-path'] as string;
    try {
      const expected = expandText({ repeat: 'aé€😀', bytes: 1024 * 1024 });
      expect(result['truncated?']).toBe(true);
      expect(lstatSync(path).isFile()).toBe(true);
      expect(lstatSync(path).mode & 0o777).toBe(0o600);
      const whole = readFileSync(path);
      expect(whole.equals(Buffer.from(expected, 'utf8'))).toBe(true);
      const cut = result['final-text'] as string;
      expect(cut.length).toBeGreaterThan(10_000);
      expect(expected.startsWith(cut)).toBe(true);
      expect(cut).not.toContain('\uFFFD');
      const text = parent.events().find((event) => event.type === 'assistant-text' && event['final?']);
      expect(text?.['transport-truncated?']).toBe(true);
    } finally {
      rmSync(path, { force: true });
    }
  });

  it('an answer that fits one line is sent whole, without truncated? or a file', async () => {
    const { parent } = start({ turns: [{ answer: { repeat: '€', bytes: 30_000 } }] }, { task: 'medium' });
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    const { code } = await parent.waitExit();
    const result = parent.events().find((event) => event.type === 'result');
    expect(result?.type === 'result' && result['final-text']).toBe('€'.repeat(10_000));
    expect(result).not.toHaveProperty('truncated?');
    expect(result).not.toHaveProperty('final-text-path');
    expect(checkInvariants(parent, code)).toEqual([]);
  });
});

describe('lifelines', () => {
  it('exits failed when its parent dies', async () => {
    const fake = fakeChild(LONG, FAST);
    const dir = mkdtempSync(join(tmpdir(), 'subvisor-orphan-'));
    const events = join(dir, 'events.jsonl');
    writeFileSync(join(dir, 'control.jsonl'), `${JSON.stringify({ v: 1, seq: 1, type: 'prompt', run: 'run', text: 'go' })}\n`);
    // A middle process that starts the child and then dies, leaving it orphaned.
    const middleScript = `
      const { spawn } = require('node:child_process');
      const child = spawn(process.argv[1], process.argv.slice(2), { stdio: 'ignore', detached: true });
      console.log(child.pid);
      setInterval(() => {}, 1000);`;
    const middle = spawn(process.execPath, ['-e', middleScript, fake.command, ...fake.args], {
      env: { ...process.env, ...fake.env, FEN_WIRE_CONTROL_PATH: join(dir, 'control.jsonl'), FEN_WIRE_EVENT_PATH: events },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const childPid = await new Promise<number>((resolve) => middle.stdout.once('data', (data: Buffer) => resolve(Number(String(data).trim()))));
      const until = Date.now() + 10_000;
      const started = () => existsSync(events) && readFileSync(events, 'utf8').includes('"turn-started"');
      while (!started() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(isAlive(childPid)).toBe(true);
      middle.kill('SIGKILL');
      expect(await waitUntilGone([childPid], 15_000)).toEqual([]);
      const last = readFileSync(events, 'utf8').trim().split('\n').at(-1) as string;
      expect(JSON.parse(last)).toMatchObject({ type: 'exit', status: 'failed', error: 'parent process died' });
      expect(fake.transcript()).toMatchObject({ finalState: 'failed', exitCode: 1 });
    } finally {
      middle.kill('SIGKILL');
      for (const pid of fake.livePids()) process.kill(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      fake.cleanup();
    }
  });

  it('exits when the process that made it is gone, even when orphaned before it could see its parent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'subvisor-owner-'));
    const owner = `import { execFile, spawn } from 'node:child_process';
      import { fakeChild } from 'subvisor/testing';
      const fake = fakeChild('hang', { idleTickMs: 20, transcript: false });
      const env = { ...process.env, ...fake.env, FEN_WIRE_CONTROL_PATH: ${JSON.stringify(join(dir, 'c'))}, FEN_WIRE_EVENT_PATH: ${JSON.stringify(join(dir, 'e'))} };
      const child = spawn(fake.command, fake.args, { env, stdio: 'ignore', detached: true });
      console.log(child.pid);
      process.exit(0);`;
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', owner], { cwd: resolve(import.meta.dirname, '../../..') });
      const childPid = Number(stdout.trim());
      expect(childPid).toBeGreaterThan(0);
      expect(await waitUntilGone([childPid], 15_000)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('without FEN_WIRE_EVENT_PATH it prints usage and exits 1', async () => {
    const fake = fakeChild('echo');
    try {
      const child = spawn(fake.command, fake.args, { env: { ...process.env, ...fake.env, FEN_WIRE_CONTROL_PATH: '/nonexistent' }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += String(chunk)));
      const code = await new Promise((resolve) => child.on('exit', resolve));
      expect(code).toBe(1);
      expect(stderr).toContain('FEN_WIRE_EVENT_PATH is required');
    } finally {
      fake.cleanup();
    }
  });
});
