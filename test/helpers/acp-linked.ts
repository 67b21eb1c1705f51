// The acp driver over linked in-memory stdio, with a recording sink: the test plays a scripted ACP agent (JSON-RPC 2.0
// lines shaped as Gemini CLI 0.61.0 and the ACP v1 schema give them), without a process.
import { resolveOptions } from '../../src/api/spawn-run.js';
import { acpProtocol } from '../../src/drivers/acp/acp-driver.js';
import type { Control, Driver, DriverSink } from '../../src/protocol/driver.js';
import type { RunEvent } from '../../src/protocol/index.js';
import type { RunOptions } from '../../src/index.js';
import { linkedStdio } from '../../src/testing/linked-stdio.js';

export const SESSION = 'e7719638-bac7-4fb7-b4aa-cd7fdaa01a89';

/** What Gemini CLI 0.61.0 answers `initialize` with (its auth methods, capabilities and name). */
export const GEMINI_INIT = {
  protocolVersion: 1,
  authMethods: [{ id: 'oauth-personal', name: 'Log in with Google' }, { id: 'gemini-api-key', name: 'Gemini API key' }],
  agentInfo: { name: 'gemini-cli', title: 'Gemini CLI', version: '0.61.0' },
  agentCapabilities: { loadSession: true, promptCapabilities: { image: true, audio: true, embeddedContext: true }, mcpCapabilities: { http: true, sse: true } },
};

/** One message the driver wrote, parsed. */
export type Written = { jsonrpc?: string; id?: number; method?: string; params?: Record<string, unknown>; result?: unknown; error?: { code: number; message: string } };

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A driver of protocol 'acp' on linked stdio; `log` records every fact in order. */
export function acpLinked(options: Partial<RunOptions> = {}) {
  const log: string[] = [];
  const events: RunEvent[] = [];
  const answers: Array<Promise<{ finalText?: string }>> = [];
  let exit: { status: string; error?: string } | undefined;
  const sink: DriverSink = {
    event: (event) => {
      events.push(event);
      log.push(`event ${event.type}`);
    },
    rejected: (event) => void log.push(`rejected ${event.code}: ${event.reason}`),
    lineAhead: () => undefined,
    ready: () => void log.push('ready'),
    ack: (ref, status, reason) => void log.push(`ack ${ref} ${status}${reason === undefined ? '' : `: ${reason}`}`),
    delivery: (ref, delivery) => void log.push(`delivery ${ref} ${delivery}`),
    turnStarted: (n) => void log.push(`turnStarted ${n}`),
    turnCompleted: (report) => void log.push(`turnCompleted ${report.turn} ${report.stopReason}`),
    toolCalled: () => void log.push('toolCalled'),
    modelCall: () => undefined,
    result: (result) => {
      answers.push(result.answer as Promise<{ finalText?: string }>);
      log.push(`result ${result.stopReason}`);
    },
    exit: (end) => {
      exit = end as { status: string; error?: string };
      log.push(`exit ${end.status}`);
    },
    fatal: (code, error) => void log.push(`fatal ${code}: ${error}`),
    broken: (reason) => void log.push(`broken ${reason}`),
    gone: () => undefined,
    session: (id) => void log.push(`session ${id}`),
    rateLimit: (fields) => void log.push(`rateLimit ${fields.status} ${fields.httpStatus}`),
    blocked: () => undefined,
    unblocked: () => undefined,
  };
  const resolved = resolveOptions({ protocol: 'acp', command: 'scripted-acp-agent', task: 'Say hello', cwd: '/tmp/acp-cwd', ...options }, acpProtocol);
  const driver: Driver = acpProtocol.create({ runId: 'run-1', startedAt: Date.now(), options: resolved, sink, shouldPause: () => false, backpressure: () => false });
  const { io, peer } = linkedStdio();
  const launch = driver.launch();
  driver.attach!(io);

  /** The next message the driver writes. */
  const next = async (): Promise<Written> => JSON.parse(await peer.nextLine()) as Written;
  const agent = {
    next,
    /** Answers request `id` with `result`. */
    answer: (id: number | undefined, result: unknown) => peer.send({ jsonrpc: '2.0', id, result }),
    /** Answers request `id` with a JSON-RPC error. */
    fail: (id: number | undefined, code: number, message: string) => peer.send({ jsonrpc: '2.0', id, error: { code, message } }),
    /** One `session/update` of `update`. */
    update: (update: Record<string, unknown>, sessionId = SESSION) => peer.send({ jsonrpc: '2.0', method: 'session/update', params: { sessionId, update } }),
    /** A request of the agent's (`id` its own numbering). */
    request: (id: number, method: string, params: unknown) => peer.send({ jsonrpc: '2.0', id, method, params }),
    send: (line: unknown) => peer.send(line),
    peer,
  };
  return {
    driver,
    launch,
    log,
    events,
    answers,
    agent,
    get exit() {
      return exit;
    },
    /** Sends a control; its ack lands in `log` a microtask later. */
    send: (control: Control) => driver.send(control),
    /** Lets the linked pipes and microtasks run until `check` holds (at most 1000 turns). */
    async until(check: () => boolean): Promise<void> {
      for (let n = 0; !check() && n < 1000; n++) await turn();
      if (!check()) throw new Error(`never held; log: ${log.join(' | ')}`);
    },
    /** The handshake as Gemini CLI 0.61.0 answers it; resolves with the task's session/prompt. */
    async handshake(init: Record<string, unknown> = GEMINI_INIT): Promise<Written> {
      const initialize = await next();
      agent.answer(initialize.id, init);
      const created = await next();
      agent.answer(created.id, { sessionId: SESSION, models: { currentModelId: 'auto' } });
      return next();
    },
    /** The agent's stdout ends and it exits with `exitCode`: the driver's finish. */
    async exitWith(exitCode = 0): Promise<void> {
      peer.end();
      await driver.finish({ exitCode, signal: null, spawnFailed: false });
    },
    ofType: <T extends RunEvent['type']>(type: T) => events.filter((event): event is Extract<RunEvent, { type: T }> => event.type === type),
  };
}
