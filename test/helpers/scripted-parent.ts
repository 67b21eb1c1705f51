// A minimal scripted parent for the fake child's conformance tests: files, control appends, event reads, invariants.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createReceiver, createSender } from '../../src/wire/index.js';
import type { PayloadOf, WireControl, WireControlType, WireEvent } from '../../src/wire/index.js';
import { expect } from 'vitest';
import { fakeChild, liveFakeProcesses, liveTree, waitUntilGone } from '../../src/testing/index.js';
import type { BuiltinScenarioName, FakeChild, Scenario } from '../../src/testing/index.js';

export interface ChildSpec {
  command: string;
  args: string[];
  env: Record<string, string>;
}

export interface ParentOptions {
  runId?: string;
  /** The first prompt, appended before spawn (as Fen's parent does). */
  task?: string;
  /** Unix seconds for FEN_WIRE_DEADLINE. */
  deadline?: number;
  /** Create the control file before spawn (default true). */
  createControl?: boolean;
  /** Extra environment. */
  env?: Record<string, string>;
}

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Every scripted parent alive, so `reapAll()` can clean up after a failed test. */
const live = new Set<ScriptedParent>();

export class ScriptedParent {
  readonly dir: string;
  readonly controlPath: string;
  readonly eventPath: string;
  readonly runId: string;
  readonly child: ChildProcess;
  readonly exited: Promise<ChildExit>;
  /** Every control line appended, as written (without newline). */
  readonly sentLines: string[] = [];
  private readonly sender;
  private exitInfo: ChildExit | undefined;

  constructor(spec: ChildSpec, options: ParentOptions = {}) {
    this.dir = mkdtempSync(join(tmpdir(), 'subvisor-parent-'));
    this.controlPath = join(this.dir, 'control.jsonl');
    this.eventPath = join(this.dir, 'events.jsonl');
    this.runId = options.runId ?? 'run-under-test';
    this.sender = createSender('control', this.runId);
    writeFileSync(this.eventPath, '', { mode: 0o600 });
    if (options.createControl ?? true) writeFileSync(this.controlPath, '', { mode: 0o600 });
    if (options.task !== undefined) this.send('prompt', { text: options.task });
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...spec.env,
      ...options.env,
      FEN_WIRE_CONTROL_PATH: this.controlPath,
      FEN_WIRE_EVENT_PATH: this.eventPath,
      FEN_WIRE_RUN_ID: this.runId,
    };
    if (options.deadline !== undefined) env['FEN_WIRE_DEADLINE'] = String(options.deadline);
    this.child = spawn(spec.command, spec.args, { env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
    });
    live.add(this);
  }

  stderr = '';

  get pid(): number {
    return this.child.pid as number;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  /** Appends a well-formed control with the next seq; returns the seq. */
  send<T extends WireControlType>(type: T, payload?: PayloadOf<Extract<WireControl, { type: T }>>): number {
    const encoded = this.sender.next(type, payload ?? {});
    if (!encoded.ok) throw new Error(`cannot encode ${type}: ${encoded.rejection.reason}`);
    this.appendRaw(`${encoded.line}\n`);
    return this.sender.lastSeq;
  }

  /** The seq the next `send` will use. */
  get nextSeq(): number {
    return this.sender.lastSeq + 1;
  }

  /** Appends text as is (include the newline yourself). */
  appendRaw(text: string): void {
    appendFileSync(this.controlPath, text);
    for (const line of text.split('\n').slice(0, -1)) this.sentLines.push(line);
  }

  /** Raw whole lines of the event file. */
  lines(): string[] {
    if (!existsSync(this.eventPath)) return [];
    const text = readFileSync(this.eventPath, 'utf8');
    const whole = text.slice(0, text.lastIndexOf('\n') + 1);
    return whole === '' ? [] : whole.slice(0, -1).split('\n');
  }

  /** The events so far, each decoded by a fresh receiver; throws on any rejected line. */
  events(): WireEvent[] {
    const receiver = createReceiver('event');
    return this.lines().map((line, index) => {
      const result = receiver.receive(line);
      if (!result.ok) throw new Error(`event line ${index + 1} rejected (${result.rejection.code}): ${line.slice(0, 200)}`);
      return result.message;
    });
  }

  /** Waits until `predicate` holds for the events (decoded leniently: JSON-parsed lines only). */
  async waitFor(predicate: (events: WireEvent[]) => boolean, what: string, timeoutMs = 20_000): Promise<WireEvent[]> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const events = this.lenientEvents();
      if (predicate(events)) return events;
      if (Date.now() > until) {
        throw new Error(`timed out waiting for ${what}; events: ${events.map((event) => event.type).join(', ')}`);
      }
      if (this.hasExited && !predicate(this.lenientEvents())) {
        await sleep(20);
        const final = this.lenientEvents();
        if (predicate(final)) return final;
        throw new Error(`child exited before ${what}; events: ${final.map((event) => event.type).join(', ')}; stderr: ${this.stderr}`);
      }
      await sleep(10);
    }
  }

  /** Waits for the first event of `type` (matching `where`) and returns it. */
  async waitForEvent<T extends WireEvent['type']>(
    type: T,
    where: (event: Extract<WireEvent, { type: T }>) => boolean = () => true,
    timeoutMs?: number,
  ): Promise<Extract<WireEvent, { type: T }>> {
    const matches = (event: WireEvent): event is Extract<WireEvent, { type: T }> =>
      event.type === type && where(event as Extract<WireEvent, { type: T }>);
    const events = await this.waitFor((all) => all.some(matches), `${type}`, timeoutMs);
    return events.find(matches) as Extract<WireEvent, { type: T }>;
  }

  /** The ack of control `seq`, once it arrives. */
  async ackOf(seq: number, timeoutMs?: number): Promise<Extract<WireEvent, { type: 'control-ack' }>> {
    return this.waitForEvent('control-ack', (event) => event.ref === seq, timeoutMs);
  }

  /** Events parsed with JSON.parse, skipping lines that are not JSON objects (for waiting, not asserting). */
  lenientEvents(): WireEvent[] {
    const events: WireEvent[] = [];
    for (const line of this.lines()) {
      try {
        const parsed = JSON.parse(line) as unknown;
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) events.push(parsed as WireEvent);
      } catch {
        // garbage lines are for the assertions to judge
      }
    }
    return events;
  }

  /** Waits for the child to exit (bounded). */
  async waitExit(timeoutMs = 20_000): Promise<ChildExit> {
    const timer = sleep(timeoutMs).then(() => undefined);
    const result = await Promise.race([this.exited, timer]);
    if (result === undefined) throw new Error(`child ${this.pid} did not exit within ${timeoutMs} ms`);
    return result;
  }

  /**
   * Kills the child's process group and whatever else carries the fake token, then removes the files,
   * including the answer file a result named (a parent owns it; only a regular file, never a link).
   */
  async dispose(token?: string): Promise<void> {
    const pids = [...liveTree(this.pid), ...(token === undefined ? [] : liveFakeProcesses(token))];
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    await waitUntilGone(pids, 10_000);
    if (!this.hasExited) await this.waitExit(10_000).catch(() => undefined);
    for (const event of this.lenientEvents()) {
      const path = event.type === 'result' ? event['final-text-path'] : undefined;
      if (path !== undefined && existsSync(path) && lstatSync(path).isFile()) rmSync(path);
    }
    rmSync(this.dir, { recursive: true, force: true });
    live.delete(this);
  }
}

