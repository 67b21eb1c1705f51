// The fake fa against seed 001 (HEP v1): frame shapes and order, bounds, exit codes, signals, transcripts, lifelines.
import { execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { FA_BUILTIN_SCENARIO_NAMES, FA_BUILTIN_SCENARIOS, fakeFa, isAlive, waitUntilGone } from '../../../src/testing/index.js';
import type { FakeFa, FaScenario } from '../../../src/testing/index.js';
import { PipedProcess, reapPiped, staysAlive } from '../../helpers/piped-fake.js';
import { procInfo } from '../../helpers/spawn-procs.js';

const run = promisify(execFile);
const script = resolve(import.meta.dirname, '../../..', 'dist', 'testing', 'fake-fa.js');

const fakes: FakeFa[] = [];
afterEach(async () => {
  await reapPiped();
  for (const fake of fakes.splice(0)) {
    expect(fake.livePids()).toEqual([]);
    fake.cleanup();
  }
});

function start(scenario: FaScenario | (typeof FA_BUILTIN_SCENARIO_NAMES)[number], task = 'run the tests', options: Parameters<typeof fakeFa>[1] = {}) {
  const fake = fakeFa(scenario, options);
  fakes.push(fake);
  const piped = new PipedProcess(fake, ['-p', task]);
  return { fake, piped };
}

/** Seed 001's frame catalog: the exact fields of each frame type (tool_liveness's output_bytes/detail are optional). */
const FIELDS: Record<string, { required: string[]; optional?: string[] }> = {
  hep_header: { required: ['type', 'hep', 'fah', 'session'] },
  agent_start: { required: ['type', 'turn_id'] },
  message_start: { required: ['type', 'turn_id', 'role'] },
  message_delta: { required: ['type', 'turn_id', 'delta'] },
  tool_start: { required: ['type', 'turn_id', 'id', 'name', 'args_summary'] },
  tool_delta: { required: ['type', 'turn_id', 'id', 'update'] },
  tool_liveness: { required: ['type', 'turn_id', 'id', 'name', 'action', 'elapsed_ms'], optional: ['output_bytes', 'detail'] },
  turn_done: { required: ['type', 'turn_id', 'message', 'tool_results', 'usage', 'stop_reason'] },
  turn_error: { required: ['type', 'turn_id', 'error', 'fatal'] },
  cancelled: { required: ['type', 'turn_id'] },
  compaction_start: { required: ['type', 'turn_id'] },
  compaction_end: { required: ['type', 'turn_id', 'tokens_freed'] },
};
const TERMINAL = new Set(['turn_done', 'turn_error', 'cancelled']);

/**
 * Every way `lines` (a whole events-mode stdout) breaks HEP v1: the header first, one JSON object per line,
 * exact fields, agent_start once, one terminal per round (the last frame), turn_done.message = the round's
 * deltas, tool_results shaped {id, name, ok, text} and naming the round's tool calls, and the exit code.
 */
function hepProblems(lines: string[], code: number | null): string[] {
  const problems: string[] = [];
  const frames = lines.map((line, index) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      problems.push(`line ${index} is not JSON: ${line.slice(0, 80)}`);
      return {};
    }
  });
  if (frames[0]?.['type'] !== 'hep_header') problems.push('the first line is not hep_header');
  let agentStarts = 0;
  let openTurn: number | undefined;
  let lastTurn = 0;
  let deltas = '';
  const toolIds = new Set<string>();
  frames.forEach((frame, index) => {
    const type = String(frame['type']);
    const spec = FIELDS[type];
    if (spec === undefined) return problems.push(`line ${index}: unknown type ${type}`);
    const keys = Object.keys(frame);
    const allowed = [...spec.required, ...(spec.optional ?? [])];
    if (spec.required.some((key) => !keys.includes(key)) || keys.some((key) => !allowed.includes(key))) {
      problems.push(`line ${index}: ${type} has fields ${keys.join(',')}`);
    }
    if (type === 'hep_header') return;
    const turn = frame['turn_id'];
    if (typeof turn !== 'number' || !Number.isInteger(turn) || turn < 1) return problems.push(`line ${index}: bad turn_id`);
    if (type === 'agent_start') {
      agentStarts += 1;
      if (turn !== 1) problems.push('agent_start is not turn 1');
      return;
    }
    if (agentStarts === 0) problems.push(`line ${index}: ${type} before agent_start`);
    if (openTurn === undefined) {
      if (turn !== lastTurn + 1) problems.push(`line ${index}: round ${turn} after round ${lastTurn}`);
      openTurn = turn;
      deltas = '';
      toolIds.clear();
    } else if (turn !== openTurn) problems.push(`line ${index}: turn_id ${turn} inside round ${openTurn}`);
    if (type === 'message_start' && frame['role'] !== 'assistant') problems.push('message_start role is not assistant');
    if (type === 'message_delta') deltas += String(frame['delta']);
    if (type === 'tool_start') toolIds.add(String(frame['id']));
    if (type === 'turn_done') {
      if (frame['message'] !== deltas) problems.push(`round ${turn}: message is not the round's deltas`);
      const results = frame['tool_results'] as Array<Record<string, unknown>>;
      for (const result of results) {
        if (Object.keys(result).join(',') !== 'id,name,ok,text') problems.push(`round ${turn}: tool result fields ${Object.keys(result).join(',')}`);
        if (!toolIds.has(String(result['id']))) problems.push(`round ${turn}: result for unknown tool call ${String(result['id'])}`);
        if (typeof result['ok'] !== 'boolean' || typeof result['text'] !== 'string') problems.push(`round ${turn}: tool result types`);
      }
      const usage = frame['usage'] as Record<string, unknown>;
      if (Object.keys(usage).join(',') !== 'input,output,cost' || Object.values(usage).some((value) => typeof value !== 'number')) {
        problems.push(`round ${turn}: usage ${JSON.stringify(usage)}`);
      }
      if (typeof frame['stop_reason'] !== 'string') problems.push(`round ${turn}: stop_reason`);
    }
    if (type === 'turn_error' && frame['fatal'] !== true) problems.push('turn_error is not fatal');
    if (TERMINAL.has(type)) {
      lastTurn = turn;
      openTurn = undefined;
    }
  });
  if (agentStarts !== 1) problems.push(`agent_start ${agentStarts} times`);
  const last = String(frames.at(-1)?.['type']);
  if (!TERMINAL.has(last)) problems.push(`the last frame is ${last}, not a terminal frame`);
  const expectedCode = { turn_done: 0, turn_error: 1, cancelled: 130 }[last];
  if (expectedCode !== code) problems.push(`exit code ${code} after ${last}`);
  return problems;
}

