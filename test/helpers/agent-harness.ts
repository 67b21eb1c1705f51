// The real-agent test harness: per test, a fakeModel, the agent's private HOME and a temp cwd, the agent's binary
// started on stdio with its lines read, and after the test every process it started killed (wherever it went) and
// every file removed.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { type AgentSetup, type FakeModel, type FakeModelAgent, type FakeModelOptions, fakeModel, waitUntilGone } from '../../src/testing/index.js';
import { type AgentBinaryName, agentBinary } from './agent-binaries.js';

/** Every process a harness starts carries this variable (its value the harness's id), even where it is re-parented. */
const HARNESS_ENV = 'SUBVISOR_AGENT_HARNESS';

/** The binary of each agent fakeModel sets up. */
export const AGENT_BINARY: Record<FakeModelAgent, AgentBinaryName> = { 'claude-code': 'claude', codex: 'codex', gemini: 'gemini' };

/** A JSON line the agent wrote, or the raw text of a line that was not JSON. */
export type AgentLine = Record<string, unknown> | string;

/** One agent process on stdio. */
export interface AgentProcess {
  readonly child: ChildProcess;
  /** Every stdout line so far, parsed. */
  readonly lines: readonly AgentLine[];
  /** Everything written on stderr so far. */
  stderr(): string;
  /** Writes one JSON line (or a raw line) on stdin. */
  send(message: unknown): void;
  /** Closes stdin. */
  end(): void;
  /**
   * Sends a JSON-RPC request (ids 1, 2, ... per process; `envelope` adds members, `{ jsonrpc: '2.0' }` for ACP, none
   * for Codex's dialect) and resolves with its result; rejects with the error when it answers one.
   */
  request(method: string, params: unknown, envelope?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** The first stdout line (already read or still to come) that `matches`; rejects after `timeoutMs` (default 60000). */
  line(matches: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** How the process ended. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface AgentHarness {
  readonly agent: FakeModelAgent;
  readonly model: FakeModel;
  readonly setup: AgentSetup;
  /** The agent's binary (installed by `npm run agents:install`). */
  readonly command: string;
  /** A fresh working folder for the agent, removed after the test. */
  readonly cwd: string;
  /** The environment to merge over process.env (spawnRun's `env`): the setup's plus the harness's tag. */
  readonly env: Record<string, string | undefined>;
  /** Starts the agent's binary with `args` in `cwd`, its own process group, stdin/stdout/stderr piped. */
  start(args: readonly string[]): AgentProcess;
  /** Every live process this harness's agents started, by the tag in their environment (orphans included). */
  liveProcesses(): number[];
}

/** The live processes (zombies aside) whose environment holds the entry `tag` (`NAME=value`), re-parented ones too. */
export function taggedProcesses(tag: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(tag)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') found.push(Number(entry));
    } catch {
      // gone while we looked
    }
  }
  return found;
}

/** The merge spawnRun does: over process.env, a key set to undefined removed. */
function mergedEnv(overlay: Readonly<Record<string, string | undefined>>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [key, value] of Object.entries(overlay)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

function startProcess(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): AgentProcess {
  const child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const lines: AgentLine[] = [];
  const waiters = new Set<(line: AgentLine) => void>();
  let pending = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
      const text = pending.slice(0, end);
      pending = pending.slice(end + 1);
      let line: AgentLine = text;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // kept as text
      }
      lines.push(line);
      for (const waiter of waiters) waiter(line);
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // A write after the agent went is not an error of the test.
  child.stdin!.on('error', () => undefined);
  let requests = 0;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const send = (message: unknown): void => {
    child.stdin!.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
  };
  const line = (matches: (line: Record<string, unknown>) => boolean, timeoutMs = 60_000): Promise<Record<string, unknown>> => {
    const test = (candidate: AgentLine): candidate is Record<string, unknown> => typeof candidate === 'object' && matches(candidate);
    const seen = lines.find(test);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`no matching line from ${command} within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`));
      }, timeoutMs);
      const waiter = (candidate: AgentLine): void => {
        if (!test(candidate)) return;
        clearTimeout(timer);
        waiters.delete(waiter);
        resolve(candidate);
      };
      waiters.add(waiter);
    });
  };
  return {
    child,
    lines,
    exited,
    stderr: () => stderr,
    send,
    end: () => child.stdin!.end(),
    line,
    async request(method, params, envelope = {}) {
      const id = ++requests;
      send({ ...envelope, id, method, params });
      const answer = await line((candidate) => candidate['id'] === id && candidate['method'] === undefined);
      if (answer['error'] !== undefined) throw new Error(`${method}: ${JSON.stringify(answer['error'])}`);
      return answer['result'] as Record<string, unknown>;
    },
  };
}

/**
 * A fakeModel scripted with `options`, set up for `agent`, with a temp cwd; everything goes when the current test
 * finishes (passed or failed): every tagged process SIGKILLed and waited for, the model closed, the folders removed.
 * Call it inside a test. Throws when the agent's binary is not installed: guard the test with `agentBinary()`.
 */
export async function agentHarness(agent: FakeModelAgent, options: FakeModelOptions): Promise<AgentHarness> {
  const command = agentBinary(AGENT_BINARY[agent]);
  if (command === undefined) throw new Error(`${AGENT_BINARY[agent]} is not installed: npm run agents:install`);
  const tag = `${HARNESS_ENV}=${randomUUID()}`;
  const model = await fakeModel(options);
  const cwd = mkdtempSync(join(tmpdir(), `agent-${agent}-cwd-`));
  const setup = model.setup(agent);
  const env = { ...setup.env, [HARNESS_ENV]: tag.slice(HARNESS_ENV.length + 1) };
  const liveProcesses = (): number[] => taggedProcesses(tag);
  onTestFinished(async () => {
    for (const pid of liveProcesses()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const survivors = await waitUntilGone(liveProcesses, 10_000);
    await model.close();
    rmSync(cwd, { recursive: true, force: true, maxRetries: 3 });
    if (survivors.length > 0) throw new Error(`agent processes survived SIGKILL: ${survivors.join(', ')}`);
  });
  return {
    agent,
    model,
    setup,
    command,
    cwd,
    env,
    start: (args) => startProcess(command, args, cwd, mergedEnv(env)),
    liveProcesses,
  };
}