/** Fast fake-child ticks for conformance tests. */
export const FAST_TICKS = { turnTickMs: 5, idleTickMs: 10 };

/**
 * The fake children of one test file, each with its scripted parent: `start()` makes a pair, `reap()`
 * (from afterEach) disposes every pair, checks that none of its processes is alive, and removes its files.
 */
export function scriptedChildren(): {
  start: (
    scenario: Scenario | BuiltinScenarioName,
    options?: ConstructorParameters<typeof ScriptedParent>[1],
  ) => { fake: FakeChild; parent: ScriptedParent };
  reap: () => Promise<void>;
} {
  const made: Array<{ fake: FakeChild; parent: ScriptedParent }> = [];
  return {
    start(scenario, options = {}) {
      const fake = fakeChild(scenario, FAST_TICKS);
      const parent = new ScriptedParent(fake, options);
      made.push({ fake, parent });
      return { fake, parent };
    },
    async reap() {
      for (const { fake, parent } of made.splice(0)) {
        await parent.dispose(fake.token);
        expect(fake.livePids()).toEqual([]);
        fake.cleanup();
      }
    },
  };
}

/** Disposes every scripted parent still alive (for afterEach). */
export async function reapAll(): Promise<void> {
  await Promise.all([...live].map((parent) => parent.dispose()));
}

export interface InvariantOptions {
  /** The child's exit code (from the process). */
  code: number | null;
  /** Control lines sent (each must be acked exactly once); defaults to all. */
  expectAcks?: number;
}

/**
 * The per-run invariants: every line decodes; `exit` is last and appears once; `result` appears once,
 * right before `exit`, exactly when the status is `done`; exit code 0 exactly when `done`; every control
 * line sent got exactly one ack (refs of well-formed ones match their seqs).
 */
export function checkInvariants(parent: ScriptedParent, code: number | null): string[] {
  const problems: string[] = [];
  let events: WireEvent[];
  try {
    events = parent.events();
  } catch (error) {
    return [(error as Error).message];
  }
  const exits = events.filter((event) => event.type === 'exit');
  if (exits.length !== 1) problems.push(`expected exactly one exit, got ${exits.length}`);
  const last = events[events.length - 1];
  if (last?.type !== 'exit') problems.push(`last event is ${last?.type}, not exit`);
  const status = last?.type === 'exit' ? last.status : undefined;
  const results = events.filter((event) => event.type === 'result');
  if (status === 'done') {
    if (results.length !== 1) problems.push(`done run has ${results.length} results`);
    if (events[events.length - 2]?.type !== 'result') problems.push('result is not right before exit');
  } else if (results.length !== 0) {
    problems.push(`${status} run has a result`);
  }
  if ((code === 0) !== (status === 'done')) problems.push(`exit code ${code} with status ${status}`);
  const acks = events.filter((event) => event.type === 'control-ack');
  if (acks.length !== parent.sentLines.length) {
    problems.push(`${parent.sentLines.length} control lines sent, ${acks.length} acks`);
  }
  const refs = acks.flatMap((ack) => (ack.ref === undefined ? [] : [ack.ref]));
  if (new Set(refs).size !== refs.length) problems.push(`a ref was acked twice: ${refs.join(',')}`);
  return problems;
}