describe('fakeFa()', () => {
  it('describes a spawnable fa: node, the built script, the scenario, --output events; the task is the driver\'s', () => {
    const fake = fakeFa('tools');
    fakes.push(fake);
    expect(fake.command).toBe(process.execPath);
    expect(fake.args).toEqual([script, 'tools', '--output', 'events']);
    expect(fake.env['SUBVISOR_FAKE_TOKEN']).toBe(fake.token);
    const full = fakeFa('echo', { output: 'events=full', transcript: false });
    const prose = fakeFa({ name: 'inline' }, { output: 'prose', transcript: false });
    fakes.push(full, prose);
    expect(full.args.slice(1)).toEqual(['echo', '--output', 'events=full']);
    expect(prose.args.slice(1)).toEqual(['env']);
    expect(() => fakeFa('nope' as 'echo')).toThrow(/unknown built-in scenario/);
    expect(() => prose.transcript()).toThrow(/transcript: false/);
  });

  it('every built-in name has a scenario', () => {
    expect(Object.keys(FA_BUILTIN_SCENARIOS).sort()).toEqual([...FA_BUILTIN_SCENARIO_NAMES].sort());
  });
});

describe('HEP v1 frames', () => {
  it('tools: three rounds with tools, each ending in one turn_done; the answer is the last one', async () => {
    const { fake, piped } = start('tools', 'run the tests');
    const { code } = await piped.exit();
    expect(hepProblems(piped.lines(), code)).toEqual([]);
    const frames = piped.objects();
    expect(frames[0]).toMatchObject({ type: 'hep_header', hep: 'v1', fah: expect.any(String), session: expect.any(String) });
    const dones = frames.filter((frame) => frame['type'] === 'turn_done');
    expect(dones.map((frame) => [frame['turn_id'], frame['stop_reason']])).toEqual([[1, 'toolUse'], [2, 'toolUse'], [3, 'stop']]);
    expect(dones[1]?.['message']).toBe('');
    expect(dones[2]?.['message']).toBe('The tests pass. About "run the tests": done, see the README.');
    const results = dones.flatMap((frame) => frame['tool_results'] as Array<{ name: string; ok: boolean; text: string }>);
    expect(results.map((result) => [result.name, result.ok])).toEqual([['read_file', true], ['grep', true], ['bash', true], ['read_file', false]]);
    expect(frames.filter((frame) => frame['type'] === 'tool_delta')).toHaveLength(2);
    expect(frames.find((frame) => frame['type'] === 'tool_liveness')).toMatchObject({ action: 'heartbeat', name: 'bash' });
    expect(piped.stderr).toContain('→ bash command="npm test"');
    expect(fake.transcript().lines).toEqual(piped.lines());
  });

  it('bounds tool_results[].text at 2000 chars with …(+N chars), N the chars cut', async () => {
    const long = 'x'.repeat(2500);
    const { piped } = start({ rounds: [{ steps: [{ tool: 'cat', result: long }, { tool: 'cat', result: 'y'.repeat(2000) }] }] });
    const { code } = await piped.exit();
    expect(hepProblems(piped.lines(), code)).toEqual([]);
    const [cut, exact] = piped.objects().find((frame) => frame['type'] === 'turn_done')?.['tool_results'] as Array<{ text: string }>;
    expect(cut?.text).toBe(`${'x'.repeat(2000)}…(+500 chars)`);
    expect(exact?.text).toBe('y'.repeat(2000));
  });

  it('args_summary is fa\'s key=value line; with events=full the raw JSON, cut at 4000 chars', async () => {
    const args = { path: 'a.txt', lines: [1, 2], body: 'z'.repeat(5000) };
    const scenario: FaScenario = { rounds: [{ steps: [{ tool: 'write', args }] }] };
    const summary = start(scenario).piped;
    const full = start(scenario, 'go', { output: 'events=full' }).piped;
    await Promise.all([summary.exit(), full.exit()]);
    const argsOf = (piped: PipedProcess) => piped.objects().find((frame) => frame['type'] === 'tool_start')?.['args_summary'] as string;
    expect(argsOf(summary)).toBe(`${`path="a.txt", lines=[1,2], body="${'z'.repeat(5000)}"`.slice(0, 100)}...`);
    const json = JSON.stringify(args);
    expect(argsOf(full)).toBe(`${json.slice(0, 4000)}…(+${json.length - 4000} chars)`);
  });

  it('long-answer: the answer is one turn_done line of hundreds of KB', async () => {
    const { piped } = start('long-answer');
    const { code } = await piped.exit();
    expect(hepProblems(piped.lines(), code)).toEqual([]);
    const line = piped.lines().find((candidate) => candidate.includes('"turn_done"')) as string;
    expect(Buffer.byteLength(line)).toBeGreaterThan(400_000);
    expect(String(JSON.parse(line).message)).toMatch(/^(aé€😀 )+/u);
  });

  it('compaction: a compaction_start / compaction_end bracket inside the round', async () => {
    const { piped } = start('compaction', 'go');
    const { code } = await piped.exit();
    expect(hepProblems(piped.lines(), code)).toEqual([]);
    expect(piped.objects().map((frame) => frame['type'])).toEqual(
      ['hep_header', 'agent_start', 'message_start', 'compaction_start', 'compaction_end', 'message_delta', 'turn_done'],
    );
  });
});

