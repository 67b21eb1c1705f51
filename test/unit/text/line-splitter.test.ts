// Unit tests of the bounded line splitter the stdout drivers read through (its receiver API; cli-args covers the arrays).
import { describe, expect, it } from 'vitest';
import { LineSplitter } from '../../../src/text/line-splitter.js';
import type { LineReceiver } from '../../../src/text/line-splitter.js';

type Seen = { line: string; n: number } | { tooLong: number; limit: number; head: string };

function recorder(): { receiver: LineReceiver; seen: Seen[] } {
  const seen: Seen[] = [];
  return {
    seen,
    receiver: {
      line: (text, n) => seen.push({ line: text, n }),
      tooLong: (n, limit, head) => seen.push({ tooLong: n, limit, head }),
    },
  };
}

describe('LineSplitter', () => {
  it('splits chunks into lines across chunk borders, multi-byte characters included', () => {
    const splitter = new LineSplitter(1024);
    const { receiver, seen } = recorder();
    const bytes = Buffer.from('{"a":"é"}\n{"b":1}\n{"c":"😀"}\nlast');
    // Every cut, inside the two-byte é and the four-byte emoji too.
    for (let cut = 0; cut <= bytes.length; cut++) {
      const local = new LineSplitter(1024);
      const { receiver: each, seen: got } = recorder();
      local.write(bytes.subarray(0, cut), each);
      local.write(bytes.subarray(cut), each);
      const last = local.finish();
      expect([...got.map((entry) => ('line' in entry ? entry.line : '?')), last], `cut at ${cut}`).toEqual(['{"a":"é"}', '{"b":1}', '{"c":"😀"}', 'last']);
    }
    splitter.write(bytes.subarray(0, 7), receiver);
    splitter.write(bytes.subarray(7, 15), receiver);
    splitter.write(bytes.subarray(15), receiver);
    expect(seen).toEqual([
      { line: '{"a":"é"}', n: 1 },
      { line: '{"b":1}', n: 2 },
      { line: '{"c":"😀"}', n: 3 },
    ]);
    expect(splitter.finish()).toBe('last');
    expect(splitter.finish()).toBeUndefined();
  });

  it('hands every line of one chunk over, empty ones and a final newline included', () => {
    const splitter = new LineSplitter(1024);
    const { receiver, seen } = recorder();
    splitter.write(Buffer.from('a\n\nb\n'), receiver);
    splitter.write(Buffer.from('\n'), receiver);
    expect(seen).toEqual([
      { line: 'a', n: 1 },
      { line: '', n: 2 },
      { line: 'b', n: 3 },
      { line: '', n: 4 },
    ]);
    expect(splitter.finish()).toBeUndefined();
  });

  it('reports an overlong line once, with its first bytes, and resumes after its newline', () => {
    const splitter = new LineSplitter(10);
    const { receiver, seen } = recorder();
    splitter.write(Buffer.from('{"type":"approval_request"'), receiver);
    splitter.write(Buffer.from(',"x":"yyyyyyyy"}'), receiver);
    splitter.write(Buffer.from('\nshort\n'), receiver);
    expect(seen).toEqual([
      { tooLong: 1, limit: 10, head: '{"type":"approval_request"' },
      { line: 'short', n: 2 },
    ]);
  });

  it('checks each line of a chunk against the bound when the chunk is larger than it', () => {
    const splitter = new LineSplitter(4);
    const { receiver, seen } = recorder();
    splitter.write(Buffer.from(`abcd\n${'z'.repeat(300)}\nok\nabcde\n`), receiver);
    expect(seen).toEqual([
      { line: 'abcd', n: 1 },
      { tooLong: 2, limit: 4, head: 'z'.repeat(256) },
      { line: 'ok', n: 3 },
      { tooLong: 4, limit: 4, head: 'abcde' },
    ]);
  });

  it('reports a line that passes the bound across chunks once, and drops what is left of it at the end', () => {
    const splitter = new LineSplitter(8);
    const { receiver, seen } = recorder();
    splitter.write(Buffer.from('first\n12345'), receiver);
    splitter.write(Buffer.from('6789'), receiver);
    splitter.write(Buffer.from('0123'), receiver);
    expect(seen).toEqual([
      { line: 'first', n: 1 },
      { tooLong: 2, limit: 8, head: '123456789' },
    ]);
    expect(splitter.finish()).toBeUndefined();
  });

  it('accepts a line of exactly the bound', () => {
    const splitter = new LineSplitter(4);
    expect(splitter.push(Buffer.from('abcd\n\n'))).toEqual([
      { kind: 'line', text: 'abcd', lineNumber: 1 },
      { kind: 'line', text: '', lineNumber: 2 },
    ]);
  });
});
