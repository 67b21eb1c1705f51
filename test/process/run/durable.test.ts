// Durable runs against real processes: a parent killed mid-turn, attachRun by another, the lease, and every refusal.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { AttachError, attachRun, connectRun, createSupervisor, readJournal, spawnRun } from '../../../src/index.js';
import type { Run, RunEvent } from '../../../src/index.js';
import { fakeChild, waitUntilGone } from '../../../src/testing/index.js';
import { startCli } from '../../helpers/cli-run.js';
import type { FakeChild, Scenario } from '../../../src/testing/index.js';

const PARENT = fileURLToPath(new URL('../../helpers/durable-parent.mjs', import.meta.url));
const parents: ChildProcess[] = [];
const fakes: FakeChild[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const parent of parents.splice(0)) parent.kill('SIGKILL');
  for (const fake of fakes.splice(0)) {
    await waitUntilGone(() => fake.livePids(), 10_000);
    fake.cleanup();
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'durable-'));
  dirs.push(dir);
  return dir;
}

/** A fake Fen child that outlives its parent, as a real one does. */
function child(turns: Scenario['turns']): FakeChild {
  const fake = fakeChild({ outlivesParent: true, maxLifeMs: 60_000, turns }, { turnTickMs: 5, idleTickMs: 20 });
  fakes.push(fake);
  return fake;
}

interface Seen {
  type: string;
  pid: number;
  events: number;
}

/** Starts a parent process holding one durable run; resolves with what it printed once `until` was seen. */
async function startParent(fake: FakeChild, options: { dir: string; runId: string; leaseMs: number; keepAlive?: boolean }, until: string): Promise<{ parent: ChildProcess; seen: Seen }> {
  const parent = spawn(
    process.execPath,
    [PARENT, JSON.stringify({ child: { command: fake.command, args: fake.args, env: fake.env }, stateDir: options.dir, runId: options.runId, leaseMs: options.leaseMs, keepAlive: options.keepAlive ?? false })],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  parents.push(parent);
  let buffered = '';
  const seen = await new Promise<Seen>((resolve, reject) => {
    parent.once('exit', (code) => reject(new Error(`the parent exited (${code}) before a ${until}`)));
    parent.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const found = buffered.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Seen).find((line) => line.type === until);
      if (found !== undefined) resolve(found);
    });
  });
  return { parent, seen };
}

function codeOfAttach(call: () => unknown): string | undefined {
  try {
    call();
  } catch (error) {
    return error instanceof AttachError ? error.code : (error as Error).message;
  }
  return undefined;
}

async function kill(parent: ChildProcess): Promise<void> {
  parent.kill('SIGKILL');
  if (parent.exitCode === null && parent.signalCode === null) await new Promise((resolve) => parent.once('exit', resolve));
}

/** Resolves once the run is `ready` (at once when it is). */
function whenReady(run: Run): Promise<void> {
  if (run.state === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const listener = (state: string) => {
      if (state !== 'ready') return;
      run.off('state', listener);
      resolve();
    };
    run.on('state', listener);
  });
}

