// The built package: `subvisor/wire` resolves by package name and exports the whole protocol core.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { decode } from '../../../src/wire/index.js';
import type { Direction } from '../../../src/wire/index.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

describe('subvisor/wire from the built package', () => {
  it('exports the codec, sequence numbers, state machine and constants', async () => {
    // A specifier in a variable keeps typecheck independent of whether dist/ has been built yet.
    const specifier = 'subvisor/wire';
    const wire = (await import(specifier)) as typeof import('../../../src/wire/index.js');
    for (const name of ['decode', 'encode', 'validate', 'createSender', 'createReceiver', 'rejectionAck', 'decide', 'advance', 'isTerminal']) {
      expect(typeof (wire as Record<string, unknown>)[name], name).toBe('function');
    }
    expect(wire.MAX_LINE_BYTES).toBe(65536);
    expect(wire.MAX_SEQ).toBe(2 ** 53 - 1);
    expect(wire.WIRE_EVENT_TYPES).toHaveLength(22);
    expect(wire.WIRE_CONTROL_TYPES).toHaveLength(6);
    const sender = wire.createSender('control', 'r');
    const sent = sender.next('prompt', { text: 'hi' });
    expect(sent.ok && wire.decode(sent.line, 'control').ok).toBe(true);
  });

  it('falls back to interpreted checkers where code generation from strings is disabled, with the same verdicts', () => {
    const cases = readFileSync(new URL('../../../fixtures/wire/invalid.jsonl', import.meta.url), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { direction: Direction; line: unknown })
      .filter((c) => typeof c.line === 'string');
    const script = [
      "import { decode } from 'subvisor/wire';",
      "import { readFileSync } from 'node:fs';",
      "const cases = JSON.parse(readFileSync(0, 'utf8'));",
      "process.stdout.write(JSON.stringify(cases.map((c) => { const r = decode(c.line, c.direction); return r.ok ? null : r.rejection.code; })));",
    ].join('\n');
    const output = execFileSync(
      process.execPath,
      ['--disallow-code-generation-from-strings', '--input-type=module', '-e', script],
      { cwd: root, input: JSON.stringify(cases), encoding: 'utf8', timeout: 30_000 },
    );
    const inProcess = cases.map((c) => {
      const result = decode(c.line as string, c.direction);
      return result.ok ? null : result.rejection.code;
    });
    expect(JSON.parse(output)).toEqual(inProcess);
  });
});
