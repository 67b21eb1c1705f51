// Unit tests of the bounded stdout line splitter of the fuseraft driver.
import { describe, expect, it } from 'vitest';
import { StdoutLines } from '../src/drivers/fuseraft/stdout-lines.js';

describe('StdoutLines', () => {
  it('splits chunks into lines across chunk borders, multi-byte characters included', () => {
    const lines = new StdoutLines(1024);
    const bytes = Buffer.from('{"a":"é"}\n{"b":1}\nlast');
    const out = [...lines.push(bytes.subarray(0, 7)), ...lines.push(bytes.subarray(7, 15)), ...lines.push(bytes.subarray(15)), ...lines.end()];
    expect(out).toEqual([
      { kind: 'line', text: '{"a":"é"}' },
      { kind: 'line', text: '{"b":1}' },
      { kind: 'line', text: 'last' },
    ]);
  });

  it('reports an overlong line once, with its first bytes, and resumes after its newline', () => {
    const lines = new StdoutLines(10);
    const out = [
      ...lines.push(Buffer.from('{"type":"approval_request"')),
      ...lines.push(Buffer.from(',"x":"yyyyyyyy"}')),
      ...lines.push(Buffer.from('\nshort\n')),
    ];
    expect(out).toEqual([
      { kind: 'overlong', prefix: '{"type":"approval_request"', limit: 10 },
      { kind: 'line', text: 'short' },
    ]);
  });

  it('accepts a line of exactly the bound and keeps empty lines', () => {
    const lines = new StdoutLines(4);
    expect(lines.push(Buffer.from('abcd\n\n'))).toEqual([
      { kind: 'line', text: 'abcd' },
      { kind: 'line', text: '' },
    ]);
  });
});
