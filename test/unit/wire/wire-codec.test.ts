// decode / encode / validate unit tests: reasons and error lists, size limits, and hostile inputs that must not throw.
import { describe, expect, it, vi } from 'vitest';
import { decode, encode, MAX_LINE_BYTES, validate } from '../../../src/wire/index.js';
import type { Direction, EncodeResult } from '../../../src/wire/index.js';

const line = (fields: Record<string, unknown>) => JSON.stringify({ v: 1, seq: 1, run: 'r1', ...fields });

const rejectionOf = (result: { ok: boolean; rejection?: unknown }) => {
  if (result.ok) throw new Error('expected a rejection');
  return (result as { rejection: import('../../../src/wire/index.js').Rejection }).rejection;
};

describe('decode', () => {
  it('returns the parsed message, unknown extra fields included', () => {
    const result = decode(line({ type: 'prompt', text: 'hi', 'x-extra': [1] }), 'control');
    expect(result).toEqual({ ok: true, message: { v: 1, seq: 1, run: 'r1', type: 'prompt', text: 'hi', 'x-extra': [1] } });
  });

  it('names the other direction in unknown-type reasons', () => {
    expect(rejectionOf(decode(line({ type: 'ready' }), 'control')).reason).toBe('ready is not a control message');
    expect(rejectionOf(decode(line({ type: 'steer', text: 'x' }), 'event')).reason).toBe('steer is not an event message');
    expect(rejectionOf(decode(line({ type: 'pause' }), 'control')).reason).toBe('unknown control type: pause');
    expect(rejectionOf(decode(line({ type: 'nope' }), 'event')).reason).toBe('unknown event type: nope');
  });

  it('explains a missing v and a version mismatch', () => {
    const missing = rejectionOf(decode('{"seq":1,"type":"ready","run":"r1"}', 'event'));
    expect(missing).toMatchObject({ code: 'invalid', reason: 'v is required', fatal: false, errors: ['v is required'] });
    const mismatch = rejectionOf(decode('{"v":"2","seq":1,"type":"ready","run":"r1"}', 'event'));
    expect(mismatch).toMatchObject({ code: 'version-mismatch', fatal: true, seq: 1 });
    expect(mismatch.reason).toContain('"2"');
    expect(mismatch.errors).toBeUndefined();
  });

  it('lists every envelope error', () => {
    const rejection = rejectionOf(decode('{"v":1,"seq":0,"type":3}', 'event'));
    expect(rejection.code).toBe('invalid');
    expect(rejection.errors).toEqual(['seq must be an integer from 1 to 2^53-1', 'type must be a string', 'run is required']);
  });

  it('lists every payload error, null optionals and the ack ref rule included', () => {
    const rejection = rejectionOf(
      decode(line({ type: 'tool-result', 'is-error?': 'no', id: null, 'duration-seconds': Infinity }), 'event'),
    );
    expect(rejection.code).toBe('invalid-payload');
    expect(rejection.errors).toEqual([
      'name is required',
      'is-error? must be a boolean',
      'id must be omitted rather than null',
      // JSON.stringify wrote Infinity as null
      'duration-seconds must be omitted rather than null',
    ]);
    const ack = rejectionOf(decode(line({ type: 'control-ack', status: 'accepted' }), 'event'));
    expect(ack.errors).toEqual(['ref is required unless status is rejected']);
    expect(ack).toMatchObject({ seq: 1, type: 'control-ack', run: 'r1', fatal: false });
  });

  it('rejects finite-looking numbers that are not: 1e400 durations and content indexes', () => {
    const huge = '{"v":1,"seq":1,"type":"tool-result","run":"r1","name":"x","is-error?":false,"duration-seconds":1e400}';
    expect(rejectionOf(decode(huge, 'event')).errors).toEqual(['duration-seconds must be a number']);
    const index = '{"v":1,"seq":1,"type":"assistant-text-delta","run":"r1","content-index":1e400}';
    expect(rejectionOf(decode(index, 'event')).errors).toEqual(['content-index must be an integer']);
  });

  it('does not parse a line that is too large', () => {
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const result = decode(`{"v":1,"seq":1,"type":"user","run":"r1","text":"${'é'.repeat(40000)}"}`, 'event');
      expect(rejectionOf(result)).toEqual({ code: 'too-large', reason: expect.any(String), fatal: false });
      expect(parse).not.toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });

  it('treats a bad direction as invalid instead of throwing', () => {
    const hostile = { toString: () => { throw new Error('no'); } };
    for (const direction of ['sideways', '__proto__', undefined, 7, hostile, Symbol('d')]) {
      const result = decode(line({ type: 'ready' }), direction as unknown as Direction);
      expect(rejectionOf(result).code).toBe('invalid');
    }
  });

  it('never throws on non-string lines', () => {
    for (const value of [undefined, null, 0, {}, [], Symbol('x'), 10n, () => 'x']) {
      expect(rejectionOf(decode(value as unknown as string, 'event')).code).toBe('malformed');
    }
  });
});

