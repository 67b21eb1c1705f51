// fakeModel as a server: scripted errors (HTTP and in the stream), hangs, cuts, pace, turns that repeat or are
// functions, bad requests answered 4xx and recorded, checked options, agent setups, and close() leaving nothing.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeModel, type FakeModel, type FakeModelOptions } from '../../../src/testing/index.js';
import { send } from '../../helpers/model-client.js';

let model: FakeModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

const start = async (options: FakeModelOptions): Promise<FakeModel> => (model = await fakeModel(options));
const claudeTurn = (text = 'hello', extra: Record<string, unknown> = {}) => ({
  model: 'm',
  stream: true,
  tools: [{ name: 'Bash' }],
  messages: [{ role: 'user', content: text }],
  ...extra,
});
const codexTurn = { model: 'm', stream: true, tools: [{ type: 'function', name: 'exec_command' }], input: [{ role: 'user', content: 'hi' }] };
const geminiTurn = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], tools: [{ functionDeclarations: [{ name: 'run_shell_command' }] }] };
const GEMINI_STREAM = '/v1beta/models/g:streamGenerateContent?alt=sse';

describe('fakeModel: scripted errors', () => {
  it('answers an HTTP error in each API shape, a 429 with retry-after (and Gemini RetryInfo), and records it', async () => {
    const m = await start({ turns: [{ error: { status: 400, message: 'bad one' } }, { error: { status: 429, retryAfterSeconds: 3 } }, { error: { status: 529 } }] });
    const bad = await send(m.url, '/v1/messages', claudeTurn());
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'bad one' } });
    const limited = await send(m.url, '/v1/responses', codexTurn);
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('3');
    expect(JSON.parse(limited.body)).toMatchObject({ error: { message: 'scripted error 429', type: 'rate_limit_exceeded' } });
    const overloaded = await send(m.url, GEMINI_STREAM, geminiTurn);
    expect(overloaded.status).toBe(529);
    expect(JSON.parse(overloaded.body)).toMatchObject({ error: { code: 529, status: 'INTERNAL' } });
    expect(m.requests.map((request) => [request.status, request.reason])).toEqual([
      [400, 'bad one'],
      [429, 'scripted error 429'],
      [529, 'scripted error 529'],
    ]);

    const m2 = await fakeModel({ turns: [{ error: { status: 429, retryAfterSeconds: 2, headers: { 'x-extra': 'yes' } } }] });
    try {
      const gemini = await send(m2.url, GEMINI_STREAM, geminiTurn);
      expect(gemini.headers['x-extra']).toBe('yes');
      expect(JSON.parse(gemini.body)).toMatchObject({
        error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '2s' }] },
      });
    } finally {
      await m2.close();
    }
  });

  it('sends an error inside the stream after the content: Anthropic error event, response.failed, a Gemini error frame', async () => {
    const turn = { text: 'partial', error: { status: 500, message: 'went wrong', inStream: true } };
    const m = await start({ turns: [turn, turn, turn] });
    const claude = await send(m.url, '/v1/messages', claudeTurn());
    expect(claude.status).toBe(200);
    expect(claude.frames.at(-1)).toEqual({ event: 'error', data: { type: 'error', error: { type: 'api_error', message: 'went wrong' } } });
    expect(claude.frames.some((frame) => frame.event === 'message_stop')).toBe(false);
    const codex = await send(m.url, '/v1/responses', codexTurn);
    expect(codex.frames.at(-1)!.data).toMatchObject({ type: 'response.failed', response: { status: 'failed', error: { code: 'server_error', message: 'went wrong' } } });
    const gemini = await send(m.url, GEMINI_STREAM, geminiTurn);
    expect(gemini.frames.at(-1)!.data).toMatchObject({ error: { code: 500, message: 'went wrong' } });
    expect(m.requests.every((request) => request.status === 200 && request.reason === 'went wrong')).toBe(true);
  });

  it('a turn with times answers that many requests; a used-up script answers 400 saying so and is recorded', async () => {
    const m = await start({ turns: [{ error: { status: 500 }, times: 2 }, { text: 'finally' }] });
    expect((await send(m.url, '/v1/messages', claudeTurn())).status).toBe(500);
    expect((await send(m.url, '/v1/messages', claudeTurn())).status).toBe(500);
    expect((await send(m.url, '/v1/messages', claudeTurn())).status).toBe(200);
    const over = await send(m.url, '/v1/messages', claudeTurn());
    expect(over.status).toBe(400);
    expect(over.body).toContain('the script has no turn 2');
    expect(m.requests.map((request) => [request.kind, request.turn])).toEqual([
      ['turn', 0],
      ['turn', 0],
      ['turn', 1],
      ['rejected', undefined],
    ]);
  });

  it('a function turn sees the request; a function that throws or returns a bad turn is a 400 with the reason', async () => {
    const m = await start({
      turns: [
        (request) => ({ text: `You said: ${request.userText}` }),
        () => {
          throw new Error('script bug');
        },
        () => ({ txt: 'typo' }) as never,
      ],
    });
    const echo = await send(m.url, '/v1/messages', claudeTurn('ping'));
    expect(echo.frames.filter((frame) => frame.event === 'content_block_delta').map((frame) => (frame.data['delta'] as { text: string }).text).join('')).toBe('You said: ping');
    const thrown = await send(m.url, '/v1/messages', claudeTurn());
    expect([thrown.status, m.requests[1]!.reason]).toEqual([400, 'fakeModel: turn 1: script bug']);
    const typo = await send(m.url, '/v1/messages', claudeTurn());
    expect(typo.status).toBe(400);
    expect(m.requests[2]!.reason).toMatch(/txt is not a field of a turn; did you mean text\?/);

    const whole = await fakeModel({ turns: (request) => ({ text: `turn for ${request.api}` }) });
    try {
      const answer = await send(whole.url, '/v1/responses', codexTurn);
      expect(answer.frames.find((frame) => frame.data['type'] === 'response.output_text.done')!.data['text']).toBe('turn for responses');
      expect(whole.requests[0]!.turn).toBe(0);
    } finally {
      await whole.close();
    }
  });

  it('a shell call on a request that offers no shell tool is a 400 naming the tools offered', async () => {
    const m = await start({ turns: [{ shell: 'ls' }] });
    const answer = await send(m.url, '/v1/messages', { ...claudeTurn(), tools: [{ name: 'Read' }] });
    expect(answer.status).toBe(400);
    expect(m.requests[0]!.reason).toMatch(/offers none of Bash, exec_command.* \(it offers Read\)/);
  });
});

