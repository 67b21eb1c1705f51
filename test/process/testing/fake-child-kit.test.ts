// The subvisor/testing kit: fakeChild() from source and from the built package, transcripts, cleanup, liveness, the bin.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BUILTIN_SCENARIO_NAMES,
  BUILTIN_SCENARIOS,
  CHILD_ENV,
  descendantsOf,
  fakeChild,
  isAlive,
  KIT_FLAG,
  liveFakeProcesses,
  liveTree,
  waitUntilGone,
} from '../../../src/testing/index.js';
import type { FakeChild, Scenario } from '../../../src/testing/index.js';
import { checkInvariants, ScriptedParent } from '../../helpers/scripted-parent.js';
import { spawnRun } from '../../../src/index.js';
import { testKit, type AfterEach } from '../../../src/testing/index.js';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../../..');
const script = join(root, 'dist', 'testing', 'fake-child.js');
const FAST = { turnTickMs: 5, idleTickMs: 10 };

const made: Array<{ fake: FakeChild; parent?: ScriptedParent }> = [];
afterEach(async () => {
  for (const { fake, parent } of made.splice(0)) {
    if (parent !== undefined) {
      await parent.dispose(fake.token);
      expect(fake.livePids()).toEqual([]);
    }
    fake.cleanup();
  }
});

/** The variables fakeChild() passes in its kit argument. */
function kitOf(fake: FakeChild): Record<string, string> {
  const argument = fake.args[1] as string;
  expect(argument.startsWith(KIT_FLAG)).toBe(true);
  return JSON.parse(argument.slice(KIT_FLAG.length)) as Record<string, string>;
}

