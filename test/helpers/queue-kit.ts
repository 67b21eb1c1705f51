// Helpers of the queue tests: worker processes (test/helpers/queue-worker.mjs) with their output lines, and fake-child profiles.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fakeChild } from '../../src/testing/index.js';
import type { BuiltinScenarioName, FakeChild, Scenario } from '../../src/testing/index.js';
import type { WorkerOptions, WorkerProfile } from '../../src/queue/index.js';

const WORKER_SCRIPT = fileURLToPath(new URL('./queue-worker.mjs', import.meta.url));

export interface WorkerProcess {
  readonly proc: ChildProcess;
  readonly name: string;
  readonly lines: string[];
  stderr(): string;
  /** Resolves with the first line (seen so far or later) matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
}

/** Starts a worker process and waits for its READY line. */
export async function startWorkerProcess(options: Omit<WorkerOptions, 'handleSignals'>): Promise<WorkerProcess> {
  const proc = spawn(process.execPath, [WORKER_SCRIPT, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let stderr = '';
  const waiters: Array<() => void> = [];
  let buffer = '';
  proc.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let newline: number;
    while ((newline = buffer.indexOf('\n')) !== -1) {
      lines.push(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
    }
    for (const wake of waiters.splice(0)) wake();
  });
  proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => {
    for (const wake of waiters.splice(0)) wake();
    resolve(code);
  }));
  const waitFor = async (pattern: RegExp, timeoutMs = 20_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = lines.find((line) => pattern.test(line));
      if (found !== undefined) return found;
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`worker exited before ${pattern}: ${stderr}`);
      if (Date.now() > deadline) throw new Error(`no line ${pattern} within ${timeoutMs} ms; lines: ${lines.join(' | ')}; stderr: ${stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  };
  // A worker loads BullMQ and ioredis before it is ready: at load 40 that took more than 20 s.
  const ready = await waitFor(/^READY /, 60_000);
  return { proc, name: ready.slice('READY '.length), lines, stderr: () => stderr, waitFor, exited };
}

/** Stops a worker process with SIGTERM (SIGKILL after `graceMs`) and resolves with its exit code. */
export async function stopWorkerProcess(worker: WorkerProcess, graceMs = 20_000): Promise<number | null> {
  if (worker.proc.exitCode !== null || worker.proc.signalCode !== null) return worker.proc.exitCode;
  worker.proc.kill('SIGTERM');
  const timer = setTimeout(() => worker.proc.kill('SIGKILL'), graceMs);
  const code = await worker.exited;
  clearTimeout(timer);
  return code;
}

const made: FakeChild[] = [];

/** A profile running a fast fake child that plays `scenario`. */
export function fakeProfile(scenario: Scenario | BuiltinScenarioName, limits?: WorkerProfile['limits']): WorkerProfile & { token: string } {
  const child = fakeChild(scenario, { turnTickMs: 5, idleTickMs: 20 });
  made.push(child);
  const profile: WorkerProfile & { token: string } = { command: child.command, args: [...child.args], env: { ...child.env }, token: child.token };
  if (limits !== undefined) profile.limits = limits;
  return profile;
}

/** A profile without the test-only token field, for the worker options. */
export function profileOf(profile: WorkerProfile & { token?: string }): WorkerProfile {
  const { token: _token, ...rest } = profile;
  return rest;
}

export function cleanupQueueKit(): void {
  for (const child of made.splice(0)) child.cleanup();
}

/** A turn that writes a little, then pauses for `ms` (reading and acking controls meanwhile), then echoes. */
export function pausing(ms: number): Scenario {
  return { name: `pause-${ms}`, turns: [{ steps: [{ text: 'Working. ', chunks: 1 }, { pause: ms }], answer: { echo: true, prefix: 'Done: ' } }] };
}

/** Polls `check` every 50 ms until it returns true; throws after `timeoutMs`. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
