// supervise's command line without a child command: a protocol with a default command (codex, claude-code) runs it, as
// spawnRun does; another protocol's usage error shows how its own child is started.
import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../../src/cli/args.js';

describe('a command line with no child command', () => {
  it.each([
    ['codex', 'codex'],
    ['claude-code', 'claude'],
  ])('--protocol %s runs %s', (protocol, command) => {
    expect(parseCommandLine(['--protocol', protocol, '--task', 'x'])).toMatchObject({ kind: 'run', options: { command, args: [] } });
    // A command given still wins, with its arguments.
    expect(parseCommandLine(['--protocol', protocol, '--task', 'x', '--', '/opt/agent', '--flag'])).toMatchObject({ kind: 'run', options: { command: '/opt/agent', args: ['--flag'] } });
  });

  it.each([
    [undefined, 'fen --presenter rpc'],
    ['hep', 'fa --output events'],
    ['acp', 'gemini --acp'],
  ])('--protocol %s has none: the error shows "%s"', (protocol, example) => {
    const argv = [...(protocol === undefined ? [] : ['--protocol', protocol]), '--task', 'x'];
    expect(() => parseCommandLine(argv)).toThrow(`no child command; give it after '--', as in: supervise --task '...' -- ${example}`);
  });
});

describe('an unknown --protocol', () => {
  it.each([
    ['claude', "claude is driven by protocol 'claude-code'."],
    ['gemini', "gemini is driven by protocol 'acp'."],
    ['codx', "did you mean 'codex'?"],
  ])('%s is refused first, even without a command, saying what was meant', (protocol, hint) => {
    expect(() => parseCommandLine(['--protocol', protocol, '--task', 'x'])).toThrow(`--protocol "${protocol}" is not one of`);
    expect(() => parseCommandLine(['--protocol', protocol, '--task', 'x'])).toThrow(hint);
  });
});