describe('fakeChild()', () => {
  it('describes a spawnable child: node, the built script, the kit argument, the scenario reference; env is yours', () => {
    const fake = fakeChild('demo', { ...FAST, env: { MINE: '1' } });
    made.push({ fake });
    expect(fake.command).toBe(process.execPath);
    expect(fake.args).toEqual([script, expect.stringMatching(/^--subvisor-fake-kit=\{/), 'demo']);
    const kit = kitOf(fake);
    expect(kit[CHILD_ENV.turnTickMs]).toBe('5');
    expect(kit[CHILD_ENV.idleTickMs]).toBe('10');
    expect(kit['SUBVISOR_FAKE_TOKEN']).toBe(fake.token);
    expect(fake.env).toEqual({ MINE: '1' });
    const dir = kit[CHILD_ENV.transcriptDir] as string;
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    fake.cleanup();
    expect(existsSync(dir)).toBe(false);
  });

  it('passes a small scenario inline, a big one through a private file removed by dispose', () => {
    const small: Scenario = { name: 'small', turns: [{ answer: 'hi' }] };
    const inline = fakeChild(small, { transcript: false });
    made.push({ fake: inline });
    expect(inline.args[2]).toBe('env');
    expect(JSON.parse(kitOf(inline)[CHILD_ENV.scenario] as string)).toEqual(small);
    expect(kitOf(inline)[CHILD_ENV.transcriptDir]).toBeUndefined();

    const big = fakeChild({ turns: [{ answer: 'x'.repeat(40_000) }] }, { transcript: false });
    const file = big.args[2] as string;
    expect(file).toMatch(/scenario\.json$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(kitOf(big)[CHILD_ENV.scenario]).toBeUndefined();
    big[Symbol.dispose]();
    expect(existsSync(file)).toBe(false);
  });

  it('holds its exit hook only while it has temp files, and installs no signal handlers', () => {
    const count = () => ['exit', 'SIGTERM', 'SIGINT'].map((event) => process.listenerCount(event));
    const before = count();
    const first = fakeChild('echo');
    const second = fakeChild('echo');
    expect(count()).toEqual([(before[0] as number) + 1, before[1], before[2]]);
    first.cleanup();
    expect(count()[0]).toBe((before[0] as number) + 1);
    second.cleanup();
    second.cleanup();
    expect(count()).toEqual(before);
    const noFiles = fakeChild('echo', { transcript: false });
    made.push({ fake: noFiles });
    expect(count()).toEqual(before);
  });

  it('refuses an unknown built-in name', () => {
    expect(() => fakeChild('nope' as 'demo')).toThrow(/unknown built-in scenario/);
  });

  it('every built-in name has a scenario', () => {
    expect(Object.keys(BUILTIN_SCENARIOS).sort()).toEqual([...BUILTIN_SCENARIO_NAMES].sort());
  });

  it('a big scenario file works end to end', async () => {
    const fake = fakeChild({ turns: [{ answer: 'ü'.repeat(20_000) }] }, FAST);
    const parent = new ScriptedParent(fake, { task: 'go' });
    made.push({ fake, parent });
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    const { code } = await parent.waitExit();
    const result = parent.events().find((event) => event.type === 'result');
    expect(result?.type === 'result' && result['final-text']).toBe('ü'.repeat(20_000));
    expect(checkInvariants(parent, code)).toEqual([]);
  });
});

describe('the kit bookkeeping survives your own env', () => {
  it('spawnRun({ ...fake, env }) still finds the scenario, the transcript and every live pid', async () => {
    const fake = fakeChild('echo', FAST);
    made.push({ fake });
    const stateDir = mkdtempSync(join(tmpdir(), 'kit-env-'));
    try {
      const run = spawnRun({ ...fake, env: { MY_OWN: 'variable' }, task: 'hello', keepAlive: true, stateDir });
      await run.taskAck;
      expect(fake.livePids()).toContain(run.pid);
      await run.close();
      const outcome = await run.outcome;
      expect(outcome).toMatchObject({ status: 'done', finalText: 'hello' });
      expect(fake.transcript().finalState).toBe('done');
      expect(fake.livePids()).toEqual([]);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('a child started without the kit argument is not this fake: transcript() says so instead of an empty story', async () => {
    const stripped = fakeChild('echo', FAST);
    made.push({ fake: stripped });
    const stateDir = mkdtempSync(join(tmpdir(), 'kit-env-'));
    try {
      const outcome = await spawnRun({ command: stripped.command, args: [script, 'echo'], task: 'hi', stateDir, killGraceMs: 200 }).outcome;
      expect(outcome.status).toBe('done');
      expect(() => stripped.transcript()).toThrow(/no fake child has started from this helper yet; start it with the command and args the helper returned/);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});

describe('testKit()', () => {
  it('registers settle() as an afterEach hook with a timeout', () => {
    const registered: Array<[unknown, number | undefined]> = [];
    const afterEachHook: AfterEach = (hook, timeout) => registered.push([hook, timeout]);
    const kit = testKit({ afterEach: afterEachHook });
    expect(registered).toEqual([[kit.settle, 10_000]]);
  });

  it('settle() passes after a clean test and removes the fakes\' files', async () => {
    const kit = testKit();
    const fake = kit.fakeChild('echo');
    const dir = kitOf(fake)[CHILD_ENV.transcriptDir] as string;
    const outcome = await kit.spawnRun({ ...fake, task: 'clean' }).outcome;
    expect(outcome.finalText).toBe('clean');
    await expect(kit.settle()).resolves.toBeUndefined();
    expect(existsSync(dir)).toBe(false);
  });

  it('settle() kills a run the test left live (grandchildren too), fast, and fails naming it', async () => {
    const kit = testKit();
    const fake = kit.fakeChild('grandchildren');
    const run = kit.spawnRun({ ...fake, task: 'never ends' });
    await new Promise<void>((resolveWait) => run.on('event', (event) => event.type === 'info' && resolveWait()));
    const started = Date.now();
    await expect(kit.settle()).rejects.toThrow(new RegExp(`the test ended with 1 live run\\(s\\), killed now: ${run.id} \\(running\\)`));
    expect(Date.now() - started).toBeLessThan(5_000); // vitest's default test timeout: the kit must not outlive it
    expect(run.ended).toBe(true);
    expect(liveFakeProcesses(fake.token)).toEqual([]);
  });

  it('uses a small kill grace: cancelling a child that ignores SIGTERM ends well within a test timeout', async () => {
    const kit = testKit();
    const run = kit.spawnRun({ ...kit.fakeChild('stubborn'), task: 'x' });
    await run.taskAck;
    const started = Date.now();
    await run.cancel();
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', escalated: true });
    expect(Date.now() - started).toBeLessThan(4_000);
    await kit.settle();
  });
});

describe('transcripts', () => {
  it('record every control (raw, decoded, ack), every event line, the states and the exit code', async () => {
    const fake = fakeChild('demo', FAST);
    const parent = new ScriptedParent(fake, { task: 'Inspect the README' });
    made.push({ fake, parent });
    await parent.waitForEvent('tool-call');
    parent.send('steer', { text: 'mention the tests' });
    parent.appendRaw('garbage line\n');
    await parent.waitForEvent('turn-complete');
    parent.send('close');
    const { code } = await parent.waitExit();
    const transcript = fake.transcript();
    expect(transcript.pid).toBe(parent.pid);
    expect(transcript.scenario).toBe('demo');
    expect(transcript.events.map((event) => event.line)).toEqual(parent.lines());
    expect(transcript.controls.map((control) => control.raw)).toEqual(parent.sentLines);
    const acks = parent.events().filter((event) => event.type === 'control-ack');
    expect(transcript.controls.map((control) => control.ack)).toEqual(
      acks.map((ack) => (ack.type === 'control-ack' ? { status: ack.status, ...(ack.ref ? { ref: ack.ref } : {}), ...(ack.reason ? { reason: ack.reason } : {}) } : {})),
    );
    expect(transcript.controls[0]?.message).toMatchObject({ type: 'prompt', text: 'Inspect the README' });
    expect(transcript.controls[2]?.rejection?.code).toBe('malformed');
    expect(transcript.states).toEqual(['starting', 'ready', 'running', 'ready', 'done']);
    expect(transcript).toMatchObject({ finalState: 'done', exitCode: 0, complete: true });
    expect(code).toBe(0);
  });

  it('keep one transcript per spawn; transcript() is the latest', async () => {
    const fake = fakeChild('echo', FAST);
    for (const text of ['first', 'second']) {
      const parent = new ScriptedParent(fake, { task: text });
      await parent.waitForEvent('turn-complete');
      parent.send('close');
      await parent.waitExit();
      await parent.dispose(fake.token);
    }
    made.push({ fake });
    const all = fake.transcripts();
    expect(all.map((transcript) => transcript.controls[0]?.message)).toMatchObject([{ text: 'first' }, { text: 'second' }]);
    expect(fake.transcript().pid).toBe(all[1]?.pid);
  });

  it('throw a clear error when off or not started', () => {
    const off = fakeChild('echo', { transcript: false });
    const notYet = fakeChild('echo');
    made.push({ fake: off }, { fake: notYet });
    expect(() => off.transcript()).toThrow(/transcript: false/);
    expect(() => notYet.transcript()).toThrow(/no fake child has started/);
  });
});

describe('liveness helpers', () => {
  it('see a live tree, its descendants, and its end', async () => {
    const fake = fakeChild('grandchildren', FAST);
    const parent = new ScriptedParent(fake, { task: 'go' });
    made.push({ fake, parent });
    await parent.waitFor((all) => all.filter((event) => 'grandchild-pid' in event).length === 2, 'grandchildren');
    expect(isAlive(parent.pid)).toBe(true);
    const tree = liveTree(parent.pid);
    expect(tree).toHaveLength(3);
    expect(descendantsOf(parent.pid)).toHaveLength(2);
    for (const pid of tree) process.kill(pid, 'SIGKILL');
    expect(await waitUntilGone(tree)).toEqual([]);
    expect(isAlive(parent.pid)).toBe(false);
  });
});

describe('the built package and the bin', () => {
  it("fakeChild('demo') from `subvisor/testing` (dist) runs a whole run and cleans up", async () => {
    const { stdout } = await run(process.execPath, [join(root, 'test', 'helpers', 'fake-kit-smoke.mjs')], { cwd: root, timeout: 30_000 });
    const report = JSON.parse(stdout) as { script: string; code: number; last: { type: string; status: string }; finalText: string; finalState: string; transcriptDir: string };
    expect(report.script).toBe(script);
    expect(report.code).toBe(0);
    expect(report.last).toMatchObject({ type: 'exit', status: 'done' });
    expect(report.finalText).toContain('subvisor');
    expect(report.finalState).toBe('done');
    expect(existsSync(report.transcriptDir)).toBe(false);
  });

  it('removes the kit temp dirs at process exit even without cleanup()', async () => {
    const { stdout } = await run(process.execPath, [join(root, 'test', 'helpers', 'fake-kit-smoke.mjs'), '--leave-dirs'], { cwd: root, timeout: 30_000 });
    const report = JSON.parse(stdout) as { transcriptDir: string; code: number };
    expect(report.code).toBe(0);
    expect(existsSync(report.transcriptDir)).toBe(false);
  });

  it('`npx subvisor-fake-child --help` runs through an installed bin link', async () => {
    const project = mkdtempSync(join(tmpdir(), 'subvisor-npx-'));
    try {
      mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
      symlinkSync(script, join(project, 'node_modules', '.bin', 'subvisor-fake-child'));
      writeFileSync(join(project, 'package.json'), '{"name":"consumer","private":true}');
      const { stdout } = await run('npx', ['--no', '--', 'subvisor-fake-child', '--help'], { cwd: project, timeout: 30_000 });
      expect(stdout).toContain('usage: subvisor-fake-child');
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });

  it('refuses a malformed scenario with a reason and exit code 1', async () => {
    const env = { ...process.env, FEN_WIRE_CONTROL_PATH: '/nonexistent/c', FEN_WIRE_EVENT_PATH: '/nonexistent/e' };
    const bad = JSON.stringify({
      turns: [{ steps: ['not a step', { pause: 100, untilControls: 1.5, untilControl: 'stop' }] }],
      misbehaviours: [{ at: 'after-ready' }],
    });
    const failure = await run(process.execPath, [script, 'env'], { env: { ...env, [CHILD_ENV.scenario]: bad } }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 1, stderr: expect.stringContaining('turns[0].steps[0] must be an object') });
    const { stderr } = failure as { stderr: string };
    expect(stderr).toContain('misbehaviours[0] must be an object with "at" and "do"');
    expect(stderr).toContain('turns[0].steps[1].untilControls must be a whole number');
    expect(stderr).toContain('turns[0].steps[1].untilControl must be one of prompt, steer');
  });

  it('`node dist/testing/fake-child.js echo` starts and says ready', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'subvisor-bin-'));
    const events = join(dir, 'events.jsonl');
    const child = spawn(process.execPath, [script, 'echo'], {
      env: { ...process.env, FEN_WIRE_CONTROL_PATH: join(dir, 'control.jsonl'), FEN_WIRE_EVENT_PATH: events, SUBVISOR_FAKE_IDLE_TICK_MS: '10' },
      stdio: 'ignore',
    });
    try {
      const until = Date.now() + 15_000;
      while (!(existsSync(events) && readFileSync(events, 'utf8').includes('"ready"')) && Date.now() < until) {
        await new Promise((resolveWait) => setTimeout(resolveWait, 20));
      }
      const lines = readFileSync(events, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { type: string; run: string });
      expect(lines.map((line) => line.type)).toEqual(['agent-started', 'ready']);
      expect(lines[1]?.run).toBe('run');
      writeFileSync(join(dir, 'control.jsonl'), `${JSON.stringify({ v: 1, seq: 1, type: 'cancel', run: 'run' })}\n`);
      const code = await new Promise((resolveExit) => child.on('exit', resolveExit));
      expect(code).toBe(1);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
