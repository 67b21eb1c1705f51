// Unit tests of the shared request desk: one callback at a time, one response each, withdrawal, re-sent keys, blocking, shutdown.
import { describe, expect, it } from 'vitest';
import { RequestDesk } from '../../../../src/drivers/shared/request-desk.js';
import type { DecidedBy, DeskRequest } from '../../../../src/drivers/shared/request-desk.js';

type Log = Array<[string, string | undefined, DecidedBy | 'withdrawn', string?]>;

/** A request whose callback is `ask` (undefined: no callback); every response and withdrawal goes to `log`. */
function request(key: string, log: Log, ask?: DeskRequest<string>['ask']): DeskRequest<string> {
  return {
    key,
    ask,
    accept: (value) => (typeof value === 'string' ? { answer: value } : { answer: undefined, error: new TypeError('not a string') }),
    respond: (answer, decidedBy, error) => void log.push(error === undefined ? [key, answer, decidedBy] : [key, answer, decidedBy, (error as Error).message]),
    withdrawn: () => void log.push([key, undefined, 'withdrawn']),
  };
}

function deferred() {
  let resolve!: (value: unknown) => void;
  const promise = new Promise<unknown>((res) => (resolve = res));
  return { promise, resolve };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('RequestDesk', () => {
  it('answers a value at once, a promise when it settles, one at a time in arrival order', async () => {
    const log: Log = [];
    const desk = new RequestDesk<string>();
    const gate = deferred();
    const asked: string[] = [];
    desk.add(request('a', log, () => (asked.push('a'), gate.promise)));
    desk.add(request('b', log, () => (asked.push('b'), 'yes')));
    expect(asked).toEqual(['a']);
    expect(desk.waiting).toBe(2);
    gate.resolve('first');
    await settle();
    expect(asked).toEqual(['a', 'b']);
    expect(log).toEqual([['a', 'first', 'callback'], ['b', 'yes', 'callback']]);
    expect(desk.waiting).toBe(0);
  });

  it('gives the safe default with the reason: no callback, invalid, a throw, a rejection, a non-answer', async () => {
    const log: Log = [];
    const desk = new RequestDesk<string>();
    desk.add(request('none', log));
    desk.add({ ...request('invalid', log, () => 'never asked'), invalid: true });
    desk.add(request('throws', log, () => { throw new Error('boom'); }));
    desk.add(request('rejects', log, () => Promise.reject(new Error('nope'))));
    desk.add(request('odd', log, () => 42));
    await settle();
    expect(log).toEqual([
      ['none', undefined, 'no-callback'],
      ['invalid', undefined, 'invalid-request'],
      ['throws', undefined, 'callback-error', 'boom'],
      ['rejects', undefined, 'callback-error', 'nope'],
      ['odd', undefined, 'callback-error', 'not a string'],
    ]);
  });

  it('a key seen before is the same request: asked and answered once', () => {
    const log: Log = [];
    const desk = new RequestDesk<string>();
    expect(desk.add(request('k', log, () => 'x'))).toBe(true);
    expect(desk.add(request('k', log, () => 'y'))).toBe(false);
    expect(log).toEqual([['k', 'x', 'callback']]);
  });

  it('a withdrawn request gets no response: queued, dropped unasked; in flight, its late answer ignored and the next one asked', async () => {
    const log: Log = [];
    const desk = new RequestDesk<string>();
    const gate = deferred();
    let stillCurrent: (() => boolean) | undefined;
    desk.add(request('a', log, (current) => ((stillCurrent = current), gate.promise)));
    desk.add(request('b', log, () => 'b-answer'));
    desk.add(request('c', log, () => 'c-answer'));
    expect(desk.has('b')).toBe(true);
    expect(desk.withdraw('b')).toBe(true);
    expect(stillCurrent!()).toBe(true);
    expect(desk.withdraw('a')).toBe(true);
    expect(stillCurrent!()).toBe(false);
    gate.resolve('late');
    await settle();
    expect(log).toEqual([['b', undefined, 'withdrawn'], ['a', undefined, 'withdrawn'], ['c', 'c-answer', 'callback']]);
    expect(desk.withdraw('a')).toBe(false);
    expect(desk.withdraw('unknown')).toBe(false);
  });

  it('on shutdown answers the one in flight and every queued one, later ones at once, and ignores late answers', async () => {
    const log: Log = [];
    const desk = new RequestDesk<string>();
    const gate = deferred();
    desk.add(request('a', log, () => gate.promise));
    desk.add(request('b', log, () => 'b'));
    desk.shutDown();
    desk.add(request('c', log, () => 'c'));
    gate.resolve('late');
    await settle();
    expect(log).toEqual([['a', undefined, 'shutdown'], ['b', undefined, 'shutdown'], ['c', undefined, 'shutdown']]);
  });

  it('reports a request it cannot answer blocked once, and unblocked when settled elsewhere or all at once', () => {
    const told: string[] = [];
    const desk = new RequestDesk<string>({ blocked: (key, what) => void told.push(`blocked ${key}: ${what}`), unblocked: (key) => void told.push(`unblocked ${key}`) });
    desk.block('x', 'a hologram_request');
    desk.block('x', 'again');
    desk.block('y', 'another');
    expect(desk.unblock('x')).toBe(true);
    expect(desk.unblock('x')).toBe(false);
    desk.unblockAll();
    expect(told).toEqual(['blocked x: a hologram_request', 'blocked y: another', 'unblocked x', 'unblocked y']);
  });
});
