// connectRun's option checks: where the daemon is, the token and client id rules, defaults; invalid options throw before anything connects.
import { describe, expect, it } from 'vitest';
import { connectRun } from '../../../src/index.js';
import type { ConnectOptions } from '../../../src/index.js';
import { CONNECT_DEFAULTS, resolveConnectOptions } from '../../../src/api/connect-run.js';

/** Options typed loosely: these tests pass wrong values on purpose, and protocols are registered by their drivers. */
const resolve = (options: Record<string, unknown>) => resolveConnectOptions(options as unknown as ConnectOptions);

describe('connectRun options', () => {
  it('applies the defaults and keeps the connection apart; the run "command" is the URL without query or user info', () => {
    const resolved = resolve({ protocol: 'x', url: 'ws://127.0.0.1:9/attach?token=abc', token: 't0k', task: 'hi' });
    expect(resolved.connection).toEqual({
      url: 'ws://127.0.0.1:9/attach?token=abc',
      socketPath: undefined,
      token: 't0k',
      clientId: undefined,
      resume: undefined,
      sessionId: undefined,
      mewTagCase: 'snake_case',
      ...CONNECT_DEFAULTS,
    });
    expect(resolved.command).toBe('ws://127.0.0.1:9/attach');
    expect(resolved.protocol).toBe('x');
    expect(resolved.task).toBe('hi');
    expect(resolved.env).toEqual({});
    expect(resolve({ protocol: 'x', socketPath: '/run/s.sock' }).command).toBe('unix:/run/s.sock');
  });

  it('gives the run the default deadline of spawnRun (2700 s) unless timeoutMs or deadline says otherwise; Infinity: none', () => {
    const deadlineMs = resolve({ protocol: 'x', url: 'ws://h/' }).deadlineMs!;
    expect(Math.abs(deadlineMs - (Date.now() + 2_700_000))).toBeLessThan(5000);
    expect(resolve({ protocol: 'x', url: 'ws://h/', timeoutMs: Infinity }).deadlineMs).toBeUndefined();
  });

  it('needs exactly one of url and socketPath, and a ws:// or wss:// URL without user info', () => {
    expect(() => resolve({ protocol: 'x' })).toThrow(/exactly one of options.url/);
    expect(() => resolve({ protocol: 'x', url: 'ws://h/', socketPath: '/s' })).toThrow(/exactly one/);
    expect(() => resolve({ protocol: 'x', url: 'http://h/' })).toThrow(/ws:\/\/ or wss:\/\/ URL, not http:/);
    expect(() => resolve({ protocol: 'x', url: 'not a url' })).toThrow(/not a valid URL/);
    expect(() => resolve({ protocol: 'x', url: 'ws://me:pw@h/' })).toThrow(/user info/);
    expect(() => resolve({ protocol: 'x', socketPath: '' })).toThrow(/socketPath/);
    expect(() => resolve({ protocol: 'x', socketPath: '/a\0b' })).toThrow(/NUL/);
  });

  it('refuses a token that cannot travel in a header, without repeating it', () => {
    for (const token of ['', 'two words', 'line\nbreak', 'tab\there', 'ünïcode']) {
      let message = '';
      try {
        resolve({ protocol: 'x', url: 'ws://h/', token });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/options.token/);
      if (token !== '') expect(message).not.toContain(token);
    }
  });

  it('refuses unknown keys naming the nearest, task with resume, bad durations', () => {
    expect(() => resolve({ protocol: 'x', url: 'ws://h/', tokn: 'a' })).toThrow(/options.tokn is not an option of connectRun; did you mean token\?/);
    expect(() => resolve({ protocol: 'x', url: 'ws://h/', command: 'fen' })).toThrow(/not an option of connectRun/);
    expect(() => resolve({ protocol: 'x', url: 'ws://h/', task: 'a', resume: 's1' })).toThrow(/either options.task .* or options.resume/);
    expect(() => resolve({ protocol: 'x', url: 'ws://h/', pingIntervalMs: -1 })).toThrow(RangeError);
    expect(() => resolve({ protocol: 'x', url: 'ws://h/', clientId: '' })).toThrow(/clientId/);
    expect(() => resolve({ protocol: 'x', url: 'ws://h/', timeoutMs: 'soon' })).toThrow(RangeError);
  });

  it('connectRun refuses an unknown protocol synchronously', () => {
    expect(() => connectRun({ protocol: 'nope', url: 'ws://127.0.0.1:9/' } as unknown as ConnectOptions)).toThrow(/options.protocol must be one of/);
    expect(() => connectRun(null as unknown as ConnectOptions)).toThrow(/needs an options object/);
  });
});
