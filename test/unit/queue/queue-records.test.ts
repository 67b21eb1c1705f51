// Pure parts of subvisor/queue: job data and stream record checks, retention, the answer cap, profiles and their run options.
import { describe, expect, it } from 'vitest';
import { capAnswer } from '../../../src/queue/answer-cap.js';
import { checkProfiles, runOptionsFor } from '../../../src/queue/profiles.js';
import { checkJobData, parseControlMessage, parseRecord, queueKeys, resolveRetention } from '../../../src/queue/records.js';
import { childlessOutcome } from '../../../src/run/outcome.js';
import { redisOptions } from '../../../src/queue/connection.js';

const job = { v: 1 as const, profile: 'p', attempts: 1, maxEvents: 100, ttlMs: 1000 };

describe('job data from Redis (untrusted on the worker)', () => {
  it('accepts a well-formed job and refuses each malformed field with a reason', () => {
    expect(checkJobData(job)).toEqual({ ok: true, data: job });
    const bad: Array<[unknown, RegExp]> = [
      [null, /not an object/],
      [{ ...job, v: 2 }, /version 2/],
      [{ ...job, profile: '' }, /names no profile/],
      [{ ...job, task: 5 }, /task is not a string/],
      [{ ...job, timeoutMs: -1 }, /timeoutMs/],
      [{ ...job, attempts: 0 }, /attempts/],
      [{ ...job, maxEvents: 1.5 }, /maxEvents/],
      [{ ...job, ttlMs: 1e12 }, /ttlMs/],
      [{ ...job, keepAlive: 'yes' }, /keepAlive/],
    ];
    for (const [data, reason] of bad) {
      const checked = checkJobData(data);
      expect(checked.ok).toBe(false);
      if (!checked.ok) expect(checked.reason).toMatch(reason);
    }
  });

  it("keeps a producer's trace context and drops one that is not (the run goes on, untraced)", () => {
    const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', tracestate: 'vendor=1' };
    expect(checkJobData({ ...job, trace })).toEqual({ ok: true, data: { ...job, trace } });
    const malformed = [
      'a string',
      ['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
      { traceparent: 42 },
      { 'trace parent': 'x' },
      { traceparent: 'line\nbreak' },
      { traceparent: 'x'.repeat(5000) },
      Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`k${index}`, 'v'])),
      {},
    ];
    for (const bad of malformed) expect(checkJobData({ ...job, trace: bad })).toEqual({ ok: true, data: job });
  });

  it('parses control messages and drops anything else', () => {
    expect(parseControlMessage('{"runId":"r","req":"q","control":"steer","text":"t"}')).toEqual({ runId: 'r', req: 'q', control: 'steer', text: 't' });
    for (const text of ['nope', '[]', '{"runId":"r","req":"q","control":"rm -rf"}', '{"runId":1,"req":"q","control":"cancel"}', '{"runId":"r","req":"q","control":"steer","text":3}']) {
      expect(parseControlMessage(text)).toBeUndefined();
    }
  });
});

