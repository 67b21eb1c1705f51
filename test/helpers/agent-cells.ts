// What one cell of a real agent against fakeModel asserts (on the agent harness: a private HOME (and CODEX_HOME), a temp
// cwd, every process tagged and reaped after the test): the invariants every cell holds, and small readings of a run.
// Shared by the codex, claude-code and acp (Gemini CLI) matrices.
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { Outcome, Run, RunEvent, RunOptions } from '../../src/index.js';
import type { FakeModelAgent, FakeModelOptions } from '../../src/testing/index.js';
import { agentHarness } from './agent-harness.js';
import type { AgentHarness } from './agent-harness.js';

/** The marks fakeModel puts in the model's reasoning and answer: thinking must never reach the answer. */
export const THINKING = 'PRIVATE-REASONING-7f3a';
export const ANSWER = 'The answer is 42.';

/**
 * Every cell's run ends within this (codex and claude take 0.4-2 s to answer initialize on a loaded machine, gemini
 * 4-11 s; a 429 is retried after its retry-after).
 */
export const OUTCOME_BOUND_MS = 90_000;

/** A cell: fakeModel scripted with `turns`, the agent's setup, a cwd; all of it goes when the test finishes. */
export function openCell(agent: FakeModelAgent, turns: FakeModelOptions['turns'], modelOptions: Omit<FakeModelOptions, 'turns'> = {}): Promise<AgentHarness> {
  return agentHarness(agent, { turns, ...modelOptions });
}

/** The options of a cell's run (the protocol, the installed binary, the cell's environment and cwd), with `extra`. */
export function cellOptions(protocol: RunOptions['protocol'], cell: AgentHarness, extra: Partial<RunOptions> = {}): RunOptions {
  return { protocol, command: cell.command, env: cell.env, cwd: cell.cwd, killGraceMs: 2000, readyTimeoutMs: 60_000, ...extra };
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
export async function finishRun(cell: AgentHarness, run: Run, checks: { treeGone?: boolean } = {}): Promise<Ran> {
  const started = Date.now();
  const events: RunEvent[] = [];
  const collected = (async () => {
    for await (const event of run) events.push(event);
  })();
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    run.outcome,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no outcome within ${OUTCOME_BOUND_MS} ms`)), OUTCOME_BOUND_MS))),
  ]).finally(() => clearTimeout(timer));
  await collected;
  const ms = Date.now() - started;
  expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
  expect(events.at(-1)).toMatchObject({ type: 'exit', status: outcome.status });
  if (checks.treeGone !== false) await expectTreeGone(cell);
  return { events, outcome, ms };
}

/** No process of the cell's tree is left (the agent, its helpers, their shells and children), within `waitMs`. */
export async function expectTreeGone(cell: AgentHarness, waitMs = 0): Promise<void> {
  const until = Date.now() + waitMs;
  let live = cell.liveProcesses();
  while (live.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    live = cell.liveProcesses();
  }
  expect(live.map((pid) => `${pid}: ${commandOf(pid)}`)).toEqual([]);
}

/** Whether a process of the cell runs `command` (a tool's `sleep`). */
export function runs(cell: AgentHarness, command: string): boolean {
  return cell.liveProcesses().some((pid) => commandOf(pid).startsWith(command));
}

/** A process's command line, or '' once it is gone. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
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