const isAlive = (pid: number): boolean => {
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('durable runs: a parent killed mid-turn, a new parent re-attached', () => {
  it('the same child (same pid) finishes done with the whole answer; the new parent sees every event once, in order, from the first', async () => {
    const dir = stateDir();
    const fake = child([{ steps: [{ text: 'working' }, { pause: 1500 }], answer: 'The durable answer.', answerChunks: 3 }]);
    const { parent, seen } = await startParent(fake, { dir, runId: 'run-a', leaseMs: 10_000 }, 'turn-started');
    await kill(parent);
    expect(isAlive(seen.pid)).toBe(true);
    const run = attachRun({ runId: 'run-a', stateDir: dir });
    expect(run.pid).toBe(seen.pid);
    const events: RunEvent[] = [];
    for await (const event of run) events.push(event);
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'The durable answer.', exitCode: null });
    expect(outcome.errorCode).toBeUndefined();
    // From the first event the child ever wrote, each once, in order (the child's own seq), then the exit.
    const seqs = events.filter((event) => event.type !== 'exit').map((event) => (event as { seq: number }).seq);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    expect(seqs.length).toBeGreaterThan(seen.events);
    expect(events.map((event) => event.type).slice(0, 4)).toEqual(['agent-started', 'ready', 'control-ack', 'turn-started']);
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: 'done' });
    expect(await waitUntilGone([seen.pid], 5_000)).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('controls sent after re-attach get fresh seq numbers and are acked; the state was mirrored again from the file; its journal says so', async () => {
    const dir = stateDir();
    const fake = child([{ answer: { echo: true } }]);
    const { parent } = await startParent(fake, { dir, runId: 'run-b', leaseMs: 10_000, keepAlive: true }, 'turn-complete');
    await kill(parent);
    const journals = join(stateDir(), 'journals');
    const run = attachRun({ runId: 'run-b', stateDir: dir, journal: journals });
    const states: string[] = [];
    run.on('state', (state) => states.push(state));
    const iterated = (async () => {
      const types: string[] = [];
      for await (const event of run) types.push(event.type);
      return types;
    })();
    await whenReady(run);
    const ack = await run.prompt('a second prompt');
    expect(ack).toMatchObject({ status: 'accepted' });
    expect(ack.seq).toBeGreaterThan(1); // the first parent's task was seq 1
    await whenReady(run);
    expect((await run.close()).status).toBe('accepted');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'a second prompt' });
    expect(states).toContain('running');
    expect((await iterated).filter((type) => type === 'turn-complete')).toHaveLength(2);
    const journal = readJournal(join(journals, 'run-b.jsonl'));
    expect(journal.start).toMatchObject({ runId: 'run-b', attached: true });
    expect(journal.entries.find((entry) => entry.kind === 'event')).toMatchObject({ event: { type: 'agent-started', seq: 1 } });
    expect(journal.entries.filter((entry) => entry.kind === 'control').map((entry) => entry.kind === 'control' && [entry.control, entry.seq])).toEqual([
      ['prompt', ack.seq],
      ['close', ack.seq + 1],
    ]);
    expect(journal.outcome?.outcome.finalText).toBe('a second prompt');
  });

  it('a second attach while the first parent lives is refused (lease-held); once it is gone, the run is re-attached', async () => {
    const dir = stateDir();
    const fake = child([{ steps: [{ pause: 1500 }], answer: 'late' }]);
    const { parent, seen } = await startParent(fake, { dir, runId: 'run-c', leaseMs: 10_000 }, 'turn-started');
    expect(() => attachRun({ runId: 'run-c', stateDir: dir })).toThrow(AttachError);
    try {
      attachRun({ runId: 'run-c', stateDir: dir });
    } catch (error) {
      expect(error).toMatchObject({ code: 'lease-held', runId: 'run-c' });
      expect((error as Error).message).toContain(String(parent.pid));
    }
    await kill(parent);
    const run = attachRun({ runId: 'run-c', stateDir: dir });
    expect(run.pid).toBe(seen.pid);
    // This parent holds it now: another attach is refused in turn, from this process too (one handle per run).
    expect(codeOfAttach(() => attachRun({ runId: 'run-c', stateDir: dir }))).toBe('lease-held');
    expect((await run.outcome).status).toBe('done');
  });

  it('a lease nobody takes runs out: the tree is reaped within leaseMs + killGraceMs + 3 s, its directory removed', async () => {
    const dir = stateDir();
    const fake = child([{ steps: [{ pause: 50_000 }], answer: 'never' }]);
    const leaseMs = 1500;
    const { parent, seen } = await startParent(fake, { dir, runId: 'run-d', leaseMs }, 'turn-started');
    const killedAt = Date.now();
    await kill(parent);
    expect(await waitUntilGone([seen.pid], leaseMs + 500 + 3_000)).toEqual([]);
    expect(Date.now() - killedAt).toBeLessThan(leaseMs + 500 + 3_000);
    // The reaper removes the files once the tree is gone.
    const until = Date.now() + 3_000;
    while (existsSync(join(dir, 'subvisor-durable-run-d')) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('durable runs after a restart: the pool and supervise', () => {
  it('a pool re-attaches every durable run it finds, counted against its concurrency, each ending done', async () => {
    const dir = stateDir();
    const killed = [];
    for (const runId of ['pool-1', 'pool-2']) {
      const fake = child([{ steps: [{ pause: 800 }], answer: `answer of ${runId}` }]);
      const { parent, seen } = await startParent(fake, { dir, runId, leaseMs: 10_000 }, 'turn-started');
      await kill(parent);
      killed.push(seen.pid);
    }
    const sup = createSupervisor({ concurrency: 1, handleParentSignals: false });
    let peak = 0;
    sup.on('start', () => (peak = Math.max(peak, sup.running)));
    const runs = sup.reattach({ stateDir: dir });
    expect(runs.map((run) => run.id).sort()).toEqual(['pool-1', 'pool-2']);
    expect(sup.queued + sup.running).toBe(2);
    const outcomes = await Promise.all(runs.map((run) => run.outcome));
    expect(outcomes.map((outcome) => [outcome.runId, outcome.status, outcome.finalText]).sort()).toEqual([
      ['pool-1', 'done', 'answer of pool-1'],
      ['pool-2', 'done', 'answer of pool-2'],
    ]);
    expect(peak).toBe(1);
    expect(sup.reattach({ stateDir: dir })).toEqual([]); // nothing left to re-attach
    await sup.shutdown();
    expect(await waitUntilGone(killed, 5_000)).toEqual([]);
  });

  it('supervise attach RUN_ID prints the answer and exits with the run\'s code; a run it cannot take exits 3 saying why', async () => {
    const dir = stateDir();
    const fake = child([{ steps: [{ pause: 800 }], answer: 'The attached answer.' }]);
    const { parent } = await startParent(fake, { dir, runId: 'cli-1', leaseMs: 10_000 }, 'turn-started');
    await kill(parent);
    const attached = await startCli(['attach', 'cli-1', '--state-dir', dir, '-q']).result;
    expect(attached.code).toBe(0);
    expect(attached.stdout.toString()).toBe('The attached answer.');
    const missing = await startCli(['attach', 'cli-1', '--state-dir', dir]).result;
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('cannot attach to run cli-1 (not-found)');
  });
});

describe('durable runs: what attachRun refuses, and what cannot be durable', () => {
  const record = (overrides: object) => ({
    version: 1,
    runId: 'r1',
    startedAt: Date.now(),
    pid: process.pid,
    pidStart: 'not-our-start',
    marker: 'SUBVISOR_TREE=x',
    command: 'fen',
    lastControlSeq: 1,
    options: { protocol: 'fen', killGraceMs: 100, finalizeGraceMs: 100, readyTimeoutMs: 100, requestTimeoutMs: 100, keepAlive: false, maxFinalTextBytes: 10, outputTailBytes: 10, leaseMs: 1000 },
    ...overrides,
  });
  function runDirectory(dir: string, content?: object): void {
    const runDir = join(dir, 'subvisor-durable-r1');
    mkdirSync(runDir, { mode: 0o700 });
    writeFileSync(join(runDir, 'control.jsonl'), '', { mode: 0o600 });
    writeFileSync(join(runDir, 'events.jsonl'), '', { mode: 0o600 });
    if (content !== undefined) writeFileSync(join(runDir, 'run.json'), JSON.stringify(content), { mode: 0o600 });
  }
  const codeOf = (call: () => unknown): string | undefined => {
    try {
      call();
    } catch (error) {
      return error instanceof AttachError ? error.code : `not an AttachError: ${(error as Error).message}`;
    }
    return undefined;
  };

  it('not-found, not-durable, gone and pid-reused, each a typed error, the directory left as it was', () => {
    const dir = stateDir();
    expect(codeOf(() => attachRun({ runId: 'r1', stateDir: dir }))).toBe('not-found');
    runDirectory(dir);
    expect(codeOf(() => attachRun({ runId: 'r1', stateDir: dir }))).toBe('not-durable');
    rmSync(join(dir, 'subvisor-durable-r1'), { recursive: true });
    runDirectory(dir, record({ pid: 2 ** 22 + 7 }));
    expect(codeOf(() => attachRun({ runId: 'r1', stateDir: dir }))).toBe('gone');
    rmSync(join(dir, 'subvisor-durable-r1'), { recursive: true });
    runDirectory(dir, record({ pid: process.pid, pidStart: '1' }));
    expect(codeOf(() => attachRun({ runId: 'r1', stateDir: dir }))).toBe('pid-reused');
    expect(readdirSync(join(dir, 'subvisor-durable-r1')).sort()).toEqual(['control.jsonl', 'events.jsonl', 'run.json']);
  });

  it('durable is refused where the channel dies with the parent (HEP, fuseraft, a daemon) and for a run id that cannot name a directory', () => {
    expect(() => spawnRun({ protocol: 'hep', command: 'fa', task: 'x', durable: {} })).toThrow(/cannot run durable: its channel is a pipe/);
    expect(() => spawnRun({ protocol: 'fuseraft', command: 'fuseraft', durable: {} })).toThrow(/cannot run durable/);
    expect(() => connectRun({ protocol: 'mew', url: 'ws://127.0.0.1:1', task: 'x', durable: {} } as never)).toThrow(/a daemon keeps its sessions itself/);
    expect(() => spawnRun({ command: 'fen', runId: '../escape', durable: {} })).toThrow(/runId must be 1-128 characters/);
    expect(() => spawnRun({ command: 'fen', durable: { leaseMs: 10 } })).toThrow(RangeError);
    expect(() => spawnRun({ command: 'fen', durable: { leaseMs: -1 } })).toThrow(/leaseMs must be a finite number of milliseconds >= 100/);
    expect(() => attachRun({ runId: 'r1', keepAlive: true } as never)).toThrow(/options.keepAlive belongs to the run and is kept as its first parent set it/);
    expect(() => spawnRun({ command: 'fen', keepFiles: true, durable: {} })).toThrow(/keepFiles/);
  });
});
