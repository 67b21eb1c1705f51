// After connectRun's outcome nothing of the run stays open: a child Node process runs every kind of ending and reports its active resources.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../..', import.meta.url));

/** Runs in a fresh process: each fault against the fake daemon, then the daemon closes; what is still open is printed. */
const SCRIPT = `
import { connectRun } from ${JSON.stringify(`${root}dist/index.js`)};
import { fakeFuseraftServe } from ${JSON.stringify(`${root}dist/testing/index.js`)};
const cases = [
  ['echo', {}],
  [{ misbehave: ['drop-mid-turn'] }, {}],
  [{ misbehave: ['drop-mid-turn'] }, { clientId: 'c1' }],
  [{ tasks: [{ hang: true }], misbehave: ['no-pong'] }, { pingIntervalMs: 50, pongTimeoutMs: 200 }],
  [{ misbehave: ['malformed', 'unknown-type'] }, {}],
  [{ misbehave: ['silent'] }, { readyTimeoutMs: 200 }],
  ['hang', { timeoutMs: 1000 }],
  ['hang', { killGraceMs: 100, terminate: true }],
  ['echo', { unix: true }],
];
const endings = [];
for (const [scenario, extra] of cases) {
  const { terminate, unix, ...options } = extra;
  const daemon = await fakeFuseraftServe(scenario, unix ? { unixSocket: true } : {});
  const where = unix ? { socketPath: daemon.socketPath } : { url: daemon.url };
  const run = connectRun({ protocol: 'fuseraft-serve', ...where, task: 'x', ...options });
  if (terminate) setTimeout(() => void run.terminate(), 300);
  const outcome = await run.outcome;
  endings.push(outcome.errorCode ?? outcome.status);
  const until = Date.now() + 5000;
  while (daemon.connections > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
  endings.push('open:' + daemon.connections);
  await daemon.close();
}
const refused = await connectRun({ protocol: 'fuseraft-serve', url: 'ws://127.0.0.1:1/attach', task: 'x' }).outcome;
endings.push(refused.errorCode);
await new Promise((resolve) => setImmediate(resolve));
console.log(JSON.stringify({ endings, resources: process.getActiveResourcesInfo() }));
`;

describe('connectRun leaves nothing open', () => {
  it('every ending releases its socket and timers: the process has no handle left and exits by itself', async () => {
    const { stdout, code } = await new Promise<{ stdout: string; code: number | null }>((resolve) => {
      const child = execFile(process.execPath, ['--input-type=module', '-e', SCRIPT], { timeout: 60_000 }, (error, out) =>
        resolve({ stdout: out, code: error === null ? 0 : ((error as { code?: number }).code ?? null) }),
      );
      child.stdin?.end();
    });
    expect(code).toBe(0);
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as { endings: string[]; resources: string[] };
    expect(report.endings).toEqual([
      'done', 'open:0',
      'connection-lost', 'open:0',
      'done', 'open:0',
      'no-pong', 'open:0',
      'done', 'open:0',
      'ready-timeout', 'open:0',
      'deadline', 'open:0',
      'aborted', 'open:0',
      'done', 'open:0',
      'connection-refused',
    ]);
    // Only the process's own stdio may remain: no TCP/pipe socket, no timer.
    expect(report.resources.filter((name) => !['TTYWrap', 'PipeWrap'].includes(name) || false)).toEqual([]);
  });
});
