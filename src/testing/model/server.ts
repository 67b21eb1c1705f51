// fakeModel(): a scripted model on 127.0.0.1 that real agents talk to (Anthropic Messages, OpenAI Responses, Gemini);
// it routes each request to its API, answers it from the script or a built-in rule, records it, and leaves nothing
// running after close().
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { agentSetup } from './agent-setup.js';
import { anthropic } from './anthropic.js';
import { isObject, latestInput, userTextsOf } from './conversation.js';
import type { Dialect, ReadRequest } from './dialect.js';
import { gemini } from './gemini.js';
import { checkOptions, checkTurn, errorMessage, planTurn } from './options.js';
import { playStream } from './paced-stream.js';
import { responses } from './responses.js';
import type { AgentSetup, FakeModel, FakeModelOptions, ModelRequest, ModelTurn } from './types.js';

const DIALECTS: readonly Dialect[] = [anthropic, responses, gemini];

/** Tool call ids in each API's own style. */
const CALL_ID_PREFIX = { anthropic: 'toolu_fake_', responses: 'call_fake_', gemini: 'call_fake_' } as const;

class Refusal {
  constructor(
    readonly status: number,
    readonly reason: string,
  ) {}
}

/** Reads the whole body, bounded, decoded from its content-encoding. */
function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(new Refusal(413, `the body is larger than maxBodyBytes (${maxBytes})`));
        request.resume();
        return;
      }
      chunks.push(chunk);
    });
    request.on('error', reject);
    request.on('end', () => {
      const raw = Buffer.concat(chunks);
      const encoding = (request.headers['content-encoding'] ?? 'identity').toLowerCase();
      if (encoding === 'identity') return resolve(raw);
      const decode = ({ gzip: gunzipSync, deflate: inflateSync, br: brotliDecompressSync } as Record<string, typeof gunzipSync | undefined>)[encoding];
      if (decode === undefined) return reject(new Refusal(415, `content-encoding ${encoding} is not supported (identity, gzip, deflate, br are)`));
      try {
        resolve(decode(raw, { maxOutputLength: maxBytes }));
      } catch (error) {
        reject(new Refusal(400, `the ${encoding} body does not decode: ${(error as Error).message}`));
      }
    });
  });
}

/**
 * Starts a scripted model on 127.0.0.1 (a free port). Every agent pointed at it (see `setup()`) gets its turns from
 * `options.turns`, streamed in its own API; every request is recorded.
 */
