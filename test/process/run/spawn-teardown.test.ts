// spawnRun matrix, teardown: disposal, iteration semantics, the private channel, signal handlers, parent shutdown, clean exit.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import type { Outcome, Run, RunEvent } from '../../../src/index.js';
import { fakeChild, liveFakeProcesses, waitUntilGone } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import {
  BOUND_MS,
  FAST_CHILD,
  FAST_RUN,
  checkStream,
  expectEmptyStateDir,
  freshStateDir,
  grandchildPidOf,
  reapLeftovers,
  supervise,
  within,
} from '../../helpers/spawn-harness.js';

afterEach(reapLeftovers);

const root = fileURLToPath(new URL('../../..', import.meta.url));
const helpers = join(root, 'test', 'helpers');

const LONG_TURN: Scenario = { turns: [{ steps: [{ pause: 60_000 }], answer: 'never' }] };
const TWO_TOOLS: Scenario = {
  turns: [
    {
      steps: [
        { thinking: 'hmm', chunks: 3 },
        { tool: 'read', result: 'file contents', durationMs: 20 },
        { tool: 'grep', result: 'matches', durationMs: 20 },
      ],
      answer: 'all done',
      answerChunks: 4,
    },
  ],
};

describe('disposal', () => {
  it('await using: leaving the block cancels and reaps the tree', async () => {
    const stateDir = freshStateDir();
    const child = fakeChild({ ...LONG_TURN, misbehaviours: [{ at: 'turn-start', do: { grandchildren: { count: 1, session: true } } }] }, FAST_CHILD);
    let run: Run | undefined;
    let grandchild: number | undefined;
    try {
      {
        await using disposable = spawnRun({ ...FAST_RUN, command: child.command, args: child.args, env: child.env, task: 'go', stateDir });
        run = disposable;
        await new Promise<void>((resolve) => {
          disposable.on('event', (event) => {
            const pid = grandchildPidOf(event);
            if (pid !== undefined) {
              grandchild = pid;
              resolve();
            }
          });
        });
        expect(disposable.ended).toBe(false);
      }
      expect(run.ended).toBe(true);
      const outcome = await run.outcome;
      expect(outcome.status).toBe('cancelled');
      expect(outcome.errorCode).toBe('aborted');
      expect(await waitUntilGone(() => [...child.livePids(), grandchild as number], 2_000)).toEqual([]);
      expectEmptyStateDir(stateDir);
    } finally {
      for (const pid of [...child.livePids(), ...(grandchild === undefined ? [] : [grandchild])]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      child.cleanup();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('terminate() is safe to call twice and after the end; both resolve to the one outcome', async () => {
    const s = supervise(LONG_TURN, { task: 'go' });
    await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
    const [first, second] = await Promise.all([s.run.terminate('first'), s.run.terminate('second')]);
    expect(first).toBe(second);
    expect(await s.run.terminate('third')).toBe(first);
    expect(await s.run.outcome).toBe(first);
    await s.finish({ status: 'cancelled' });
  });
});

describe('kill() and handleParentSignals', () => {
  it('kill(): the whole tree (a setsid grandchild too) SIGKILLed at once, no grace, outcome cancelled', async () => {
    const scenario: Scenario = {
      ignore: ['cancel', 'sigterm'],
      turns: [{ steps: [{ misbehave: { grandchildren: { count: 1, session: true } } }, { pause: 60_000 }] }],
    };
    const s = supervise(scenario, { task: 'go', killGraceMs: 20_000 });
    await s.waitEvent((event) => grandchildPidOf(event) !== undefined, 'grandchild report');
    const started = Date.now();
    const outcome = await s.run.kill('test says so');
    // Far below the 20 s grace: nothing waited for it.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(outcome).toMatchObject({ status: 'cancelled', killed: true, escalated: true });
    await s.finish({ status: 'cancelled' });
  });

  it('handleParentSignals: false installs no SIGINT/SIGTERM handler', async () => {
    const baseline = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    const s = supervise(LONG_TURN, { task: 'go', handleParentSignals: false });
    await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
    expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(baseline);
    await s.control((run) => run.cancel());
    await s.finish({ status: 'cancelled' });
  });
});

describe('iteration', () => {
  it('an iterator started after the end still sees every event from the first', async () => {
    const s = supervise(TWO_TOOLS, { task: 'go' });
    const outcome = await s.run.outcome;
    const iterated: RunEvent[] = [];
    for await (const event of s.run) iterated.push(event);
    expect(iterated).toEqual(s.events);
    expect(iterated[0]?.type).not.toBe('exit');
    expect(iterated.some((event) => event.type === 'ready')).toBe(true);
    checkStream(iterated, outcome);
    await s.finish({ status: 'done', mirror: true });
  });

  it('an iterator started mid-run sees every event from the first, in order', async () => {
    const s = supervise(TWO_TOOLS, { task: 'go' });
    await s.waitEvent((event) => event.type === 'tool-call', 'tool-call');
    const iterated: RunEvent[] = [];
    for await (const event of s.run) iterated.push(event);
    expect(iterated).toEqual(s.events);
    await s.finish({ status: 'done' });
  });

  it('batches(): every event exactly once, in order, the last batch ending with the exit', async () => {
    const s = supervise(TWO_TOOLS, { task: 'go' });
    await s.waitEvent((event) => event.type === 'tool-call', 'tool-call');
    const batches: RunEvent[][] = [];
    for await (const batch of s.run.batches()) batches.push(batch);
    expect(batches.every((batch) => batch.length > 0)).toBe(true);
    expect(batches.flat()).toEqual(s.events);
    expect(batches[batches.length - 1]?.at(-1)?.type).toBe('exit');
    await s.finish({ status: 'done' });
  });

  it('breaking out of the loop does not stop the run', async () => {
    const s = supervise(TWO_TOOLS, { task: 'go' });
    for await (const event of s.run) {
      if (event.type === 'ready') break;
    }
    expect(s.run.ended).toBe(false);
    const outcome = await s.finish({ status: 'done', mirror: true });
    expect(outcome.finalText).toBe('all done');
    expect(s.events.some((event) => event.type === 'tool-result')).toBe(true);
  });

  it('a slow consumer still gets every event (backpressure holds nothing back)', async () => {
    const scenario: Scenario = { turns: [{ steps: [{ misbehave: { flood: { count: 3000, bytes: 150 } } }], answer: 'flooded' }] };
    const s = supervise(scenario, { task: 'go', highWaterMark: 64 });
    let count = 0;
    for await (const event of s.run) {
      count++;
      if (count % 500 === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      if (event.type === 'exit') break;
    }
    const outcome = await s.finish({ status: 'done' });
    expect(count).toBe(s.events.length);
    expect(s.events.filter((event) => event.type === 'assistant-text-delta').length).toBeGreaterThanOrEqual(3000);
    expect(outcome.finalText).toBe('flooded');
  });
});

describe('event shape', () => {
  it('events are camelCased, trailing ? dropped, unknown extra fields kept', async () => {
    const RUN_ID = 'shape-run';
    const info = { v: 1, seq: 1_000_000, type: 'info', run: RUN_ID, 'transport-truncated?': true, 'my-extra-field': 'kept', 'flag?': false, refs: [] };
    const exit = { v: 1, seq: 1_000_001, type: 'exit', run: RUN_ID, status: 'done' };
    const scenario: Scenario = {
      turns: [{ steps: [{ tool: 'read', arguments: { 'some-path': 'x' }, result: 'ok', error: true, durationMs: 5 }], answer: 'a' }],
      misbehaviours: [
        {
          at: 'before-result',
          do: [{ raw: [{ kind: 'literal', line: JSON.stringify(info) }, { kind: 'literal', line: JSON.stringify(exit) }] }, { crash: { code: 0 } }],
        },
      ],
    };
    const s = supervise(scenario, { task: 'go', runId: RUN_ID });
    await s.finish({ status: 'done' });
    const shaped = s.events.find((event) => event.seq === 1_000_000);
    expect(shaped).toEqual({ v: 1, seq: 1_000_000, type: 'info', run: RUN_ID, transportTruncated: true, refs: [], extra: { myExtraField: 'kept', flag: false } });
    const toolResult = s.events.find((event) => event.type === 'tool-result');
    expect(toolResult).toMatchObject({ name: 'read', isError: true, durationSeconds: expect.any(Number) });
    // Payload values are data, not keys: `arguments` keeps its own keys untouched.
    expect(s.events.find((event) => event.type === 'tool-call')).toMatchObject({ arguments: { 'some-path': 'x' } });
    const complete = s.events.find((event) => event.type === 'turn-complete');
    expect(complete).toMatchObject({ stopReason: 'stop' });
  });
});

describe('the private channel', () => {
  it('a 0700 directory under stateDir, 0600 files, FEN_WIRE_* set; removed at the end unless keepFiles', async () => {
    const stateDir = freshStateDir();
    try {
      const s = supervise(LONG_TURN, { task: 'go', stateDir, keepFiles: true, runId: 'channel-check' });
      await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
      expect(s.run.id).toBe('channel-check');
      expect(s.run.channelDir.startsWith(stateDir)).toBe(true);
      expect(statSync(s.run.channelDir).mode & 0o777).toBe(0o700);
      const files = readdirSync(s.run.channelDir);
      expect(files.length).toBeGreaterThanOrEqual(2);
      for (const file of files) expect(statSync(join(s.run.channelDir, file)).mode & 0o777, file).toBe(0o600);
      const environ = readFileSyncSafe(`/proc/${s.run.pid}/environ`);
      expect(environ).toContain('FEN_WIRE_RUN_ID=channel-check');
      expect(environ).toMatch(new RegExp(`FEN_WIRE_CONTROL_PATH=${s.run.channelDir}/`));
      expect(environ).toMatch(new RegExp(`FEN_WIRE_EVENT_PATH=${s.run.channelDir}/`));
      await s.control((run) => run.cancel());
      await s.finish({ status: 'cancelled' });
      // keepFiles: the directory is still there for debugging.
      expect(readdirSync(stateDir)).toHaveLength(1);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('env is merged over process.env, undefined removes a key, and FEN_WIRE_* cannot be overridden', async () => {
    process.env['SUBVISOR_SPAWN_TEST_INHERITED'] = 'inherited';
    process.env['SUBVISOR_SPAWN_TEST_REMOVED'] = 'should not reach the child';
    try {
      const s = supervise(LONG_TURN, {
        task: 'go',
        runId: 'env-check',
        env: {
          SUBVISOR_SPAWN_TEST_ADDED: 'added',
          SUBVISOR_SPAWN_TEST_REMOVED: undefined,
          FEN_WIRE_RUN_ID: 'evil',
          FEN_WIRE_CONTROL_PATH: '/tmp/evil-control',
        },
      });
      await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
      const environ = readFileSyncSafe(`/proc/${s.run.pid}/environ`).split('\0');
      expect(environ).toContain('SUBVISOR_SPAWN_TEST_INHERITED=inherited');
      expect(environ).toContain('SUBVISOR_SPAWN_TEST_ADDED=added');
      expect(environ.some((entry) => entry.startsWith('SUBVISOR_SPAWN_TEST_REMOVED='))).toBe(false);
      expect(environ).toContain('FEN_WIRE_RUN_ID=env-check');
      expect(environ).not.toContain('FEN_WIRE_CONTROL_PATH=/tmp/evil-control');
      await s.control((run) => run.cancel());
      await s.finish({ status: 'cancelled' });
    } finally {
      delete process.env['SUBVISOR_SPAWN_TEST_INHERITED'];
      delete process.env['SUBVISOR_SPAWN_TEST_REMOVED'];
    }
  });

  it('cwd: the child runs in the given directory', async () => {
    const cwd = freshStateDir();
    try {
      const s = supervise(LONG_TURN, { task: 'go', cwd });
      await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
      expect(readlinkSync(`/proc/${s.run.pid}/cwd`)).toBe(cwd);
      await s.control((run) => run.cancel());
      await s.finish({ status: 'cancelled' });
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('FEN_WIRE_DEADLINE is whole Unix seconds, rounded up', async () => {
    const s = supervise(LONG_TURN, { task: 'go', timeoutMs: 30_500 });
    const before = Date.now();
    await s.waitEvent((event) => event.type === 'turn-started', 'turn-started');
    const match = /FEN_WIRE_DEADLINE=(\d+)(\0|$)/.exec(readFileSyncSafe(`/proc/${s.run.pid}/environ`));
    expect(match).not.toBeNull();
    const deadline = Number(match?.[1]);
    expect(deadline * 1000).toBeGreaterThanOrEqual(before - 1000 + 30_500 - 1000);
    expect(deadline * 1000).toBeLessThanOrEqual(Date.now() + 30_500 + 1000);
    await s.control((run) => run.cancel());
    await s.finish({ status: 'cancelled' });
  });
});

/** A /proc file of the child ('' when the child is gone). */
function readFileSyncSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

describe('process-wide handlers', () => {
  it('signal and exit handlers are installed only while a run is alive', async () => {
    const count = () => ({
      SIGINT: process.listenerCount('SIGINT'),
      SIGTERM: process.listenerCount('SIGTERM'),
      exit: process.listenerCount('exit'),
    });
    const baseline = count();
    const a = supervise(LONG_TURN, { task: 'a' });
    const b = supervise(LONG_TURN, { task: 'b' });
    await a.waitEvent((event) => event.type === 'turn-started', 'turn-started');
    await b.waitEvent((event) => event.type === 'turn-started', 'turn-started');
    const during = count();
    expect(during.SIGINT).toBe(baseline.SIGINT + 1);
    expect(during.SIGTERM).toBe(baseline.SIGTERM + 1);
    await a.control((run) => run.cancel());
    await a.finish({ status: 'cancelled' });
    expect(count()).toEqual(during);
    await b.control((run) => run.cancel());
    await b.finish({ status: 'cancelled' });
    expect(count()).toEqual(baseline);
  });
});

interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a helper script (against the built package) and resolves when it exits, or rejects at the bound. */
function runScript(script: string, args: string[], onLine?: (line: string, kill: (signal: NodeJS.Signals) => void) => void) {
  const child = spawn(process.execPath, [join(helpers, script), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
    pending += chunk;
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      onLine?.(line, (signal) => child.kill(signal));
      newline = pending.indexOf('\n');
    }
  });
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const done = new Promise<ChildResult>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

describe('the parent process', () => {
  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
    'receiving %s with runs alive: every tree is reaped, the parent exits as the signal says',
    async (signal) => {
      const stateDir = freshStateDir();
      let report: { pid: number; token: string; grandchildren: number[] }[] = [];
      try {
        const { child, done } = runScript('spawn-parent.mjs', [stateDir, '3'], (line, kill) => {
          if (!line.startsWith('READY ')) return;
          report = JSON.parse(line.slice('READY '.length)) as typeof report;
          kill(signal);
        });
        const result = await within(done, BOUND_MS, 'the parent script exiting').catch((error: unknown) => {
          child.kill('SIGKILL');
          throw error;
        });
        expect(report, `the script reported its runs (stdout: ${result.stdout} stderr: ${result.stderr})`).toHaveLength(3);
        expect(result.signal ?? result.code, result.stderr).toSatisfy(
          (how: unknown) => how === signal || how === { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 }[signal],
        );
        // The parent's own handler reaped them (the watchdog would too, but only after the parent died):
        // every run's kill ladder ran inside the parent before it died.
        const killed = new Set(
          result.stdout
            .split('\n')
            .filter((line) => line.startsWith('KILL '))
            .map((line) => (JSON.parse(line.slice('KILL '.length)) as { index: number }).index),
        );
        expect([...killed].sort(), result.stdout).toEqual([0, 1, 2]);
        const pids = report.flatMap((entry) => [entry.pid, ...entry.grandchildren]);
        expect(pids).toHaveLength(9);
        // The grandchildren would live 60 s on their own: they must be gone now.
        const survivors = await waitUntilGone(() => [...pids, ...report.flatMap((entry) => liveFakeProcesses(entry.token))], 5_000);
        expect(survivors).toEqual([]);
        expectEmptyStateDir(stateDir);
      } finally {
        for (const entry of report) for (const pid of liveFakeProcesses(entry.token)) process.kill(pid, 'SIGKILL');
        rmSync(stateDir, { recursive: true, force: true });
      }
    },
  );

  it.each(['echo', 'stubborn', 'abort'] as const)(
    'exits on its own after its last run ended (%s), with no handler left registered',
    async (mode) => {
      const stateDir = freshStateDir();
      try {
        const { child, done } = runScript('spawn-lone-run.mjs', [stateDir, mode]);
        const result = await within(done, 20_000, 'the lone-run script exiting by itself').catch((error: unknown) => {
          child.kill('SIGKILL');
          throw error;
        });
        expect(result.code, result.stderr).toBe(0);
        const summary = JSON.parse(result.stdout.trim()) as Pick<Outcome, 'status' | 'finalText' | 'killed' | 'escalated'> & {
          handlers: Record<string, number>;
        };
        expect(summary.status).toBe({ echo: 'done', stubborn: 'cancelled', abort: 'cancelled' }[mode]);
        if (mode === 'echo') expect(summary.finalText).toBe('echo:lone');
        if (mode === 'stubborn') expect(summary.escalated).toBe(true);
        expect(summary.handlers).toEqual({ SIGINT: 0, SIGTERM: 0, SIGHUP: 0, exit: 0 });
        expectEmptyStateDir(stateDir);
      } finally {
        rmSync(stateDir, { recursive: true, force: true });
      }
    },
  );
});
