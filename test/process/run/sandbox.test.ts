// sandbox: the child under bubblewrap on real processes: what it may write and reach, Fen's files and answer through it, HEP's cancel below the wrappers, the kill ladder and a parent killed with SIGKILL.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import type { Outcome, Run, RunOptions } from '../../../src/index.js';
import { confine, findProgram, removeScratch } from '../../../src/process/confinement.js';
import { fakeChild, fakeFa, liveFakeProcesses, waitUntilGone } from '../../../src/testing/index.js';
import { builtScript } from '../../../src/testing/kit.js';
import { isAlive } from '../../../src/testing/liveness.js';
import { BOUND_MS, FAST_CHILD, freshStateDir, grandchildPidOf } from '../../helpers/spawn-harness.js';
import { finished, freePort, treeRuns } from '../../helpers/tree-runs.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const helpers = join(root, 'test', 'helpers');
/** The fake's transcripts are written to the host's tmp, which a sandbox hides: none. */
const SANDBOXED_CHILD = { ...FAST_CHILD, transcript: false };
const bwrap = findProgram('bwrap', process.env['PATH'], root);
if (bwrap === undefined) console.warn('sandbox tests skipped: bubblewrap (bwrap) is not on the PATH; install it with: apt-get install bubblewrap');

const runs = treeRuns({ killGraceMs: 500, readyTimeoutMs: BOUND_MS });
const { fake } = runs;
const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) server.close();
  await runs.cleanup();
});

function tempDir(prefix: string): string {
  return runs.remove(mkdtempSync(join(tmpdir(), prefix)));
}

/** A sandboxed run with a state directory and a cwd of its own. */
function start(options: RunOptions): Run {
  return runs.start({ cwd: tempDir('subvisor-sandbox-cwd-'), ...options });
}

/** Resolves at the run's first event `matches`; rejects when the run ends first. */
function eventOf(run: Run, matches: (event: Parameters<typeof grandchildPidOf>[0]) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    run.on('event', (event) => matches(event) && resolve());
    void run.outcome.then((outcome) => reject(new Error(`the run ended first: ${JSON.stringify(outcome)}`)));
  });
}

