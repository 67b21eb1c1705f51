// The dashboard's server over a pool of in-memory runs: its token, Host and origin checks, its feeds, the runs' own acknowledged controls, nothing secret, and a clean close.
import { afterEach, describe, expect, it } from 'vitest';
import { createSupervisor } from '../../../src/index.js';
import type { Dashboard, Run, RunOptions, Supervisor } from '../../../src/index.js';
import { createInMemoryRun } from '../../../src/testing/index.js';
import type { InMemoryChild } from '../../../src/testing/index.js';
import { call, control, readEvents } from '../../helpers/dashboard-client.js';
import { play } from '../../helpers/memory-children.js';
import { manualClock, memoryStart } from '../../helpers/in-memory-pool.js';

const SECRET = 'sk-very-secret-0123456789';

/** A pool whose runs are in-memory children: a task starting with `hold` stays mid-turn until cancelled. */
function memoryPool(concurrency = 4): Supervisor {
  return createSupervisor({
    concurrency,
    // Environment the page must never show.
    defaults: { env: { API_KEY: SECRET }, killGraceMs: 50 },
    start: (options: RunOptions): Run => {
      const { command: _command, args: _args, protocol: _protocol, ...rest } = options;
      const { run, child } = createInMemoryRun(rest);
      play(child, options.task?.startsWith('hold') === true ? 'hold' : 'done');
      return run;
    },
  });
}

let sup: Supervisor | undefined;
let dash: Dashboard | undefined;
afterEach(async () => {
  await dash?.close();
  await sup?.shutdown({ mode: 'kill' });
  dash = undefined;
  sup = undefined;
});

describe('access', () => {
  it('refuses every request without the token, with a wrong one, or with another Host; takes it from the URL, a header or the cookie', async () => {
    sup = memoryPool();
    dash = await sup.serveDashboard();
    expect(dash.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/);
    const token = new URL(dash.url).searchParams.get('token')!;
    for (const path of ['/', '/app.js', '/api/board', '/api/stream', '/api/runs/x']) {
      expect((await call(dash.url, path, { token: null })).status).toBe(401);
      // One character changed (never to itself).
      expect((await call(dash.url, path, { token: `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}` })).status).toBe(401);
    }
    // DNS rebinding: a page of another site that resolves its name to 127.0.0.1 is refused whatever it carries.
    expect((await call(dash.url, '/api/board', { headers: { host: `evil.example:${dash.port}` } })).status).toBe(403);

    const page = await call(dash.url, `/?token=${token}`, { token: null });
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    const cookie = String(page.headers['set-cookie']);
    expect(cookie).toMatch(/HttpOnly; SameSite=Strict/);
    // The page itself holds no token: it runs on the cookie.
    expect(page.body).not.toContain(token);
    expect((await call(dash.url, '/api/board', { token: null, headers: { cookie: cookie.split(';')[0]! } })).status).toBe(200);
    expect((await call(dash.url, `/api/board?token=${token}`, { token: null })).status).toBe(200);
  });

  it('binds to loopback, and refuses another address unless asked', async () => {
    sup = memoryPool();
    await expect(sup.serveDashboard({ host: '0.0.0.0' })).rejects.toThrow(/not a loopback address.*allowRemote: true/);
    await expect(sup.serveDashboard({ token: 'short' })).rejects.toThrow(/at least 16 characters/);
    await expect(sup.serveDashboard({ port: 70000 })).rejects.toThrow(/port/);
  });
});

