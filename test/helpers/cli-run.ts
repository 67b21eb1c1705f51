// Test helper: runs the built supervise CLI as a real process and collects its exit, stdout bytes and stderr.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fakeChild, waitUntilGone, type FakeChild, type FakeChildOptions } from '../../src/testing/index.js';
import type { BuiltinScenarioName, Scenario } from '../../src/testing/index.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = `${ROOT}dist/cli/supervise.js`;

/** Whether script(1) is there to give the CLI a pseudo-terminal (util-linux). */
export const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

export interface CliRun {
  process: ChildProcess;
  /** stderr so far (for waiting on a message). */
  stderrSoFar(): string;
  /** stdout so far, as text (for waiting on an outcome line). */
  stdoutSoFar(): string;
  result: Promise<CliResult>;
}

export interface StartOptions {
  /** Environment added to the CLI's (the child inherits it: this is how a fake child gets its scenario). */
  env?: Record<string, string>;
  /** Written to stdin then closed; without it stdin is /dev/null (unless `stdin: 'pipe'`). */
  input?: string | Buffer;
  stdin?: 'pipe' | 'ignore';
  cwd?: string;
}

/** Starts `node dist/cli/supervise.js ...args`. */
export function startCli(args: readonly string[], options: StartOptions = {}): CliRun {
  const stdinMode = options.input !== undefined ? 'pipe' : (options.stdin ?? 'ignore');
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, ...options.env },
    stdio: [stdinMode, 'pipe', 'pipe'],
  });
  const stdout: Buffer[] = [];
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
  });
  if (options.input !== undefined) child.stdin?.end(options.input);
  const result = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout: Buffer.concat(stdout), stderr }));
  });
  return { process: child, stderrSoFar: () => stderr, stdoutSoFar: () => Buffer.concat(stdout).toString('utf8'), result };
}

export function runCli(args: readonly string[], options: StartOptions = {}): Promise<CliResult> {
  return startCli(args, options).result;
}

/** Resolves once `predicate(stderr)` holds, polling; rejects after `timeoutMs`. */
export function waitForStderr(run: CliRun, predicate: (stderr: string) => boolean, timeoutMs = 20_000): Promise<void> {
  return waitForOutput('stderr', () => run.stderrSoFar(), predicate, timeoutMs);
}

/** Resolves once `predicate(stdout)` holds, polling; rejects after `timeoutMs`. */
export function waitForStdout(run: CliRun, predicate: (stdout: string) => boolean, timeoutMs = 20_000): Promise<void> {
  return waitForOutput('stdout', () => run.stdoutSoFar(), predicate, timeoutMs);
}

async function waitForOutput(name: string, soFar: () => string, predicate: (text: string) => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!predicate(soFar())) {
    if (Date.now() > until) throw new Error(`timed out waiting on ${name}; ${name} so far:\n${soFar()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A fake child plus the CLI arguments and environment that run it. */
export interface CliFake {
  fake: FakeChild;
  /** `-- node dist/testing/fake-child.js <scenario>` */
  command: string[];
  env: Record<string, string>;
}

export function cliFake(scenario: Scenario | BuiltinScenarioName, options: FakeChildOptions = {}): CliFake {
  const fake = fakeChild(scenario, { turnTickMs: 5, idleTickMs: 20, ...options });
  return { fake, command: ['--', fake.command, ...fake.args], env: fake.env };
}

/** The fake children of one test file: `fake()` makes one, `cleanup()` (from afterAll) removes all their files. */
export function fakeSet(): { fake: (scenario: Scenario | BuiltinScenarioName) => CliFake; cleanup: () => void } {
  const made: CliFake[] = [];
  return {
    fake(scenario) {
      const child = cliFake(scenario);
      made.push(child);
      return child;
    },
    cleanup() {
      for (const { fake } of made.splice(0)) fake.cleanup();
    },
  };
}

/** Every process of this fake child (child and grandchildren) is gone, allowing a moment for the kernel to reap. */
export async function survivorsOf(fake: FakeChild): Promise<number[]> {
  return waitUntilGone(() => fake.livePids(), 1000);
}

/** The lines of stdout, each parsed as JSON (throws on any line that is not). */
export function jsonLines(stdout: Buffer): Array<Record<string, unknown>> {
  const text = stdout.toString('utf8');
  if (text.length > 0 && !text.endsWith('\n')) throw new Error('stdout does not end with a newline');
  return text
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
