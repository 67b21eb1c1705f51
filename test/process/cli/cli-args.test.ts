// supervise's command line: usage errors (exit 2, a message naming the option, nothing on stdout), --help, --version,
// and the pure parsers behind them (durations, control lines, line splitting).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../../src/cli/args.js';
import { parseControlLine } from '../../../src/cli/control-line.js';
import { parseDuration } from '../../../src/cli/duration.js';
import { sharedRunOptions } from '../../../src/cli/run-options.js';
import { UsageError } from '../../../src/cli/usage-error.js';
import { LineSplitter } from '../../../src/text/line-splitter.js';
import { runMain } from '../../helpers/cli-main.js';
import { CLI, hasScript, ROOT, runCli } from '../../helpers/cli-run.js';
import { PRINT_DEADLINE, secondsLeft } from '../../helpers/spawn-harness.js';

describe('supervise usage errors (main() in process)', () => {
  const cases: Array<[string, string[], RegExp, string?]> = [
    ['unknown option', ['--frobnicate', '--task', 'x', '--', 'node'], /unknown option --frobnicate\. If it belongs to the child command, put it after '--'\./],
    ['misspelt option: the closest one', ['--timout', '5', '--task', 'x', '--', 'node'], /unknown option --timout; did you mean --timeout\? If it belongs/],
    ['misspelt option with =', ['--paralel=2', '--tasks', 'f', '--', 'node'], /unknown option --paralel; did you mean --parallel\?/],
    ['misspelt queue option', ['--redis', 'redis://h', '--queue', 'q', '--profile', 'p', '--atempts', '2'], /unknown option --atempts; did you mean --attempts\?/],
    ['misspelt worker option', ['worker', '--concurency', '2'], /unknown option --concurency; did you mean --concurrency\?/],
    ['no deadline for a queued run', ['--redis', 'redis://h', '--queue', 'q', '--profile', 'p', '--task', 'x', '--timeout', '0'], /--timeout 0 \(no deadline\) is not for a queued run/],
    ['missing value', ['--task'], /option --task needs a value/],
    ['no child command', ['--task', 'x'], /no child command/],
    ['child command without --', ['--task', 'x', 'node'], /before '--'/],
    ['bad duration', ['--timeout', '5 parsecs', '--task', 'x', '--', 'node'], /--timeout: "5 parsecs" is not a duration/],
    ['negative timeout', ['--timeout', '-5', '--task', 'x', '--', 'node'], /--timeout: "-5" is invalid: a duration cannot be negative/],
    ['negative grace with =', ['--grace=-1s', '--task', 'x', '--', 'node'], /--grace: "-1s" is invalid: a duration cannot be negative/],
    ['no arguments at all: the usage', [], /^supervise: run a child agent[^]*Usage:\n {2}supervise \[options\] -- <child command> \[args\.\.\.\][^]*supervise --help/],
    ['bad output mode', ['--output', 'yaml', '--task', 'x', '--', 'node'], /--output "yaml" is not one of text, events, json/],
    ['bad env', ['--env', 'NOEQUALS', '--task', 'x', '--', 'node'], /--env "NOEQUALS" is not KEY=VALUE/],
    ['reserved env', ['--env', 'FEN_WIRE_RUN_ID=x', '--task', 'x', '--', 'node'], /FEN_WIRE_\* variables are set by supervise/],
    ['task twice', ['--task', 'x', '--task-file', 'f', '--', 'node'], /--task and --task-file both given/],
    ['missing task file', ['--task-file', '/nonexistent/task.txt', '--', 'node'], /--task-file \/nonexistent\/task.txt: cannot read it \(ENOENT\)/],
    ['missing controls file', ['--task', 'x', '--controls', '/nonexistent/ctl', '--', 'node'], /--controls \/nonexistent\/ctl: cannot read it \(ENOENT\)/],
    ['controls that are a directory', ['--task', 'x', '--controls', '/tmp', '--', 'node'], /neither a regular file nor a named pipe/],
    ['controls on stdin with the task on stdin', ['--controls', '-', '--', 'node'], /--controls - reads controls from standard input/],
    ['missing cwd', ['--task', 'x', '--cwd', '/nonexistent/dir', '--', 'node'], /--cwd \/nonexistent\/dir: ENOENT/],
    ['state dir that is a file', ['--task', 'x', '--state-dir', `${ROOT}package.json`, '--', 'node'], /--state-dir .* is not a directory/],
    ['empty task on stdin', ['--', 'node'], /the task from stdin is empty/, ''],
    ['whitespace task', ['--task', '  \n', '--', 'node'], /the task from --task is empty/],
    ['a limit that is not a count', ['--max-tool-calls', '2.5', '--task', 'x', '--', 'node'], /--max-tool-calls "2\.5" is not a whole number >= 1/],
    ['a negative cost', ['--max-cost', '-1', '--task', 'x', '--', 'node'], /--max-cost: "-1" is invalid: a limit must be more than 0/],
    ['a zero cost', ['--max-cost', '0', '--task', 'x', '--', 'node'], /--max-cost "0" is not an amount of dollars > 0/],
    ['a total without a batch', ['--max-total-cost', '5', '--task', 'x', '--', 'node'], /--max-total-cost needs --tasks FILE/],
    ['a limit the protocol cannot enforce', ['--protocol', 'fuseraft', '--max-cost', '1', '--task', 'x', '--', 'node'], /cannot start the run: options\.budget\.maxCostUsd cannot be enforced: protocol 'fuseraft' does not report cost/],
    ['a missing schema file', ['--output-schema', '/nonexistent/schema.json', '--task', 'x', '--', 'node'], /--output-schema \/nonexistent\/schema\.json: cannot read it \(ENOENT\)/],
    ['a schema file that is not JSON', ['--output-schema', `${ROOT}README.md`, '--task', 'x', '--', 'node'], /--output-schema .*README\.md is not JSON/],
    ['a schema ajv cannot compile', ['--output-schema', `${ROOT}fixtures/schemas/invalid-schema.json`, '--task', 'x', '--', 'node'], /--output-schema .*invalid-schema\.json cannot be compiled: schema is invalid: data\/type must be equal to one of the allowed values/],
    ['a batch limit the protocol cannot enforce', ['--protocol', 'fuseraft-bridge', '--max-total-cost', '1', '--tasks', '-', '--', 'node'], /cannot start the tasks: options\.budget\.shared\.maxCostUsd cannot be enforced/, '"t"\n'],
  ];
  for (const [name, args, message, input] of cases) {
    it(`${name}: exit 2, the reason on stderr, nothing on stdout`, async () => {
      const result = await runMain(args, input === undefined ? {} : { input });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.startsWith('supervise: ')).toBe(true);
      expect(result.stdout.length).toBe(0);
    });
  }
});