describe('feeds and controls', () => {
  it("streams the rows, a run's events and its answer; never the environment", async () => {
    sup = memoryPool();
    dash = await sup.serveDashboard({ title: 'review <b>pool</b>' });
    const board = readEvents(dash.url, '/api/stream');
    await board.waitFor((event) => event.event === 'snapshot');
    const run = sup.spawn({ task: 'What is <img src=x onerror=alert(1)>?' });
    await run.outcome;
    const done = await board.waitFor((event) => event.event === 'rows' && (event.data as { rows: Array<{ id: string; status: string | null }> }).rows.some((row) => row.id === run.id && row.status === 'done'));
    const row = (done.data as { rows: Array<Record<string, unknown>> }).rows.find((candidate) => candidate['id'] === run.id)!;
    expect(row).toMatchObject({ label: 'fen', task: 'What is <img src=x onerror=alert(1)>?', turns: 1, inputTokens: 120, outputTokens: 30, costUsd: 0.25, state: 'done' });
    board.close();

    const detail = JSON.parse((await call(dash.url, `/api/runs/${run.id}`)).body) as { events: Array<{ type: string }>; answer: string; outcome: { status: string } };
    expect(detail.answer).toBe('The answer is 42.');
    expect(detail.outcome.status).toBe('done');
    expect(detail.events.map((event) => event.type)).toEqual(expect.arrayContaining(['tool-call', 'assistant-text-delta', 'exit']));
    const snapshot = await call(dash.url, '/api/board');
    expect(JSON.parse(snapshot.body)).toMatchObject({ title: 'review <b>pool</b>', kind: 'pool', counts: { done: 1 } });
    for (const body of [snapshot.body, JSON.stringify(detail)]) expect(body).not.toContain(SECRET);
    expect((await call(dash.url, '/api/runs/no-such-run')).status).toBe(404);
    expect((await call(dash.url, '/api/runs/%E0%A4%A')).status).toBe(400);
  });

  it("sends the page's controls to the run and answers with its ack; refuses them from anywhere else", async () => {
    sup = memoryPool();
    dash = await sup.serveDashboard();
    const run = sup.spawn({ task: 'hold on' });
    await new Promise<void>((resolve) => run.on('event', (event) => event.type === 'assistant-text-delta' && resolve()));
    const stream = readEvents(dash.url, `/api/runs/${run.id}/stream`);
    await stream.waitFor((event) => event.event === 'detail');

    // A form post (no preflight) or another origin cannot send a control.
    const path = `/api/runs/${run.id}/cancel`;
    expect((await call(dash.url, path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'x=1' })).status).toBe(403);
    expect((await call(dash.url, path, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'http://evil.example' }, body: '{}' })).status).toBe(403);
    expect((await control(dash.url, run.id, 'steer', { text: 42 })).status).toBe(400);
    expect(run.ended).toBe(false);

    const steer = await control(dash.url, run.id, 'steer', { text: 'look at the tests first' });
    expect(JSON.parse(steer.body)).toMatchObject({ ack: { status: 'accepted' } });
    const cancel = await control(dash.url, run.id, 'cancel');
    expect(JSON.parse(cancel.body)).toMatchObject({ ack: { status: 'accepted' } });
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'cancelled', errorCode: 'aborted' });
    const update = await stream.waitFor((event) => event.event === 'update' && (event.data as { outcome?: unknown }).outcome !== undefined);
    expect(update.data).toMatchObject({ outcome: { status: 'cancelled', errorCode: 'aborted' } });
    // A control on an ended run is the API's own answer.
    expect(JSON.parse((await control(dash.url, run.id, 'cancel')).body)).toMatchObject({ ack: { status: 'unanswered', runEnded: true } });
    expect((await control(dash.url, run.id, 'steer', { text: 'too late' })).status).toBe(409);
    stream.close();
  });

  it('cuts off a page that does not read, rather than buffer for it', async () => {
    let child!: InMemoryChild;
    sup = createSupervisor({
      concurrency: 1,
      start: (options: RunOptions): Run => {
        const { command: _command, args: _args, protocol: _protocol, ...rest } = options;
        const memory = createInMemoryRun(rest);
        child = memory.child;
        child.ready();
        return memory.run;
      },
    });
    dash = await sup.serveDashboard();
    const run = sup.spawn({ keepAlive: true });
    await new Promise<void>((resolve) => (run.state === 'ready' ? resolve() : run.on('state', (state) => state === 'ready' && resolve())));
    const base = new URL(dash.url);
    const { request } = await import('node:http');
    let received = 0;
    let resume!: () => void;
    let responded!: () => void;
    const streaming = new Promise<void>((resolve) => (responded = resolve));
    const ended = new Promise<void>((resolve) => {
      const path = `/api/runs/${run.id}/stream`;
      const req = request({ host: base.hostname, port: base.port, path, agent: false, headers: { authorization: `Bearer ${base.searchParams.get('token')}` } }, (response) => {
        // Read nothing until the server has written far more than it keeps waiting for a reader.
        response.pause();
        resume = () => {
          response.on('data', (chunk: Buffer) => (received += chunk.length));
          response.on('end', resolve);
          response.resume();
        };
        responded();
      });
      req.end();
    });
    await streaming;
    const sent = 'x'.repeat(4000);
    child.turnStarted();
    for (let batch = 0; batch < 20; batch++) {
      for (let index = 0; index < 100; index++) child.text(sent);
      // The board sends its changes every 150 ms: let it write them.
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    resume();
    await ended;
    // 8 MB of text went by (16 MB of JSON); the page got its first part and the end of its stream (its browser reconnects).
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(8 * 1024 * 1024);
    await run.terminate();
  });

  it('keeps at most maxRuns ended runs', async () => {
    sup = memoryPool(1);
    dash = await sup.serveDashboard({ maxRuns: 2 });
    const runs = [0, 1, 2, 3].map((index) => sup!.spawn({ task: `task ${index}` }));
    await Promise.all(runs.map((run) => run.outcome));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const rows = (JSON.parse((await call(dash.url, '/api/board')).body) as { rows: Array<{ id: string }> }).rows;
    expect(rows.map((row) => row.id)).toEqual(runs.slice(2).map((run) => run.id));
  });
});