describe('stream records (read back by the producer)', () => {
  it('round-trips every kind and names what is wrong with a bad one', () => {
    const outcome = childlessOutcome('r', 'done', 'aborted', 'x');
    const records = [
      { k: 'attempt', a: 1, worker: 'w', n: 1 },
      { k: 'event', a: 1, t: 5, e: { type: 'ready', v: 1, seq: 1, run: 'r' }, n: 2 },
      { k: 'state', a: 1, s: 'running', n: 3 },
      { k: 'ack', a: 1, req: 'q', control: 'steer', origin: 'caller', ack: { status: 'accepted', seq: 2, delivers: true }, n: 4 },
      { k: 'delivery', a: 1, seq: 2, d: 'injected', n: 5 },
      { k: 'retry', a: 1, outcome, backoffMs: 0, n: 6 },
      { k: 'handed-back', a: 1, worker: 'w', n: 7 },
      { k: 'outcome', outcome },
    ];
    for (const record of records) expect(parseRecord(JSON.stringify(record))).toEqual({ ok: true, record });
    const bad: Array<[string, RegExp]> = [
      ['{', /not JSON/],
      ['"x"', /not an object/],
      ['{"k":"what"}', /unknown kind/],
      ['{"k":"event","e":{"type":"ready"}}', /no attempt number/],
      ['{"k":"event","a":1}', /no event/],
      ['{"k":"ack","a":1,"ack":{"status":"accepted"}}', /no valid ack/],
      ['{"k":"outcome","outcome":{"runId":"r","status":"won"}}', /no valid outcome/],
      ['{"k":"delivery","a":1,"seq":1,"d":"lost"}', /delivery record is invalid/],
      ['{"k":"state","a":1,"s":"running","n":0}', /invalid number n/],
    ];
    for (const [text, reason] of bad) {
      const parsed = parseRecord(text);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.reason).toMatch(reason);
    }
  });

  it('names the keys of a queue under its prefix and refuses names that would collide', () => {
    const keys = queueKeys('jobs', 'acme');
    expect(keys.events('r1')).toBe('acme:jobs:sv:events:r1');
    expect(keys.cancelled('r1')).toBe('acme:jobs:sv:cancelled:r1');
    expect(keys.controls).toBe('acme:jobs:sv:controls');
    expect(() => queueKeys('a:b')).toThrow(TypeError);
    expect(() => queueKeys('')).toThrow(TypeError);
  });

  it('layers retention options over the defaults and checks them', () => {
    expect(resolveRetention(undefined)).toEqual({ maxEvents: 10_000, ttlMs: 3_600_000 });
    expect(resolveRetention({ maxEvents: 5 }, { ttlMs: 10 })).toEqual({ maxEvents: 5, ttlMs: 10 });
    expect(() => resolveRetention({ maxEvents: 0 })).toThrow(RangeError);
    expect(() => resolveRetention({ ttlMs: -1 })).toThrow(RangeError);
  });
});

describe('the answer cap', () => {
  it('cuts at a character boundary, marks the outcome truncated and keeps an earlier note', () => {
    const outcome = { ...childlessOutcome('r', 'done', 'aborted', 'x'), finalText: 'aé€😀'.repeat(10) };
    const capped = capAnswer(outcome, 11);
    expect(Buffer.byteLength(capped.finalText!, 'utf8')).toBeLessThanOrEqual(11);
    expect('aé€😀'.repeat(10).startsWith(capped.finalText!)).toBe(true);
    expect(capped.finalText).toBe('aé€😀a');
    expect(capped.truncated).toBe(true);
    expect(capped.truncationNote).toMatch(/cut to 11 of its 100 bytes/);
    expect(capAnswer(outcome, 1000)).toBe(outcome);
    const noted = capAnswer({ ...outcome, truncated: true, truncationNote: 'child cut it' }, 3);
    expect(noted.finalText).toBe('aé');
    expect(noted.truncationNote).toMatch(/^child cut it; the answer was cut/);
  });
});

