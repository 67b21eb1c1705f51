// spawnRun's refusal of an unknown protocol says what was meant: an agent's program name, a daemon's protocol, a typo.
import { describe, expect, it } from 'vitest';
import { checkRunOptions } from '../../../src/api/spawn-run.js';

describe('an unknown protocol', () => {
  it.each([
    ['claude', "claude is driven by protocol 'claude-code'"],
    ['gemini', "gemini is driven by protocol 'acp'"],
    ['fa', "fa is driven by protocol 'hep'"],
    ['fuseraft-serve', "'fuseraft-serve' is a daemon's protocol, for connectRun"],
    ['codexx', "did you mean 'codex'?"],
  ])('%s: a TypeError naming the protocols and what was meant', (protocol, hint) => {
    const attempt = () => checkRunOptions({ protocol: protocol as 'fen', command: 'x', task: 'go' });
    expect(attempt).toThrow(TypeError);
    expect(attempt).toThrow("options.protocol must be one of 'fen'");
    expect(attempt).toThrow(hint);
  });

  it('a name far from every protocol gets no guess', () => {
    expect(() => checkRunOptions({ protocol: 'carrier-pigeon' as 'fen', command: 'x' })).toThrow(/acp'$/);
  });
});
