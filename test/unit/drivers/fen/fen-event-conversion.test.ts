// Wire events to RunEvents: the builders compiled per key order give exactly the key-by-key copy, whatever order a child sends.
import { afterEach, describe, expect, it } from 'vitest';
import { toRunEvent, useCompiledBuilders } from '../../../../src/drivers/fen/to-run-event.js';
import { decode } from '../../../../src/wire/index.js';
import type { RunEvent } from '../../../../src/api/types.js';

afterEach(() => {
  useCompiledBuilders(true);
});

function convert(line: string): RunEvent {
  const decoded = decode(line, 'event');
  if (!decoded.ok) throw new Error(decoded.rejection.reason);
  return toRunEvent(decoded.message);
}

/** Every order of `entries` (a few keys: 5! = 120 orders). */
function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

const FIELDS: Array<[string, unknown]> = [
  ['v', 1],
  ['type', 'turn-complete'],
  ['stop-reason', 'end_turn'],
  ['usage', { input: 3, output: 4 }],
  ['x-note', 'kept'],
];

describe('event conversion per key order', () => {
  it('gives the same event for every order of the same keys, including more orders than are compiled per type', () => {
    const expected = {
      v: 1,
      seq: 1,
      type: 'turn-complete',
      run: 'r',
      turn: 2,
      stopReason: 'end_turn',
      usage: { inputTokens: 3, outputTokens: 4 },
      extra: { xNote: 'kept' },
    };
    const orders = permutations(FIELDS);
    expect(orders.length).toBeGreaterThan(16);
    let seq = 0;
    for (const order of orders) {
      seq++;
      const line = JSON.stringify(Object.fromEntries([...order, ['seq', seq], ['run', 'r'], ['turn', 2]]));
      expect(convert(line)).toStrictEqual({ ...expected, seq });
    }
  });

  it('alternating key sets of one type never carry a field of one event into the next', () => {
    const withExtra = convert('{"v":1,"seq":1,"type":"assistant-text-delta","run":"r","delta":"a","mono-ns":"5"}');
    const plain = convert('{"v":1,"seq":2,"type":"assistant-text-delta","run":"r","delta":"b"}');
    const again = convert('{"v":1,"seq":3,"type":"assistant-text-delta","run":"r","delta":"c","mono-ns":"6"}');
    expect(withExtra).toStrictEqual({ v: 1, seq: 1, type: 'assistant-text-delta', run: 'r', delta: 'a', extra: { monoNs: '5' } });
    expect(plain).toStrictEqual({ v: 1, seq: 2, type: 'assistant-text-delta', run: 'r', delta: 'b' });
    expect(Object.hasOwn(plain, 'extra')).toBe(false);
    expect(again).toStrictEqual({ v: 1, seq: 3, type: 'assistant-text-delta', run: 'r', delta: 'c', extra: { monoNs: '6' } });
  });

  it('two key orders that read alike once joined never share a builder', () => {
    // Joined with newlines, both orders below would read "v seq type run a delta".
    const first = convert('{"v":1,"seq":1,"type":"assistant-text-delta","run":"r","a":1,"delta":"x"}');
    const second = convert('{"v":1,"seq":2,"type":"assistant-text-delta","run":"r","a\\ndelta":2}');
    expect(first).toStrictEqual({ v: 1, seq: 1, type: 'assistant-text-delta', run: 'r', delta: 'x', extra: { a: 1 } });
    expect(second).toStrictEqual({ v: 1, seq: 2, type: 'assistant-text-delta', run: 'r', extra: { 'a\ndelta': 2 } });
  });

  it('copies key by key where compiling is not allowed, with the same result', () => {
    const lines = [
      '{"v":1,"seq":1,"type":"turn-complete","run":"r","turn":1,"stop-reason":"s","usage":{"input":1},"x-a":1}',
      '{"seq":2,"v":1,"run":"r","type":"tool-result","name":"grep","is-error?":true,"__proto__":{"p":1}}',
      '{"v":1,"seq":3,"type":"assistant-text-delta","run":"r","text":"t"}',
    ];
    const compiled = lines.map(convert);
    useCompiledBuilders(false);
    const copied = lines.map(convert);
    expect(copied).toStrictEqual(compiled);
    expect(Object.hasOwn(copied[1]!.type === 'tool-result' ? copied[1]!.extra! : {}, '__proto__')).toBe(true);
  });

  it('a child key that looks like code is data: it lands under extra and is never compiled', () => {
    const hostile = '"]: 1, polluted: globalThis.process.exit(9), ["';
    const event = convert(JSON.stringify({ v: 1, seq: 1, type: 'info', run: 'r', [hostile]: 'x' }));
    expect(event.type === 'info' && event.extra).toStrictEqual({ [hostile]: 'x' });
  });

  it('camelCases at hyphens between words only: a leading hyphen keeps its spelling', () => {
    const event = convert('{"v":1,"seq":1,"type":"info","run":"r","x-note":1,"-lead":2,"--both-ends--":3,"a--b":4}');
    expect(event.type === 'info' && event.extra).toStrictEqual({ xNote: 1, '-lead': 2, '--bothEnds--': 3, aB: 4 });
  });
});