describe('profiles', () => {
  it('refuses malformed profiles, naming the profile and the field', () => {
    expect(() => checkProfiles({})).toThrow(/empty/);
    expect(() => checkProfiles({ a: { command: '' } })).toThrow(/profile "a": command/);
    expect(() => checkProfiles({ a: { command: 'x', args: [1] } })).toThrow(/args/);
    expect(() => checkProfiles({ a: { command: 'x', shell: true } })).toThrow(/unknown field "shell"/);
    expect(() => checkProfiles({ a: { command: 'x', protocol: 'ftp' } })).toThrow(/protocol/);
    expect(() => checkProfiles({ a: { command: 'x', limits: { maxTimeoutMs: 'long' } } })).toThrow(/limits.maxTimeoutMs/);
    expect(() => checkProfiles({ a: { command: 'x', limits: { memory: 1 } } })).toThrow(/unknown field "memory"/);
    expect(() => checkProfiles({ a: { command: 'x', treeLimits: { memory: 1 } } })).toThrow('profile "a": treeLimits.memory is not a limit');
    expect(() => checkProfiles({ a: { command: 'x', treeLimits: { processes: 0 } } })).toThrow('profile "a": treeLimits.processes must be an integer >= 1');
    expect(() => checkProfiles({ a: { command: 'x', sandbox: { net: true } } })).toThrow('profile "a": sandbox.net is not a sandbox option');
    expect(() => checkProfiles({ a: { command: 'x', sandbox: 'yes' } })).toThrow('profile "a": sandbox must be a boolean');
  });

  it("passes a profile's tree limits and sandbox to each run, a copy the run cannot change in the profile", () => {
    const profile = checkProfiles({ p: { command: 'agent', treeLimits: { memoryBytes: 1 << 30, processes: 64 }, sandbox: { writable: ['/srv/cache'], network: true } } })['p']!;
    const options = runOptionsFor(profile, { ...job, task: 'go' }, 'run-1', undefined);
    expect(options).toMatchObject({ limits: { memoryBytes: 1 << 30, processes: 64 }, sandbox: { writable: ['/srv/cache'], network: true } });
    (options.sandbox as { writable: string[] }).writable.push('/');
    expect(profile.sandbox).toEqual({ writable: ['/srv/cache'], network: true });
    expect(runOptionsFor(checkProfiles({ q: { command: 'agent', sandbox: true } })['q']!, { ...job }, 'run-2', undefined).sandbox).toBe(true);
  });

  it('builds run options from the profile; the job chooses only the task, keepAlive and a capped time budget', () => {
    const profile = checkProfiles({ p: { command: 'agent', args: ['--x'], env: { K: 'v' }, protocol: 'hep', limits: { timeoutMs: 1000, maxTimeoutMs: 5000, killGraceMs: 50 } } })['p']!;
    const data = { ...job, task: 'do it', keepAlive: true, timeoutMs: 60_000 } as const;
    expect(runOptionsFor(profile, data, 'run-1', '/state')).toEqual({
      command: 'agent',
      args: ['--x'],
      env: { K: 'v' },
      protocol: 'hep',
      runId: 'run-1',
      stateDir: '/state',
      task: 'do it',
      keepAlive: true,
      timeoutMs: 5000,
      killGraceMs: 50,
      handleParentSignals: false,
    });
    expect(runOptionsFor(profile, { ...job }, 'run-2', undefined).timeoutMs).toBe(1000);
  });

  it("gives every queued run a deadline: without the job's or the profile's, spawnRun's default, within the cap", () => {
    const profiles = checkProfiles({ plain: { command: 'agent' }, capped: { command: 'agent', limits: { maxTimeoutMs: 600_000 } } });
    expect(runOptionsFor(profiles['plain']!, { ...job }, 'run-3', undefined).timeoutMs).toBe(2_700_000);
    expect(runOptionsFor(profiles['capped']!, { ...job }, 'run-4', undefined).timeoutMs).toBe(600_000);
  });
});

describe('connection URLs', () => {
  it('turns a redis:// or rediss:// URL into ioredis options and refuses anything else', () => {
    expect(redisOptions('redis://127.0.0.1:6380/2')).toEqual({ host: '127.0.0.1', port: 6380, db: 2, maxRetriesPerRequest: null, enableReadyCheck: true });
    expect(redisOptions('rediss://u:p%40ss@redis.example')).toMatchObject({ host: 'redis.example', port: 6379, username: 'u', password: 'p@ss', tls: {} });
    expect(redisOptions({ host: 'h', maxRetriesPerRequest: 3 })).toMatchObject({ host: 'h', maxRetriesPerRequest: null });
    expect(() => redisOptions('localhost:6379')).toThrow(TypeError);
    expect(() => redisOptions('http://h')).toThrow(TypeError);
    expect(() => redisOptions('redis://h/x')).toThrow(/database/);
  });
});
