// The cells every real-agent matrix runs alike (parent-sigkill, supervise-pipeline, pool, trace): one body each, given the
// agent's cell and run options. Shared by the codex, claude-code and acp (Gemini CLI) matrices.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { createSupervisor, readJournal, spawnRun } from '../../src/index.js';
import type { Run, RunOptions } from '../../src/index.js';
import type { FakeModelAgent } from '../../src/testing/index.js';
import type { AgentHarness } from './agent-harness.js';
import { ANSWER, definedOf, expectTreeGone, finishRun, openCell, runs, until } from './agent-cells.js';
import { installTelemetry, traceparentOf } from './telemetry.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PARENT = join(ROOT, 'test', 'helpers', 'agent-parent.mjs');
const SUPERVISE = join(ROOT, 'dist', 'cli', 'supervise.js');

/** A matrix's agent: the harness's name for it, and its runs' options (protocol, args) in a cell. */
export interface CellAgent {
  agent: FakeModelAgent;
  options(cell: AgentHarness, extra?: Partial<RunOptions>): RunOptions;
}

/** parent-sigkill: a parent killed with SIGKILL while a tool's command sleeps leaves nothing of the tree; `after`: the agent's own leftovers checked. */
export async function parentSigkillCell(agent: CellAgent, after?: (cell: AgentHarness) => void): Promise<void> {
  const cell = await openCell(agent.agent, [{ text: 'Sleeping.', shell: "sh -c 'sleep 60 & wait'" }, { text: 'never' }]);
  const options = agent.options(cell, { task: 'Sleep' });
  const parent = spawn(process.execPath, [PARENT, JSON.stringify(options)], { env: { ...process.env, ...definedOf(cell.env) }, stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await until(() => runs(cell, 'sleep'), 60_000, 'the command sleeping');
    parent.kill('SIGKILL');
    await new Promise((resolve) => parent.once('exit', resolve));
    await expectTreeGone(cell, 30_000);
    after?.(cell);
  } finally {
    parent.kill('SIGKILL');
  }
}

/** supervise-pipeline: `supervise --protocol <protocol> --task … -- <agent> <args>` prints the answer into a pipe and exits 0. */
export async function supervisePipelineCell(agent: CellAgent): Promise<void> {
  const cell = await openCell(agent.agent, [{ text: ANSWER }]);
  const { protocol, args = [] } = agent.options(cell);
  const script = `"$NODE" "$SUPERVISE" --protocol ${protocol} --task 'Say the answer' -- "$AGENT"${args.map((arg) => ` ${arg}`).join('')} | cat`;
  const env: NodeJS.ProcessEnv = { ...process.env, ...definedOf(cell.env), NODE: process.execPath, SUPERVISE, AGENT: cell.command };
  for (const [key, value] of Object.entries(cell.env)) if (value === undefined) delete env[key];
  const shell = spawn('/bin/sh', ['-c', script], { cwd: cell.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  shell.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  shell.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => shell.once('exit', resolve));
  expect({ code, stdout }, stderr).toEqual({ code: 0, stdout: ANSWER });
  await expectTreeGone(cell, 5000);
}

/** pool: a warm child takes the task, its run is journaled, the budget counts its turns. */
export async function poolCell(agent: CellAgent): Promise<void> {
  const cell = await openCell(agent.agent, [{ text: ANSWER }]);
  const journals = mkdtempSync(join(tmpdir(), `${agent.agent}-journals-`));
  try {
    const sup = createSupervisor({ concurrency: 1, warm: 1, defaults: agent.options(cell) });
    let run: Run | undefined;
    try {
      await until(() => sup.counts.warm >= 1, 60_000, 'a warm child ready');
      run = sup.spawn({ task: 'Say the answer', journal: journals, budget: { maxTurns: 3 } });
      // The pool starts another warm child once this one took the task: the tree is checked after the shutdown.
      const { outcome } = await finishRun(cell, run, { treeGone: false });
      expect(outcome).toMatchObject({ status: 'done', finalText: ANSWER, budget: { used: { turns: 1 } } });
    } finally {
      await sup.shutdown({ mode: 'cancel' });
    }
    const [file] = readdirSync(journals);
    const journal = readJournal(join(journals, file!));
    expect(journal.outcome?.outcome).toMatchObject({ status: 'done', finalText: ANSWER });
    await expectTreeGone(cell, 10_000);
  } finally {
    rmSync(journals, { recursive: true, force: true });
  }
}

/** trace: with an OpenTelemetry SDK the run has its span, and the agent its context in TRACEPARENT. */
export async function traceCell(agent: CellAgent): Promise<void> {
  const telemetry = installTelemetry({ metrics: false });
  try {
    const cell = await openCell(agent.agent, [{ text: ANSWER }]);
    const options = agent.options(cell, { task: 'Say the answer', keepAlive: true });
    const run = spawnRun(options);
    let environ = '';
    run.on('event', (event) => {
      if (event.type !== 'turn-complete') return;
      environ = readFileSync(`/proc/${run.pid!}/environ`, 'utf8');
      void run.close();
    });
    const { outcome } = await finishRun(cell, run);
    expect(outcome.status).toBe('done');
    const [span] = telemetry.named('invoke_agent');
    expect(environ.split('\0')).toContain(`TRACEPARENT=${traceparentOf(span!)}`);
    expect(span!.attributes).toMatchObject({ 'subvisor.protocol': options.protocol });
  } finally {
    await telemetry.uninstall();
  }
}
