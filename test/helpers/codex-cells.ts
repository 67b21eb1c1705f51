// What runs one cell of the real codex against fakeModel: a private HOME (and CODEX_HOME), a tag on every process of the tree, the invariants every cell asserts.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Outcome, Run, RunEvent, RunOptions } from '../../src/index.js';
import { fakeModel } from '../../src/testing/index.js';
import type { AgentSetup, FakeModel, FakeModelOptions } from '../../src/testing/index.js';
import { isAlive } from '../../src/testing/liveness.js';
import { agentBinary } from './agent-binaries.js';

/** The marks fakeModel puts in the model's reasoning and answer: thinking must never reach the answer. */
export const THINKING = 'PRIVATE-REASONING-7f3a';
export const ANSWER = 'The answer is 42.';

/** Every cell's run ends within this (codex takes 0.4-2 s to answer initialize on a loaded machine; a 429 is retried after its retry-after). */
export const OUTCOME_BOUND_MS = 90_000;

/** The variable every process of a cell's tree inherits (Codex passes it to its tools), so the cell can tell whether any is left. */
export const CELL_TAG = 'SUBVISOR_CODEX_CELL';

/** A cell under way: its model, codex's setup, the working directory (inside the private HOME), the tag of its processes. */
export interface CodexCell {
  binary: string;
  model: FakeModel;
  setup: AgentSetup;
  cwd: string;
  tag: string;
  env: Record<string, string | undefined>;
}

/** Starts a cell's model and setup; `close()` ends the model and removes the HOME (the cwd and what Codex left in it with it). */
export async function openCodexCell(turns: FakeModelOptions['turns'], modelOptions: Omit<FakeModelOptions, 'turns'> = {}): Promise<CodexCell & { close(): Promise<void> }> {
  const binary = agentBinary('codex');
  if (binary === undefined) throw new Error('codex is not installed in .agents/');
  const model = await fakeModel({ turns, ...modelOptions });
  const setup = model.setup('codex');
  const cwd = join(setup.home, 'work');
  mkdirSync(cwd, { recursive: true });
  const tag = randomUUID();
  return { binary, model, setup, cwd, tag, env: { ...setup.env, [CELL_TAG]: tag }, close: () => model.close() };
}

/** The options of a cell's run (protocol codex, the installed binary, the cell's environment and cwd), with `extra`. */
export function codexOptions(cell: CodexCell, extra: Partial<RunOptions> = {}): RunOptions {
  return { protocol: 'codex', command: cell.binary, env: cell.env, cwd: cell.cwd, killGraceMs: 2000, readyTimeoutMs: 60_000, ...extra };
}

export interface Ran {
  events: RunEvent[];
  outcome: Outcome;
  ms: number;
}

/**
 * Runs `run` to its end and asserts the invariants of every cell: one outcome within the bound, the last event one exit
 * equal to it, nothing of the tree left (`treeGone: false`: checked by the caller, as a pool keeps other children).
 */
export async function finishRun(cell: CodexCell, run: Run, checks: { treeGone?: boolean } = {}): Promise<Ran> {
  const started = Date.now();
  const events: RunEvent[] = [];
  const collected = (async () => {
    for await (const event of run) events.push(event);
  })();
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    run.outcome,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no outcome within ${OUTCOME_BOUND_MS} ms`)), OUTCOME_BOUND_MS))),
  ])
    .catch(async (error: unknown) => {
      // The cell failed: its tree must not outlive it (nor keep writing in the HOME being removed).
      await run.kill('the cell failed');
      throw error;
    })
    .finally(() => clearTimeout(timer));
  await collected;
  const ms = Date.now() - started;
  expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
  expect(events.at(-1)).toMatchObject({ type: 'exit', status: outcome.status });
  if (checks.treeGone !== false) await expectTreeGone(cell);
  return { events, outcome, ms };
}

/** No process of the cell's tree is left (codex, its sandbox helpers, their shells and children), within `waitMs`. */
export async function expectTreeGone(cell: CodexCell, waitMs = 0): Promise<void> {
  const until = Date.now() + waitMs;
  let live = taggedProcesses(cell.tag);
  while (live.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    live = taggedProcesses(cell.tag);
  }
  expect(live.map(describeProcess)).toEqual([]);
}

/** Live processes whose environment carries `tag`. */
export function taggedProcesses(tag: string): number[] {
  const wanted = `${CELL_TAG}=${tag}`;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(wanted) && isAlive(pid)) found.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** A process's command line, or '' once it is gone. */
export function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

function describeProcess(pid: number): string {
  return `${pid}: ${commandOf(pid)}`;
}

/** Waits until `check` holds, polling. */
export async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The streamed text of one kind, joined. */
export function streamed(events: RunEvent[], type: 'assistant-text-delta' | 'assistant-thinking-delta'): string {
  return events
    .filter((event) => event.type === type)
    .map((event) => String((event as { delta?: string }).delta ?? ''))
    .join('');
}

/** The variables of `env` that are set (a setup's `undefined` removes a variable). */
export function definedOf(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