describe('supervise usage errors (built CLI): the bin exits with what main() returns', () => {
  it.each([
    ['unknown option', ['--frobnicate', '--task', 'x', '--', 'node'], /^supervise: unknown option --frobnicate/],
    ['misspelt option', ['--timout', '5', '--task', 'x', '--', 'node'], /^supervise: unknown option --timout; did you mean --timeout\?/],
    ['no arguments at all', [], /^supervise: run a child agent[^]*Usage:/],
  ])('%s: exit 2, the reason on stderr, nothing on stdout', async (_name, args, message) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stdout.length).toBe(0);
  });
});

describe('the deadline of a run', () => {
  const deadlineSeen = async (extra: string[]) => {
    const result = await runMain(['--task', 'x', '--grace', '0', ...extra, '--', PRINT_DEADLINE.command, ...PRINT_DEADLINE.args]);
    return /the child's last output:\n(\S+)/.exec(result.stderr)?.[1];
  };

  it("is spawnRun's default (45 minutes) without --timeout, and none with --timeout 0", async () => {
    expect(secondsLeft((await deadlineSeen([]))!)).toBeGreaterThan(2700 - 60);
    expect(await deadlineSeen(['--timeout', '0'])).toBe('none');
  });
});

describe('no task at all', () => {
  it.runIf(hasScript)('stdin a terminal and no --task: exit 2 naming the three task sources', () => {
    // script(1) gives the CLI a pseudo-terminal, so stdin is a TTY and cannot be the task.
    const result = spawnSync('script', ['-qec', `${process.execPath} ${CLI} -- node`, '/dev/null'], { encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stdout).toContain('supervise: no task: give --task TEXT, --task-file FILE, or pipe the task into standard input.');
  });
});

describe('supervise --help and --version', () => {
  it('--help explains usage, every exit code and examples, on stdout, exit 0', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    const help = result.stdout.toString('utf8');
    expect(help).toContain('supervise [options] -- <child command> [args...]');
    for (const code of ['0', '1', '2', '3', '124', '130']) expect(help).toMatch(new RegExp(`^\\s+${code}  \\w`, 'm'));
    for (const option of ['--task', '--task-file', '--output', '--controls', '--run-id', '--cwd', '--timeout', '--grace', '--ready-timeout', '--keep-alive', '--state-dir', '--keep-files', '--env', '--quiet', '--version']) {
      expect(help).toContain(option);
    }
    expect(help).toContain('Examples:');
    expect(result.stderr).toBe('');
  });

  it('--version prints the package version', async () => {
    const manifest = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string };
    const result = await runMain(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout.toString('utf8')).toBe(`${manifest.version}\n`);
  });
});