describe('fakeModel: hang, cut, pace', () => {
  it('a hanging stream stays open until the client goes (recorded client-closed), leaving no timer', async () => {
    const m = await start({ turns: [{ text: 'partial', hang: true }] });
    const controller = new AbortController();
    let received = '';
    const answer = send(m.url, '/v1/messages', claudeTurn(), { signal: controller.signal, onData: (chunk) => (received += chunk) });
    const request = await m.waitForRequest();
    await expect.poll(() => received).toContain('partial');
    expect(request.ended).toBeUndefined();
    controller.abort();
    await expect(answer).rejects.toThrow();
    await expect.poll(() => request.ended).toBe('client-closed');
    expect(received).not.toContain('message_stop');
  });

  it('close() ends a hanging stream (server-closed) and the client sees the body end early', async () => {
    const m = await start({ turns: [{ text: 'partial', hang: true }] });
    let received = '';
    const answer = send(m.url, GEMINI_STREAM, geminiTurn, { onData: (chunk) => (received += chunk) });
    const request = await m.waitForRequest();
    await expect.poll(() => received).toContain('partial');
    await m.close();
    const ended = await answer;
    expect(ended.error).toBeDefined();
    expect(request.ended).toBe('server-closed');
  });

  it('a cut stream delivers what was written, then the connection ends without the end of the message', async () => {
    const m = await start({ turns: [{ text: 'before the cut', cut: true }] });
    const answer = await send(m.url, '/v1/responses', codexTurn);
    expect(answer.error).toBeDefined();
    expect(answer.frames.some((frame) => frame.data['type'] === 'response.output_text.delta')).toBe(true);
    expect(answer.frames.some((frame) => frame.data['type'] === 'response.completed')).toBe(false);
    expect(m.requests[0]!.ended).toBe('cut');
  });

  it('delayMs spaces the pieces: the first arrives at least two delays before the end', async () => {
    const m = await start({ turns: [{ text: ['one ', 'two ', 'three'], delayMs: 150 }] });
    const arrivals: number[] = [];
    const answer = await send(m.url, '/v1/messages', claudeTurn(), { onData: (chunk) => chunk.includes('text_delta') && arrivals.push(Date.now()) });
    expect(answer.status).toBe(200);
    // Timers never fire early: a lower bound only.
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(2 * 150 - 5);
  });
});