export async function fakeModel(options: FakeModelOptions): Promise<FakeModel> {
  const settings = checkOptions(options);
  const requests: ModelRequest[] = [];
  const setups: AgentSetup[] = [];
  const waiters = new Set<{ matches: (request: ModelRequest) => boolean; resolve: (request: ModelRequest) => void; reject: (error: Error) => void; timer: NodeJS.Timeout }>();
  let turnsAnswered = 0;
  let ids = 0;
  let closing: Promise<void> | undefined;
  /** Answers still being written (or hanging): close() waits for each to end. */
  const liveAnswers = new Set<Promise<void>>();

  const record = (request: ModelRequest): ModelRequest => {
    requests.push(request);
    for (const waiter of waiters) {
      if (!waiter.matches(request)) continue;
      waiters.delete(waiter);
      clearTimeout(waiter.timer);
      waiter.resolve(request);
    }
    return request;
  };

  /** The scripted turn for the next turn request (a turn with `times` answers that many): a turn, or why there is none. */
  let cursor = { index: 0, used: 0 };
  const nextTurn = (request: ModelRequest): { index: number; turn: ModelTurn } | string => {
    const script = settings.turns;
    if (typeof script === 'function') return resolve(turnsAnswered++, script, request);
    const { index } = cursor;
    const entry = script[index];
    if (entry === undefined) return `the script has no turn ${index} (it has ${script.length}; ${turnsAnswered} turn requests came)`;
    turnsAnswered++;
    const times = typeof entry === 'function' ? 1 : (entry.times ?? 1);
    cursor = ++cursor.used >= times ? { index: index + 1, used: 0 } : cursor;
    return typeof entry === 'function' ? resolve(index, entry, request) : { index, turn: entry };
  };
  const resolve = (index: number, script: (request: ModelRequest) => ModelTurn, request: ModelRequest): { index: number; turn: ModelTurn } | string => {
    try {
      const turn = script(request);
      checkTurn(turn, `turn ${index} (returned by a function)`);
      return { index, turn };
    } catch (error) {
      return `turn ${index}: ${(error as Error).message}`;
    }
  };

  const answerJson = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(body));
  };

  const handle = async (incoming: IncomingMessage, response: ServerResponse): Promise<void> => {
    const method = incoming.method ?? 'GET';
    const path = incoming.url ?? '/';
    const base = { seq: requests.length + 1, receivedAt: Date.now(), method, path, stream: false, userTexts: [], latestTexts: [], toolResults: [], tools: [] };
    const pathname = path.split('?')[0];
    // Claude Code's connectivity probe (without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).
    if (pathname === '/api/hello' && (method === 'HEAD' || method === 'GET')) {
      record({ ...base, api: 'anthropic', kind: 'side', status: 200, body: undefined, ended: 'complete' });
      response.writeHead(200).end();
      return;
    }
    const found = DIALECTS.map((dialect) => ({ dialect, endpoint: dialect.endpoint(pathname ?? '') })).find((match) => match.endpoint !== undefined);
    const refuse = (refusal: Refusal, body?: unknown): void => {
      record({ ...base, api: found?.dialect.api, kind: 'rejected', status: refusal.status, reason: refusal.reason, body, ended: 'complete' });
      const message = `fakeModel: ${refusal.reason}`;
      answerJson(response, refusal.status, found === undefined ? { error: { message } } : found.dialect.error(refusal.status, message));
    };
    if (found === undefined) return refuse(new Refusal(404, `${method} ${pathname} is no endpoint of the Anthropic, Responses or Gemini API`));
    if (method !== 'POST') return refuse(new Refusal(405, `${pathname} takes POST, not ${method}`));
    const { dialect, endpoint } = found;
    let bytes: Buffer;
    try {
      bytes = await readBody(incoming, settings.maxBodyBytes);
    } catch (error) {
      return refuse(error instanceof Refusal ? error : new Refusal(400, `the body could not be read: ${(error as Error).message}`));
    }
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString('utf8'));
    } catch (error) {
      return refuse(new Refusal(400, `the body is not JSON: ${(error as Error).message}`));
    }
    if (!isObject(body)) return refuse(new Refusal(400, 'the body is not a JSON object'), body);
    let read: ReadRequest;
    try {
      read = dialect.read(endpoint!, body, path);
    } catch (reason) {
      return refuse(new Refusal(400, typeof reason === 'string' ? reason : String(reason)), body);
    }
    const request = record({
      ...base,
      api: dialect.api,
      kind: read.kind,
      ...(read.model === undefined ? {} : { model: read.model }),
      stream: read.stream,
      ...((texts) => ({ userTexts: texts, ...(texts.length > 0 ? { userText: texts.at(-1) } : {}) }))(userTextsOf(read.entries)),
      latestTexts: latestInput(read.entries).flatMap((entry) => entry.texts),
      toolResults: latestInput(read.entries).flatMap((entry) => entry.toolResults),
      tools: read.tools,
      status: 200,
      body,
    });
    if (read.kind === 'count-tokens') {
      request.ended = 'complete';
      return answerJson(response, 200, dialect.countTokens(Math.max(1, Math.ceil(bytes.length / 4))));
    }
    const fail = (status: number, reason: string, retryAfterSeconds?: number, headers: Record<string, string> = {}): void => {
      Object.assign(request, { status, reason, ended: 'complete' });
      answerJson(response, status, dialect.error(status, reason, retryAfterSeconds), headers);
    };
    let turn: ModelTurn;
    if (read.kind === 'side') {
      turn = { text: dialect.sideText(body) };
    } else {
      const next = nextTurn(request);
      if (typeof next === 'string') {
        request.kind = 'rejected';
        return fail(400, `fakeModel: ${next}`);
      }
      request.turn = next.index;
      turn = next.turn;
    }
    if (turn.error !== undefined && turn.error.inStream !== true) {
      const retryAfter: Record<string, string> = turn.error.retryAfterSeconds === undefined ? {} : { 'retry-after': String(turn.error.retryAfterSeconds) };
      return fail(turn.error.status, errorMessage(turn.error), turn.error.retryAfterSeconds, { ...retryAfter, ...turn.error.headers });
    }
    if (turn.error?.inStream === true && !read.stream) return fail(400, `fakeModel: turn ${request.turn} sends its error in a stream, but the request does not stream`);
    const plan = planTurn(turn, read, settings, { answer: `fake_${++ids}`, call: () => `${CALL_ID_PREFIX[dialect.api]}${++ids}` }, bytes.length);
    if (typeof plan === 'string') return fail(400, `fakeModel: turn ${request.turn}: ${plan}`);
    if (plan.streamError !== undefined) request.reason = plan.streamError.message;
    let settle!: () => void;
    const answered = new Promise<void>((resolve) => (settle = resolve));
    liveAnswers.add(answered);
    const ended = (how: NonNullable<ModelRequest['ended']>): void => {
      request.ended = how === 'client-closed' && closing !== undefined ? 'server-closed' : how;
      liveAnswers.delete(answered);
      settle();
    };
    if (read.stream) {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      playStream(response, dialect.stream(plan), plan.end, ended);
    } else {
      if (plan.end === 'complete') response.writeHead(200, { 'content-type': 'application/json' });
      playStream(response, plan.end === 'complete' ? [{ data: JSON.stringify(dialect.message(plan)), delayMs: plan.delayMs }] : [], plan.end, ended);
    }
  };

  const server = createServer((incoming, response) => {
    handle(incoming, response).catch((error: unknown) => {
      // A bug of fakeModel's own: answered 500 and recorded, never a crash of the test process.
      record({ seq: requests.length + 1, receivedAt: Date.now(), api: undefined, kind: 'rejected', method: incoming.method ?? '', path: incoming.url ?? '', stream: false, userTexts: [], latestTexts: [], toolResults: [], tools: [], status: 500, reason: String(error), body: undefined, ended: 'complete' });
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message: `fakeModel: ${String(error)}` } }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  const close = (): Promise<void> => {
    closing ??= (async () => {
      for (const waiter of waiters) {
        clearTimeout(waiter.timer);
        waiter.reject(new Error('fakeModel was closed before the request it waited for came'));
      }
      waiters.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Hanging answers and idle keep-alive connections end now ('server-closed' on a hanging answer).
      server.closeAllConnections();
      await Promise.all([closed, ...liveAnswers]);
      for (const setup of setups) setup.cleanup();
    })();
    return closing;
  };

  return {
    url,
    port,
    requests,
    get turnRequests() {
      return requests.filter((request) => request.kind === 'turn');
    },
    waitForRequest(matches = (request) => request.kind === 'turn', { timeoutMs = 30_000 } = {}) {
      const seen = requests.find(matches);
      if (seen !== undefined) return Promise.resolve(seen);
      if (closing !== undefined) return Promise.reject(new Error('fakeModel is closed'));
      return new Promise((resolve, reject) => {
        const waiter = {
          matches,
          resolve,
          reject,
          timer: setTimeout(() => {
            waiters.delete(waiter);
            reject(new Error(`fakeModel: no matching request within ${timeoutMs} ms (${requests.length} received)`));
          }, timeoutMs),
        };
        waiters.add(waiter);
      });
    },
    setup(agent, setupOptions) {
      if (closing !== undefined) throw new Error('fakeModel is closed');
      const setup = agentSetup(agent, url, setupOptions);
      setups.push(setup);
      return setup;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