describe('parseCommandLine', () => {
  it('maps every run option', () => {
    const parsed = parseCommandLine([
      '--task', 't', '--output', 'events', '--controls', 'ctl', '--run-id', 'r1', '--cwd', '/tmp', '--timeout', '10m',
      '--grace', '1500ms', '--ready-timeout', '5', '--finalize-grace', '0', '--stall-timeout', '2m', '--latency-budget', '30ms', '--keep-alive', '--state-dir', '/tmp',
      '--keep-files', '--env', 'A=1', '--env', 'B=x=y', '--env', 'EMPTY=', '-q', '--protocol', 'fuseraft', '--approve', 'always-known',
      '--', 'fen', '--presenter', 'rpc',
    ]);
    expect(parsed).toEqual({
      kind: 'run',
      options: {
        command: 'fen', args: ['--presenter', 'rpc'], task: 't', output: 'events', controls: 'ctl', runId: 'r1',
        cwd: '/tmp', timeoutMs: 600_000, killGraceMs: 1500, readyTimeoutMs: 5000, finalizeGraceMs: 0, stallTimeoutMs: 120_000, latencyBudgetMs: 30, keepAlive: true,
        stateDir: '/tmp', keepFiles: true, env: { A: '1', B: 'x=y', EMPTY: '' }, quiet: true,
        protocol: 'fuseraft', approve: 'always-known', connect: false,
      },
    });
  });

  it('--timeout 0 is no deadline (timeoutMs: Infinity), as with timeout(1); without --timeout spawnRun\'s default applies', () => {
    const none = parseCommandLine(['--task', 't', '--timeout', '0', '--', 'x']);
    expect(none.kind === 'run' && none.options.timeoutMs).toBe(Infinity);
    const unset = parseCommandLine(['--task', 't', '--', 'x']);
    expect(unset.kind === 'run' && unset.options.timeoutMs).toBeUndefined();
  });

  it('--stall-timeout must be a positive duration; --approve ask cannot serve a batch', () => {
    for (const argv of [
      ['--task', 't', '--stall-timeout', '0', '--', 'x'],
      ['--task', 't', '--stall-timeout', '-5', '--', 'x'],
      ['--task', 't', '--stall-timeout', 'soon', '--', 'x'],
      ['--task', 't', '--latency-budget', '2s', '--', 'x'],
      ['--task', 't', '--latency-budget', '-1', '--', 'x'],
      ['--tasks', 'f', '--protocol', 'fuseraft', '--approve', 'ask', '--', 'x'],
    ]) {
      expect(() => parseCommandLine(argv), argv.join(' ')).toThrow(UsageError);
    }
  });

  it('maps the budget flags to limits (--max-cost in dollars), and --output-schema to its file', () => {
    const parsed = parseCommandLine([
      '--tasks', 'f', '--max-turns', '3', '--max-tool-calls', '40', '--max-tokens', '100000', '--max-cost', '$0.50',
      '--max-total-tokens', '1000000', '--max-total-cost', '12', '--output-schema', 's.json', '--', 'fen',
    ]);
    if (parsed.kind !== 'run') throw new Error('not a run');
    expect(parsed.options).toMatchObject({
      budget: { maxTurns: 3, maxToolCalls: 40, maxTokens: 100_000, maxCostUsd: 0.5 },
      totalBudget: { maxTokens: 1_000_000, maxCostUsd: 12 },
      outputSchema: 's.json',
    });
    expect(sharedRunOptions(parsed.options, { type: 'object' })).toMatchObject({ budget: parsed.options.budget, outputSchema: { type: 'object' } });
  });

  it('sharedRunOptions: the options every run of the command gets, the protocol and timers included', () => {
    const parsed = parseCommandLine(['--tasks', 'f', '--protocol', 'hep', '--cwd', '/tmp', '--stall-timeout', '3s', '--grace', '1s', '--', 'fa', '-x']);
    if (parsed.kind !== 'run') throw new Error('not a run');
    expect(sharedRunOptions(parsed.options, undefined)).toEqual({
      protocol: 'hep', command: 'fa', args: ['-x'], env: {}, keepFiles: false, cwd: '/tmp', stallTimeoutMs: 3000, killGraceMs: 1000,
    });
  });

  it('the limits on the tree and the sandbox: parsed, given to every run, refused when attaching to a daemon', async () => {
    const parsed = parseCommandLine([
      '--max-memory', '1.5G', '--max-cpu-time', '90.5s', '--max-processes', '64', '--max-open-files', '4096',
      '--sandbox-write', '/data', '--sandbox-write', '/cache', '--sandbox-network', '--task', 't', '--', 'fen',
    ]);
    if (parsed.kind !== 'run') throw new Error('not a run');
    const limits = { memoryBytes: 1.5 * 1024 ** 3, cpuSeconds: 91, processes: 64, openFiles: 4096 };
    const sandbox = { writable: ['/data', '/cache'], network: true };
    expect(parsed.options).toMatchObject({ limits, sandbox });
    expect(sharedRunOptions(parsed.options, undefined)).toMatchObject({ limits, sandbox });
    const plain = parseCommandLine(['--sandbox', '--max-memory', '512M', '--task', 't', '--', 'fen']);
    expect(plain.kind === 'run' && plain.options).toMatchObject({ sandbox: { writable: [], network: false }, limits: { memoryBytes: 512 * 1024 ** 2 } });
    const none = parseCommandLine(['--task', 't', '--', 'fen']);
    expect(none.kind === 'run' && [none.options.limits, none.options.sandbox]).toEqual([undefined, undefined]);
    for (const [args, message] of [
      [['--max-memory', 'lots'], /--max-memory "lots" is not a size; write it like 512M/],
      [['--max-memory', '-1'], /--max-memory: "-1" is invalid: a limit must be more than 0/],
      [['--max-processes', '0'], /--max-processes "0" is not a whole number >= 1/],
      [['--max-cpu-time', 'soon'], /--max-cpu-time: "soon" is not a duration/],
    ] as const) {
      expect(() => parseCommandLine([...args, '--task', 't', '--', 'fen']), args.join(' ')).toThrow(message);
    }
    expect(() => parseCommandLine(['--protocol', 'mew', '--url', 'ws://127.0.0.1:9', '--sandbox', '--task', 't'])).toThrow(/--sandbox does not apply when attaching to a daemon/);
    const result = await runMain(['--sandbox', '--durable', '30s', '--run-id', 'r1', '--task', 't', '--', 'fen']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/sandbox does not apply to a durable run/);
  });

  it('leaves the child command and its own options alone after --', () => {
    const parsed = parseCommandLine(['--task', 't', '--', 'node', '--task', '--quiet', '--']);
    expect(parsed.kind === 'run' && parsed.options.args).toEqual(['--task', '--quiet', '--']);
  });
});