describe('endings and exit codes', () => {
  it('provider-error: turn_error {fatal: true} ends the run, exit 1', async () => {
    const { piped } = start('provider-error');
    const { code } = await piped.exit();
    expect(code).toBe(1);
    expect(hepProblems(piped.lines(), code)).toEqual([]);
    expect(piped.objects().at(-1)).toEqual({ type: 'turn_error', turn_id: 2, error: expect.stringContaining('529'), fatal: true });
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`slow: ${signal} ends the round with one cancelled frame, exit 130`, async () => {
      const { fake, piped } = start('slow');
      await piped.waitForType('message_delta');
      piped.child.kill(signal);
      const { code } = await piped.exit();
      expect(code).toBe(130);
      expect(hepProblems(piped.lines(), code)).toEqual([]);
      expect(piped.objects().at(-1)).toEqual({ type: 'cancelled', turn_id: 1 });
      expect(fake.transcript().signals).toMatchObject([{ signal, action: 'cancel' }]);
    });
  }

  it('usage errors exit 64 with nothing on stdout: the scenario, and fa\'s own argv rules', async () => {
    const { piped } = start('usage-error');
    expect((await piped.exit()).code).toBe(64);
    expect(piped.stdout).toBe('');
    expect(piped.stderr).toContain('unknown argument: --frobnicate');
    const fake = fakeFa('echo', { transcript: false });
    fakes.push(fake);
    for (const argv of [['--bogus', '-p', 'x'], ['-p'], ['-p', 'x', 'positional'], [], ['--output', 'yaml', '-p', 'x'], ['--output=events', '-p', 'x']]) {
      const failure = await run(fake.command, [script, 'echo', ...argv], { env: { ...process.env, ...fake.env } }).catch((error: unknown) => error);
      expect(failure, argv.join(' ')).toMatchObject({ code: 64, stdout: '' });
    }
  });

  it('crash: exit 3 in the middle of a round, no terminal frame', async () => {
    const { piped } = start('crash');
    const { code } = await piped.exit();
    expect(code).toBe(3);
    expect(piped.objects().map((frame) => frame['type'])).toEqual(['hep_header', 'agent_start', 'message_start', 'message_delta']);
  });

  it('killed-mid-frame: a partial turn_done line with no newline, then death by SIGKILL', async () => {
    const { fake, piped } = start('killed-mid-frame');
    const { signal } = await piped.exit();
    expect(signal).toBe('SIGKILL');
    const tail = piped.stdout.slice(piped.stdout.lastIndexOf('\n') + 1);
    expect(tail).toMatch(/^\{"type":"turn_done","turn_id":1,/);
    expect(() => JSON.parse(tail)).toThrow();
    expect(fake.transcript()).toMatchObject({ partial: tail, complete: false });
  });
});

describe('misbehaviours', () => {
  it('garbage: non-JSON, an unknown frame type, unknown fields and a non-object between good frames', async () => {
    const { piped } = start('garbage', 'go');
    const { code } = await piped.exit();
    expect(code).toBe(0);
    const lines = piped.lines();
    expect(lines).toContain('this is not json {');
    expect(lines).toContain('[1,2,3]');
    const frames = piped.objects();
    expect(frames.find((frame) => frame['type'] === 'mystery_frame')).toMatchObject({ turn_id: 1 });
    expect(frames.find((frame) => 'x_future_field' in frame)).toMatchObject({ type: 'message_delta', delta: 'With extra fields. ' });
    const known = lines.filter((line) => line.startsWith('{') && !line.includes('mystery_frame') && !line.includes('x_future_field'));
    expect(hepProblems(known, code).filter((problem) => !problem.includes('deltas'))).toEqual([]);
    expect(frames.at(-1)).toMatchObject({ type: 'turn_done', message: 'Before the garbage. With extra fields. Answered despite garbage: go' });
  });

  it('wrong-version: the header says hep v2, the rest is a normal run', async () => {
    const { piped } = start('wrong-version', 'hello');
    const { code } = await piped.exit();
    expect(code).toBe(0);
    expect(piped.objects()[0]).toMatchObject({ type: 'hep_header', hep: 'v2' });
    expect(piped.objects().at(-1)).toMatchObject({ type: 'turn_done', message: 'hello' });
  });

  it('no-header: prose on stdout even with --output events; without --output, any fake prints prose', async () => {
    const { fake, piped } = start('no-header', 'hi');
    expect((await piped.exit()).code).toBe(0);
    expect(piped.stdout).toBe('I will read the README first, then look for the test command.\nThe tests pass. About "hi": done, see the README.\n');
    expect(piped.stderr).toContain('→ read_file');
    expect(fake.transcript().mode).toBe('prose');
    const prose = start('echo', 'just this', { output: 'prose' }).piped;
    expect((await prose.exit()).code).toBe(0);
    expect(prose.stdout).toBe('just this\n');
  });

  it('stubborn: ignores SIGINT and SIGTERM; its grandchildren sit in its group and in their own session', async () => {
    const { fake, piped } = start('stubborn');
    await piped.waitForType('message_delta');
    const until = Date.now() + 30_000;
    while (fake.transcript().grandchildren.length < 2 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    const [inGroup, ownSession] = fake.transcript().grandchildren as [number, number];
    expect(procInfo(inGroup)?.pgid).toBe(piped.pid);
    expect(procInfo(ownSession)?.sid).toBe(ownSession);
    piped.child.kill('SIGINT');
    piped.child.kill('SIGTERM');
    process.kill(-piped.pid, 'SIGINT');
    expect(await staysAlive(piped, 300)).toBe(true);
    expect(isAlive(inGroup) && isAlive(ownSession)).toBe(true);
    // Two SIGINTs sent back to back may arrive as one (standard signals do not queue).
    const until2 = Date.now() + 10_000;
    while (fake.transcript().signals.length < 2 && Date.now() < until2) await new Promise((wait) => setTimeout(wait, 20));
    const signals = fake.transcript().signals;
    expect(new Set(signals.map((entry) => entry.signal))).toEqual(new Set(['SIGINT', 'SIGTERM']));
    expect(signals.every((entry) => entry.action === 'ignored')).toBe(true);
    process.kill(-piped.pid, 'SIGKILL');
    expect((await piped.exit()).signal).toBe('SIGKILL');
    expect(await waitUntilGone([inGroup], 10_000)).toEqual([]);
    expect(isAlive(ownSession)).toBe(true);
    expect(fake.livePids()).toEqual([ownSession]);
    process.kill(ownSession, 'SIGKILL');
    expect(await waitUntilGone([ownSession], 10_000)).toEqual([]);
  });
});

describe('the program', () => {
  it('keeps one transcript per process with its argv, mode and task', async () => {
    const fake = fakeFa('echo');
    fakes.push(fake);
    for (const task of ['first', 'second']) await new PipedProcess(fake, ['-p', task]).exit();
    expect(fake.transcripts().map((transcript) => [transcript.task, transcript.mode, transcript.exitCode])).toEqual([
      ['first', 'events', 0],
      ['second', 'events', 0],
    ]);
    expect(fake.transcript().argv).toEqual(['echo', '--output', 'events', '-p', 'second']);
  });

  it('--version (plain and --output json) and --help', async () => {
    expect((await run(process.execPath, [script, '--version', '--output', 'json'])).stdout).toBe('{"version":"0.0.0-fake","hep":"v1"}\n');
    expect((await run(process.execPath, [script, '--version'])).stdout).toMatch(/^fa 0\.0\.0-fake/);
    expect((await run(process.execPath, [script, '--help'])).stdout).toContain('usage: subvisor-fake-fa');
  });

  it('refuses a malformed scenario with exit code 2 (not one of fa\'s codes)', async () => {
    const fake = fakeFa({ rounds: [{ steps: ['nope'] }] } as unknown as FaScenario, { transcript: false });
    fakes.push(fake);
    const failure = await run(fake.command, [...fake.args, '-p', 'x'], { env: { ...process.env, ...fake.env } }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 2, stderr: expect.stringContaining('rounds[0].steps[0] must be an object') });
  });

  it('exits when its parent dies (orphaned mid-round)', async () => {
    const fake = fakeFa('slow', { transcript: true });
    fakes.push(fake);
    const middleScript = `
      const { spawn } = require('node:child_process');
      const child = spawn(process.argv[1], process.argv.slice(2), { stdio: 'ignore', detached: true });
      console.log(child.pid);
      setInterval(() => {}, 1000);`;
    const middle = spawn(process.execPath, ['-e', middleScript, fake.command, ...fake.args, '-p', 'x'], {
      env: { ...process.env, ...fake.env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const childPid = await new Promise<number>((resolvePid) => middle.stdout.once('data', (data: Buffer) => resolvePid(Number(String(data).trim()))));
      const until = Date.now() + 20_000;
      while (fake.transcripts()[0]?.frames.length !== 4 && Date.now() < until) await new Promise((wait) => setTimeout(wait, 20));
      middle.kill('SIGKILL');
      expect(await waitUntilGone([childPid], 15_000)).toEqual([]);
      expect(fake.transcript()).toMatchObject({ exitCode: 1, complete: true });
      expect(fake.transcript().entries).toContainEqual(expect.objectContaining({ kind: 'note', what: 'lifeline', detail: { reason: 'parent process died' } }));
    } finally {
      middle.kill('SIGKILL');
    }
  });
});