describe('fakeModel: bad requests are answered 4xx, recorded, and never stop it', () => {
  it('bad JSON, an unknown path, a wrong method, a too-large or undecodable body; a gzip body is read', async () => {
    const m = await start({ turns: [{ text: 'still here' }], maxBodyBytes: 1000 });
    const answers = [
      await send(m.url, '/v1/messages', '{not json'),
      await send(m.url, '/v2/whatever', {}),
      await send(m.url, '/v1/messages', undefined, { method: 'GET' }),
      await send(m.url, '/v1/messages', { messages: [], pad: 'x'.repeat(2000) }),
      await send(m.url, '/v1/messages', 'abc', { headers: { 'content-encoding': 'zstd' } }),
      await send(m.url, '/v1/messages', '[1,2]'),
      await send(m.url, '/v1/messages', { model: 'no messages' }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([400, 404, 405, 413, 415, 400, 400]);
    expect(m.requests.every((request) => request.kind === 'rejected' && request.reason !== undefined)).toBe(true);
    expect(m.requests.map((request) => request.reason)).toEqual([
      expect.stringContaining('not JSON'),
      expect.stringContaining('is no endpoint'),
      'POST /v1/messages takes POST, not GET'.replace('POST /v1/messages takes', '/v1/messages takes'),
      expect.stringContaining('maxBodyBytes'),
      expect.stringContaining('zstd is not supported'),
      'the body is not a JSON object',
      'the body has no messages array',
    ]);
    const zipped = await send(m.url, '/v1/messages', gzipSync(JSON.stringify(claudeTurn('zipped'))), { headers: { 'content-encoding': 'gzip' } });
    expect(zipped.status).toBe(200);
    expect(m.requests.at(-1)).toMatchObject({ kind: 'turn', userText: 'zipped' });
  });
});

describe('fakeModel: options and setups', () => {
  it('refuses unknown or wrong options and turns, naming the one meant', async () => {
    await expect(fakeModel({ turns: [], delay: 5 } as never)).rejects.toThrow('options.delay is not an option of fakeModel; did you mean delayMs?');
    await expect(fakeModel({} as never)).rejects.toThrow(/options.turns must be/);
    await expect(fakeModel({ turns: [{ text: 'x', hang: true, cut: true }] })).rejects.toThrow('options.turns[0] cannot both hang and cut');
    await expect(fakeModel({ turns: [{ text: 'x', error: { status: 400 } }] })).rejects.toThrow(/an HTTP error is answered instead of the turn/);
    await expect(fakeModel({ turns: [{ error: { status: 200 } }] })).rejects.toThrow(/HTTP error status/);
    await expect(fakeModel({ turns: [{ error: { status: 500, retryAfter: 2 } as never }] })).rejects.toThrow(/did you mean retryAfterSeconds\?/);
    await expect(fakeModel({ turns: [{ times: 0 }] })).rejects.toThrow(/times must be an integer >= 1/);
  });

  it('setup() writes each agent its config under a private HOME that close() removes; a caller HOME stays', async () => {
    const m = await start({ turns: [] });
    const claude = m.setup('claude-code');
    expect(claude.env).toMatchObject({
      ANTHROPIC_BASE_URL: m.url,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      HOME: claude.home,
      TMPDIR: join(claude.home, 'tmp'),
      ANTHROPIC_AUTH_TOKEN: undefined,
    });
    expect('ANTHROPIC_AUTH_TOKEN' in claude.env).toBe(true);
    const codex = m.setup('codex');
    const config = readFileSync(join(codex.home, '.codex', 'config.toml'), 'utf8');
    expect(config).toContain(`base_url = "${m.url}/v1"`);
    expect(config).toContain('wire_api = "responses"');
    expect(codex.env['CODEX_HOME']).toBe(join(codex.home, '.codex'));
    const gemini = m.setup('gemini', { env: { EXTRA: '1' } });
    expect(gemini.env).toMatchObject({ GOOGLE_GEMINI_BASE_URL: m.url, GEMINI_API_KEY: expect.any(String), EXTRA: '1' });
    expect(JSON.parse(readFileSync(gemini.files[0]!, 'utf8'))).toMatchObject({ telemetry: { enabled: false } });
    const own = mkdtempSync(join(tmpdir(), 'caller-home-'));
    try {
      m.setup('claude-code', { home: own });
      expect(() => m.setup('claude_code' as never)).toThrow('fakeModel.setup: claude_code is not an agent fakeModel sets up; did you mean claude-code?');
      expect(() => m.setup('codex', { hme: own } as never)).toThrow('fakeModel.setup: options.hme is not an option; did you mean home?');
      await m.close();
      expect([claude.home, codex.home, gemini.home].map(existsSync)).toEqual([false, false, false]);
      expect(existsSync(join(own, 'tmp'))).toBe(true);
      expect(() => m.setup('codex')).toThrow('fakeModel is closed');
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });

  it('close() leaves no server, socket or timer, rejects a waiting waitForRequest, and is idempotent', async () => {
    // What this test adds to the process: the handles (servers, sockets, timers) beyond those there before it.
    const resources = () => process.getActiveResourcesInfo().filter((name) => /TCP|Timeout|Shutdown/.test(name));
    const added = (before: string[]) => {
      const left = [...before];
      return resources().filter((name) => {
        const index = left.indexOf(name);
        if (index === -1) return true;
        left.splice(index, 1);
        return false;
      });
    };
    const before = resources();
    const m = await fakeModel({ turns: [{ text: 'slow', hang: true, delayMs: 50 }] });
    const waiting = m.waitForRequest((request) => request.userText === 'never comes', { timeoutMs: 60_000 });
    let received = '';
    const hanging = send(m.url, '/v1/messages', claudeTurn(), { onData: (chunk) => (received += chunk) });
    await expect.poll(() => received).toContain('slow');
    expect(added(before).length).toBeGreaterThan(0);
    // The handler is on before close() rejects the wait, or the rejection is unhandled while the server closes.
    const waitRejected = expect(waiting).rejects.toThrow('fakeModel was closed');
    await Promise.all([m.close(), m.close()]);
    await waitRejected;
    expect((await hanging).error).toBeDefined();
    await expect.poll(() => added(before)).toEqual([]);
    await expect(m.waitForRequest()).resolves.toMatchObject({ ended: 'server-closed' });
    await expect(m.waitForRequest(() => false)).rejects.toThrow('fakeModel is closed');
  });

  it('waitForRequest rejects after its timeout with what it received', async () => {
    const m = await start({ turns: [] });
    await expect(m.waitForRequest(undefined, { timeoutMs: 50 })).rejects.toThrow('no matching request within 50 ms (0 received)');
  });
});