describe('parseDuration', () => {
  it('reads ms, s, m, h and plain seconds', () => {
    expect(parseDuration('1500ms', false)).toEqual({ ok: true, ms: 1500 });
    expect(parseDuration('90s', false)).toEqual({ ok: true, ms: 90_000 });
    expect(parseDuration('10m', false)).toEqual({ ok: true, ms: 600_000 });
    expect(parseDuration('1h', false)).toEqual({ ok: true, ms: 3_600_000 });
    expect(parseDuration('2.5', false)).toEqual({ ok: true, ms: 2500 });
    expect(parseDuration('0', true)).toEqual({ ok: true, ms: 0 });
  });

  it('refuses junk, negatives, zero where not allowed and timers Node cannot hold', () => {
    for (const text of ['', 'abc', '-5s', '5 s', '1d', '0x10', '1e3']) expect(parseDuration(text, true).ok).toBe(false);
    expect(parseDuration('-5', false)).toMatchObject({ ok: false, reason: expect.stringContaining('cannot be negative') });
    expect(parseDuration('0ms', false).ok).toBe(false);
    expect(parseDuration('1000h', false).ok).toBe(false);
  });
});

describe('parseControlLine', () => {
  it('reads the short forms', () => {
    expect(parseControlLine('steer look at docs/')).toEqual({ kind: 'control', control: { type: 'steer', text: 'look at docs/' } });
    expect(parseControlLine('follow-up summarise\r')).toEqual({ kind: 'control', control: { type: 'follow-up', text: 'summarise' } });
    expect(parseControlLine('prompt next')).toEqual({ kind: 'control', control: { type: 'prompt', text: 'next' } });
    expect(parseControlLine('finalize')).toEqual({ kind: 'control', control: { type: 'finalize' } });
    expect(parseControlLine('finalize wrap it up')).toEqual({ kind: 'control', control: { type: 'finalize', note: 'wrap it up' } });
    expect(parseControlLine('  cancel ')).toEqual({ kind: 'control', control: { type: 'cancel' } });
    expect(parseControlLine('close')).toEqual({ kind: 'control', control: { type: 'close' } });
  });

  it('reads wire-style JSON without the envelope', () => {
    expect(parseControlLine('{"type":"steer","text":"x y"}')).toEqual({ kind: 'control', control: { type: 'steer', text: 'x y' } });
    expect(parseControlLine('{"type":"finalize","note":"n"}')).toEqual({ kind: 'control', control: { type: 'finalize', note: 'n' } });
    expect(parseControlLine('{"type":"cancel"}')).toEqual({ kind: 'control', control: { type: 'cancel' } });
  });

  it('skips blank lines and comments', () => {
    for (const line of ['', '   ', '# a comment', '\r']) expect(parseControlLine(line)).toEqual({ kind: 'skip' });
  });

  it('says why a line is invalid', () => {
    const reasons: Array<[string, RegExp]> = [
      ['steer', /steer needs a non-empty text/],
      ['stear left', /unknown control "stear"/],
      ['cancel now', /cancel takes no text/],
      ['{"type":"steer"', /not valid JSON/],
      ['{"type":"steer","text":""}', /needs a non-empty text/],
      ['{"type":"steer","text":5}', /"text" must be a string/],
      ['{"type":"reboot"}', /unknown control type "reboot"/],
      ['{"text":"x"}', /needs a string "type"/],
      ['{"v":1,"seq":3,"run":"r","type":"cancel"}', /leave out v, seq, run/],
      ['{"type":"cancel","text":"x"}', /cancel takes only type; unexpected text/],
    ];
    for (const [line, reason] of reasons) {
      const parsed = parseControlLine(line);
      expect(parsed.kind, line).toBe('invalid');
      if (parsed.kind === 'invalid') expect(parsed.reason, line).toMatch(reason);
    }
  });
});

describe('LineSplitter', () => {
  it('joins lines across chunks, keeps multi-byte characters whole, and numbers lines', () => {
    const splitter = new LineSplitter(100);
    const bytes = Buffer.from('steer é€😀\nclose\npartial', 'utf8');
    const lines = [...splitter.push(bytes.subarray(0, 8)), ...splitter.push(bytes.subarray(8)), ...splitter.end()];
    expect(lines).toEqual([
      { kind: 'line', text: 'steer é€😀', lineNumber: 1 },
      { kind: 'line', text: 'close', lineNumber: 2 },
      { kind: 'line', text: 'partial', lineNumber: 3 },
    ]);
  });

  it('reports an overlong line once and skips to its newline', () => {
    const splitter = new LineSplitter(10);
    const lines = [...splitter.push(Buffer.from('x'.repeat(8))), ...splitter.push(Buffer.from(`${'y'.repeat(50)}\ncancel\n`))];
    expect(lines).toEqual([
      { kind: 'too-long', lineNumber: 1, limit: 10 },
      { kind: 'line', text: 'cancel', lineNumber: 2 },
    ]);
  });
});