describe('validate', () => {
  it('accepts a parsed message and returns the same object', () => {
    const message = { v: 1, seq: 2, type: 'close', run: 'r1' };
    const result = validate(message, 'control');
    expect(result.ok && result.message).toBe(message);
  });

  it('calls a value that is not an object invalid (as Fen validate does)', () => {
    for (const value of [null, 'x', 3, [], undefined]) {
      expect(rejectionOf(validate(value, 'event')).code).toBe('invalid');
    }
  });

  it('never throws on hostile objects', () => {
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    const hostile = [
      {
        get v(): number {
          throw new Error('boom');
        },
      },
      revocable.proxy,
      new Proxy({}, { get: () => { throw new Error('trap'); } }),
      { v: 1, seq: 1, type: 'close', get run(): string { throw Symbol('odd'); } },
    ];
    for (const value of hostile) {
      expect(rejectionOf(validate(value, 'control')).code).toBe('invalid');
    }
  });
});

describe('encode', () => {
  const ok = (result: EncodeResult) => {
    if (!result.ok) throw new Error(result.rejection.reason);
    return result.line;
  };

  it('writes one line without a newline, keeping key order', () => {
    expect(ok(encode({ v: 1, seq: 3, type: 'steer', run: 'r1', text: 'a\nb' }, 'control'))).toBe(
      '{"v":1,"seq":3,"type":"steer","run":"r1","text":"a\\nb"}',
    );
  });

  it('validates first, with the same codes as decode', () => {
    expect(rejectionOf(encode({ v: 1, seq: 1, type: 'prompt', run: 'r1' }, 'control'))).toMatchObject({
      code: 'invalid-payload',
      seq: 1,
      type: 'prompt',
      run: 'r1',
    });
    expect(rejectionOf(encode({ v: 2, seq: 1, type: 'prompt', run: 'r1' }, 'control')).code).toBe('version-mismatch');
    expect(rejectionOf(encode({ v: 1, seq: 1, type: 'ready', run: 'r1' }, 'control')).code).toBe('unknown-type');
  });

  it('is too-large at 65536 encoded UTF-8 bytes, not UTF-16 units', () => {
    const base = Buffer.byteLength(ok(encode({ v: 1, seq: 1, type: 'prompt', run: 'r1', text: '' }, 'control')));
    const fill = (bytes: number) => '€'.repeat(Math.floor((bytes - base) / 3)) + 'a'.repeat((bytes - base) % 3);
    const atLimit = encode({ v: 1, seq: 1, type: 'prompt', run: 'r1', text: fill(MAX_LINE_BYTES) }, 'control');
    expect(rejectionOf(atLimit)).toMatchObject({ code: 'too-large', seq: 1, type: 'prompt', run: 'r1' });
    const below = ok(encode({ v: 1, seq: 1, type: 'prompt', run: 'r1', text: fill(MAX_LINE_BYTES - 1) }, 'control'));
    expect(Buffer.byteLength(below)).toBe(MAX_LINE_BYTES - 1);
    expect(below.length).toBeLessThan(MAX_LINE_BYTES / 2);
  });

  it('reports a validation failure before the size', () => {
    const result = encode({ v: 1, seq: 1, type: 'prompt', run: 'r1', text: 5, pad: 'x'.repeat(MAX_LINE_BYTES) }, 'control');
    expect(rejectionOf(result).code).toBe('invalid-payload');
  });

  it('omits optional fields set to undefined and writes -0 as 0', () => {
    expect(ok(encode({ v: 1, seq: 1, type: 'finalize', run: 'r1', note: undefined }, 'control'))).toBe(
      '{"v":1,"seq":1,"type":"finalize","run":"r1"}',
    );
    expect(ok(encode({ v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: -0 }, 'event'))).toContain(
      '"arguments":0',
    );
  });

  it('keeps a __proto__ key as plain data and accepts null-prototype objects', () => {
    const message = JSON.parse('{"v":1,"seq":1,"type":"ready","run":"r1","__proto__":{"v":2}}') as object;
    const encoded = ok(encode(message, 'event'));
    expect(encoded).toBe('{"v":1,"seq":1,"type":"ready","run":"r1","__proto__":{"v":2}}');
    const bare = Object.assign(Object.create(null) as object, { v: 1, seq: 1, type: 'close', run: 'r1' });
    expect(ok(encode(bare, 'control'))).toBe('{"v":1,"seq":1,"type":"close","run":"r1"}');
  });

  const hostileCases: [string, () => unknown][] = [
    ['a throwing getter', () => ({ get v(): number { throw new Error('boom'); } })],
    ['a throwing getter deep inside', () => ({ v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: { get a(): number { throw new Error('deep'); } } })],
    ['a getter that throws a non-Error', () => ({ v: 1, seq: 1, type: 'close', get run(): string { throw 42; } })],
    ['a revoked proxy', () => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; }],
    ['a proxy whose traps throw', () => new Proxy({}, { ownKeys: () => { throw new Error('keys'); }, getPrototypeOf: () => { throw new Error('proto'); } })],
    ['a cycle', () => { const m: Record<string, unknown> = { v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x' }; m['arguments'] = { self: m }; return m; }],
    ['a BigInt seq', () => ({ v: 1, seq: 1n, type: 'close', run: 'r1' })],
    ['a BigInt in arguments', () => ({ v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: [1n] })],
    ['a function', () => ({ v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: () => 1 })],
    ['a symbol', () => ({ v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: Symbol('s') })],
    ['NaN', () => ({ v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: NaN })],
    ['Infinity', () => ({ v: 1, seq: 1, type: 'tool-result', run: 'r1', name: 'x', 'is-error?': false, 'duration-seconds': Infinity })],
    ['undefined in an array', () => ({ v: 1, seq: 1, type: 'info', run: 'r1', refs: [1, undefined] })],
    ['a Date', () => ({ v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: new Date(0) })],
    ['a Map', () => ({ v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: new Map([[1, 2]]) })],
    ['a class instance', () => ({ v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: new (class Point { x = 1; })() })],
    ['a String object', () => ({ v: 1, seq: 1, type: 'prompt', run: 'r1', text: new String('hi') })],
    ['nesting deeper than the stack', () => {
      let deep: unknown = [];
      for (let i = 0; i < 200_000; i++) deep = [deep];
      return { v: 1, seq: 1, type: 'tool-call', run: 'r1', name: 'x', arguments: deep };
    }],
    ['a string', () => 'not a message'],
    ['null', () => null],
    ['undefined', () => undefined],
    ['an array', () => [{ v: 1, seq: 1, type: 'close', run: 'r1' }]],
  ];

  for (const [name, make] of hostileCases) {
    it(`never throws on ${name}: the message is invalid`, () => {
      const result = encode(make(), 'event');
      expect(rejectionOf(result).code).toBe('invalid');
      expect(rejectionOf(result).fatal).toBe(false);
    });
  }

  it('encodes a proxy of a plain message, reading each field once', () => {
    let reads = 0;
    const target = { v: 1, seq: 1, type: 'prompt', run: 'r1', text: 'hi' };
    const proxy = new Proxy(target, {
      get(object, key, receiver) {
        if (key === 'text') reads++;
        return Reflect.get(object, key, receiver) as unknown;
      },
    });
    expect(ok(encode(proxy, 'control'))).toBe('{"v":1,"seq":1,"type":"prompt","run":"r1","text":"hi"}');
    expect(reads).toBe(1);
  });

  it('writes exactly what it validated, even when a getter changes its answer', () => {
    let calls = 0;
    const shifty = {
      v: 1,
      seq: 1,
      type: 'prompt',
      run: 'r1',
      get text(): unknown {
        calls++;
        return calls === 1 ? 'first' : 42;
      },
    };
    const encoded = ok(encode(shifty, 'control'));
    expect(encoded).toBe('{"v":1,"seq":1,"type":"prompt","run":"r1","text":"first"}');
    expect(decode(encoded, 'control').ok).toBe(true);
  });

  it('rejects an object with a non-plain prototype rather than silently dropping what it inherits', () => {
    const inherited = Object.create({ text: 'from the prototype' }) as Record<string, unknown>;
    Object.assign(inherited, { v: 1, seq: 1, type: 'prompt', run: 'r1' });
    expect(rejectionOf(encode(inherited, 'control')).code).toBe('invalid');
  });
});