async function listen(): Promise<number> {
  const server = createServer((socket) => socket.destroy());
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/** The probe's report, from the run's output tail. */
async function probe(sandbox: RunOptions['sandbox'], cwdOf?: (run: Run) => void): Promise<{ report: Record<string, unknown>; outside: string; tmpName: string; outcome: Outcome }> {
  // In the repository (read-only in the sandbox, and outside its cwd): a path under /tmp would be hidden by the private tmp.
  const outside = runs.remove(join(root, `.sandbox-probe-${process.pid}-${Date.now()}.txt`));
  const tmpName = `subvisor-probe-${process.pid}-${Date.now()}.txt`;
  const env = { TRACEPARENT: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
  const run = start({ command: process.execPath, args: [join(helpers, 'sandbox-probe.mjs'), String(await listen()), outside, tmpName], env, sandbox });
  cwdOf?.(run);
  const outcome = await finished(run);
  const line = outcome.outputTail.split('\n').find((text) => text.startsWith('{'));
  expect(line, outcome.outputTail).toBeDefined();
  return { report: JSON.parse(line!) as Record<string, unknown>, outside, tmpName, outcome };
}

describe.skipIf(bwrap === undefined)('sandbox', () => {
  it('true: writes only in cwd and its private tmp, reaches no network, not even the host loopback', async () => {
    const { report, outside, tmpName } = await probe(true);
    expect(report).toMatchObject({ cwd: 'ok', outside: 'EROFS', tmp: 'ok', tmpdir: 'ok', loopback: 'ECONNREFUSED', internet: 'ENETUNREACH' });
    expect(report['traceparent'], 'the environment reaches the child whole').toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(existsSync(outside)).toBe(false);
    // The private tmp is not the host's /tmp, and it is removed with the run (the afterEach checks the state directory).
    expect(existsSync(join('/tmp', tmpName))).toBe(false);
    // Its own pid namespace: the probe sees itself as a low pid below bubblewrap's init.
    expect(report['pidNamespace']).toBeLessThan(10);
  });

  it('{ writable, network: true }: the paths given are writable, and the host network (its loopback) is reached', async () => {
    const extra = tempDir('subvisor-sandbox-writable-');
    const { report } = await probe({ writable: [extra], network: true });
    expect(report).toMatchObject({ cwd: 'ok', outside: 'EROFS', loopback: 'connected' });
    const { report: allowed, outside } = await probeWritable(extra);
    expect(allowed['outside']).toBe('ok');
    expect(readFileSync(outside, 'utf8')).toBe('probe');
  });

  it('runs the Fen fake child: its control and event files, a long answer through final-text-path in the private tmp', async () => {
    const child = fake(fakeChild({ turns: [{ steps: [{ tool: 'read', result: 'ok', durationMs: 20 }], answer: { repeat: 'sandboxed answer ', bytes: 200_000 } }] }, SANDBOXED_CHILD));
    const run = start({ command: child.command, args: child.args, env: child.env, task: 'go', sandbox: true });
    const outcome = await finished(run);
    expect(outcome, outcome.outputTail).toMatchObject({ status: 'done', truncated: false, turns: 1 });
    expect(outcome.finalText?.length).toBeGreaterThan(190_000);
    expect(outcome.finalTextFileRefusal).toBeUndefined();
  });

  it('cancel of a HEP child reaches the agent below the wrappers (SIGINT), which exits 130 by itself', async () => {
    const fa = fake(fakeFa({ rounds: [{ steps: [{ text: 'working' }, { pause: 60_000 }] }] }, { transcript: false }));
    const run = start({ protocol: 'hep', command: fa.command, args: fa.args, env: fa.env, task: 'go', sandbox: true });
    await eventOf(run, (event) => event.type === 'assistant-text-delta' || event.type === 'assistant-text');
    expect((await run.cancel()).status).not.toBe('rejected');
    const outcome = await finished(run);
    // bubblewrap passes the agent's own exit code on: HEP's 130 (cancelled), not a signal of the wrapper.
    expect(outcome).toMatchObject({ status: 'cancelled', exitCode: 130 });
  });

  it("the ladder's SIGTERM reaches the agent, not bubblewrap: the agent has its grace to leave by itself", async () => {
    // bubblewrap forwards no signal and dies of SIGTERM, taking the namespace with it (SIGKILL): were the group
    // signalled, the agent would never print its second line.
    const graceful = "process.on('SIGTERM', () => { process.stdout.write('got SIGTERM\\n'); setTimeout(() => { process.stdout.write('left by itself\\n'); process.exit(0); }, 300); }); process.stdout.write('waiting\\n'); setInterval(() => {}, 1000);";
    const run = start({ command: process.execPath, args: ['-e', graceful], sandbox: true, killGraceMs: 5000 });
    await new Promise<void>((resolve) => run.on('output', (text) => text.includes('waiting') && resolve()));
    void run.terminate();
    const outcome = await finished(run);
    expect(outcome.outputTail).toContain('got SIGTERM');
    expect(outcome.outputTail).toContain('left by itself');
    expect(outcome).toMatchObject({ status: 'cancelled', exitCode: 0, killed: true, escalated: false });
  });

  it('the kill ladder kills the whole tree: grandchildren that ignore SIGTERM, in their own session included', async () => {
    const child = fake(
      fakeChild({ turns: [{ steps: [{ misbehave: [{ grandchildren: { count: 1, session: false } }, { grandchildren: { count: 1, session: true } }] }, { pause: 60_000 }] }] }, SANDBOXED_CHILD),
    );
    const run = start({ command: child.command, args: child.args, env: child.env, task: 'go', sandbox: true });
    let infos = 0;
    await eventOf(run, (event) => grandchildPidOf(event) !== undefined && ++infos === 2);
    expect(liveFakeProcesses(child.token).length).toBeGreaterThanOrEqual(3);
    const outcome = await run.terminate();
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    expect(await waitUntilGone(() => liveFakeProcesses(child.token), 5000)).toEqual([]);
  });

  it('a parent killed with SIGKILL leaves nothing of a sandboxed tree, nor its private tmp', async () => {
    const stateDir = runs.remove(freshStateDir());
    const parent = spawn(process.execPath, [join(helpers, 'sandbox-parent.mjs'), stateDir, tempDir('subvisor-sandbox-cwd-')], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    parent.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A parent that never got its run going is not left behind when the test fails.
    onTestFinished(() => void parent.kill('SIGKILL'));
    const ready = await new Promise<{ pid: number; token: string }>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`no READY: ${stderr}`)), BOUND_MS);
      parent.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = out.split('\n').find((text) => text.startsWith('READY '));
        if (line === undefined) return;
        clearTimeout(timer);
        resolve(JSON.parse(line.slice(6)) as { pid: number; token: string });
      });
    });
    expect(liveFakeProcesses(ready.token).length).toBeGreaterThanOrEqual(3);
    expect(readdirSync(stateDir).some((name) => name.startsWith('subvisor-sandbox-'))).toBe(true);
    parent.kill('SIGKILL');
    expect(await waitUntilGone(() => [...liveFakeProcesses(ready.token), ...(isAlive(ready.pid) ? [ready.pid] : [])], 10_000)).toEqual([]);
    // The watchdog's reaper removes the run's files and the sandbox's private tmp once the tree is gone.
    const deadline = Date.now() + BOUND_MS;
    while (readdirSync(stateDir).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readdirSync(stateDir), 'the run directory and the private tmp, removed by the watchdog').toEqual([]);
  });

  it("subvisor's own package stays readable when it lies under the host's /tmp (the private tmp hides the rest), before the writable paths", () => {
    const cwd = tempDir('subvisor-sandbox-cwd-');
    const underTmp = mkdtempSync('/tmp/subvisor-readable-');
    onTestFinished(() => rmSync(underTmp, { recursive: true, force: true }));
    const confined = confine(process.execPath, ['-e', ''], { PATH: process.env['PATH'] ?? '' }, cwd, undefined, {
      writable: [cwd],
      network: false,
      readable: [underTmp, '/usr', '/nonexistent/subvisor'],
      scratchParent: tempDir('subvisor-sandbox-state-'),
    });
    onTestFinished(() => removeScratch(confined.scratchDir!));
    const args = confined.args.join(' ');
    // A path outside /tmp is visible anyway (not bound again); one that does not exist is left out.
    expect(args).not.toContain('--ro-bind /usr /usr');
    expect(args).not.toContain('/nonexistent/subvisor');
    const readable = args.indexOf(`--ro-bind ${underTmp} ${underTmp}`);
    expect(readable).toBeGreaterThan(args.indexOf(`--bind ${confined.scratchDir} /tmp`));
    expect(readable).toBeLessThan(args.indexOf(`--bind ${realpathSync(cwd)} ${realpathSync(cwd)}`));
  });

  it('without bwrap on the PATH the run never starts: spawn-failed, naming the install, nothing left', async () => {
    const run = start({ command: process.execPath, args: ['-e', ''], env: { PATH: '/nonexistent' }, sandbox: true });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'spawn-failed', spawnFailed: true });
    expect(outcome.error).toMatch(/bubblewrap \(bwrap\).*apt-get install bubblewrap.*not started unsandboxed/);
  });

  it('refuses what it cannot hold: a durable run, mew without network, a writable path that does not exist, unknown keys', async () => {
    expect(() => spawnRun({ command: 'fen', runId: 'd1', durable: {}, sandbox: true })).toThrow(/does not apply to a durable run/);
    expect(() => spawnRun({ protocol: 'mew', command: 'mew', url: 'ws://127.0.0.1:9', sandbox: true })).toThrow(/network: true/);
    expect(() => spawnRun({ command: 'fen', sandbox: { net: true } as never })).toThrow(/sandbox.net is not a sandbox option/);
    const run = start({ command: process.execPath, args: ['-e', ''], sandbox: { writable: ['/nonexistent/subvisor'] } });
    expect(await run.outcome).toMatchObject({ errorCode: 'spawn-failed', error: expect.stringContaining('/nonexistent/subvisor') });
  });

  it("mew's daemon in a sandbox with network: true is started, reached and reaped", async () => {
    const port = await freePort();
    const args = [builtScript('fake-mew.js'), 'daemon', '--port', `127.0.0.1:${port}`, '--scenario', 'chat'];
    const run = start({ protocol: 'mew', command: process.execPath, args, url: `ws://127.0.0.1:${port}`, task: 'go', sandbox: { network: true } });
    expect(await finished(run)).toMatchObject({ status: 'done', finalText: 'The README describes subvisor.' });
  });
});

/** The probe run with `writable` as its only extra path, writing its "outside" file there. */
async function probeWritable(writable: string): Promise<{ report: Record<string, unknown>; outside: string }> {
  const outside = join(writable, 'allowed.txt');
  const run = start({ command: process.execPath, args: [join(helpers, 'sandbox-probe.mjs'), String(await listen()), outside, 'x.txt'], sandbox: { writable: [writable] } });
  const outcome = await finished(run);
  const line = outcome.outputTail.split('\n').find((text) => text.startsWith('{'));
  return { report: JSON.parse(line!) as Record<string, unknown>, outside };
}