describe('rate limits', () => {
  it("shows a pool's gate that is not open, and takes it away once it opens", async () => {
    const time = manualClock();
    const fake = memoryStart({ script: (task) => (task === 'limit' ? { rateLimit: { status: 'limited', nativeType: 'system/api_retry', httpStatus: 429, retryAfterMs: 4000 } } : {}) });
    sup = createSupervisor({ concurrency: 1, start: fake.start, handleParentSignals: false, clock: time.clock, rateLimit: { rampMs: 100 } });
    dash = await sup.serveDashboard();
    const board = readEvents(dash.url, '/api/stream');
    expect((await board.waitFor((event) => event.event === 'snapshot')).data).toMatchObject({ gates: [] });
    const limiting = sup.spawn({ task: 'limit' });
    await limiting.outcome;
    sup.spawn({ task: 'waits' });
    const shut = await board.waitFor((event) => event.event === 'rows' && (event.data as { gates: Array<{ waiting: number }> }).gates.some((gate) => gate.waiting === 1));
    expect((shut.data as { gates: unknown[] }).gates).toEqual([
      { key: 'default', state: 'shut', until: time.now() + 4000, allowance: null, waiting: 1, reason: `HTTP 429 system/api_retry from run ${limiting.id}` },
    ]);
    expect(JSON.parse((await call(dash.url, '/api/board')).body)).toMatchObject({ gates: [{ key: 'default', state: 'shut' }] });
    time.advance(4000);
    await board.waitFor((event) => event.event === 'rows' && (event.data as { gates: unknown[] }).gates.length === 0);
  });
});

describe('close', () => {
  it('ends every stream and connection, and leaves no handle behind', async () => {
    const handles = () => process.getActiveResourcesInfo().filter((kind) => kind.startsWith('TCP')).length;
    // Earlier tests' connections close asynchronously: let them go first.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = handles();
    sup = memoryPool();
    dash = await sup.serveDashboard();
    const stream = readEvents(dash.url, '/api/stream');
    await stream.waitFor((event) => event.event === 'snapshot');
    // An idle keep-alive connection too.
    await call(dash.url, '/api/board', { headers: { connection: 'keep-alive' } });
    expect(handles()).toBeGreaterThan(before);
    const closing = dash.close();
    await stream.ended;
    await closing;
    await expect(call(dash.url, '/api/board')).rejects.toThrow(/ECONNREFUSED/);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Earlier tests' connections may have gone meanwhile: none of this server's is left.
    expect(handles()).toBeLessThanOrEqual(before);
  });
});
