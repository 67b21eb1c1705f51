// A real process of a stdio fake (fa, fuseraft) under test: pipes collected, lines awaited, group killed and reaped after.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { liveFakeProcesses, waitUntilGone } from '../../src/testing/index.js';

export interface PipedSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
  token: string;
}

export interface PipedExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Every piped process alive, so `reapPiped()` can clean up after a failed test. */
const live = new Set<PipedProcess>();

export class PipedProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<PipedExit>;
  stdout = '';
  stderr = '';

  /** Spawns in its own process group (so the test can signal the group), stdin piped or ignored. */
  constructor(
    readonly spec: PipedSpec,
    extraArgs: string[] = [],
    options: { stdin?: boolean; env?: Record<string, string> } = {},
  ) {
    this.child = spawn(spec.command, [...spec.args, ...extraArgs], {
      env: { ...(process.env as Record<string, string>), ...spec.env, ...options.env },
      stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.child.stdout?.setEncoding('utf8');
    this.child.stderr?.setEncoding('utf8');
    this.child.stdout?.on('data', (chunk: string) => (this.stdout += chunk));
    this.child.stderr?.on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => {
      // 'close': the process exited and its pipes are drained, so stdout is complete.
      this.child.on('close', (code, signal) => resolve({ code, signal }));
    });
    live.add(this);
  }

  /**
   * The exit, within `timeoutMs` (generous: the machine is shared); past it the error shows what the
   * process wrote, so a fake that hangs says where instead of running into the test's own timeout.
   */
  async exit(timeoutMs = 30_000): Promise<PipedExit> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no exit within ${timeoutMs} ms; stdout so far:\n${this.stdout.slice(-2000)}\nstderr:\n${this.stderr.slice(-2000)}`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  get pid(): number {
    return this.child.pid as number;
  }

  /** Whole stdout lines so far (without newlines). */
  lines(): string[] {
    const cut = this.stdout.lastIndexOf('\n');
    return cut < 0 ? [] : this.stdout.slice(0, cut).split('\n');
  }

  /** The stdout lines that parse as JSON objects. */
  objects(): Array<Record<string, unknown>> {
    return this.lines().flatMap((line) => {
      try {
        const parsed: unknown = JSON.parse(line);
        return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? [parsed as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
  }

  /** Waits until `done(objects)` holds, for at most `timeoutMs` (generous: the machine is shared). */
  async waitFor(done: (objects: Array<Record<string, unknown>>) => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!done(this.objects())) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}; stdout so far:\n${this.stdout.slice(-2000)}\nstderr:\n${this.stderr.slice(-2000)}`);
      await sleep(10);
    }
  }

  waitForType(type: string, timeoutMs?: number): Promise<void> {
    return this.waitFor((objects) => objects.some((object) => object['type'] === type), `a "${type}" line`, timeoutMs);
  }

  /** Writes one JSON line (or raw text with `raw`) to stdin. */
  send(line: object | string): void {
    this.child.stdin?.write(typeof line === 'string' ? line : `${JSON.stringify(line)}\n`);
  }

  /** Kills the group and every process carrying the fake's token, then waits until all are gone. */
  async dispose(): Promise<void> {
    live.delete(this);
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // the group is already gone
    }
    for (const pid of liveFakeProcesses(this.spec.token)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await this.exited;
    await waitUntilGone(() => liveFakeProcesses(this.spec.token), 15_000);
  }
}

export async function reapPiped(): Promise<void> {
  for (const process of [...live]) await process.dispose();
}

/** Stays alive for `ms`: a process that must NOT exit. */
export async function staysAlive(piped: PipedProcess, ms: number): Promise<boolean> {
  let exited = false;
  void piped.exited.then(() => (exited = true));
  await sleep(ms);
  return !exited;
}
