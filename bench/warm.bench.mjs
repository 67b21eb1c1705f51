// Benchmark 12, warm children: time from sup.spawn() to the task's first event (its turn-started), a task handed to
// a child already waiting against one started for it, in the same run, per agent. Add an agent to AGENTS to bench it.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createSupervisor, spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';
import { ROOT, median, nsToMs, percentile, row, sized } from './lib/harness.mjs';
import { caseEnv, startModel } from './lib/agent-cases.mjs';

const CLAUDE = join(ROOT, '.agents', 'node_modules', '.bin', 'claude');

/**
 * The agents benched: `start()` gives the run options of one and what closes what it started (undefined when it is
 * not installed: its rows are left out), `label` names it in the rows.
 */
const AGENTS = [
  {
    label: 'Fen fake child',
    // Its idle poll is 20 ms (Fen's own is 300 ms): a waiting child reads its task about as soon as a stdio agent
    // blocked on its stdin would.
    async start() {
      const child = fakeChild('echo', { transcript: false, idleTickMs: 20, turnTickMs: 5 });
      child.cleanup();
      return { options: { command: child.command, args: child.args, env: child.env }, close: async () => {} };
    },
  },
  {
    label: 'Claude Code 2.1.328 on fakeModel',
    // The pinned claude (npm run agents:install) against fakeModel in its own process: a warm child has answered
    // initialize and waits for its first user line.
    async start() {
      if (!existsSync(CLAUDE)) return undefined;
      const model = await startModel([{ text: 'The answer is 42.', times: 1e6 }], 'claude-code');
      const cwd = join(model.home, 'work');
      mkdirSync(cwd, { recursive: true });
      return { options: { protocol: 'claude-code', command: CLAUDE, env: caseEnv(model, 'warm-bench'), cwd, killGraceMs: 2000 }, close: model.close };
    },
  },
];

/**
 * ms from `spawn()` to the run's first `turn-started` (its task reached the agent: for a stdio agent, as the prompt is
 * written) and to its first text delta (the agent read the task, asked the model, and the answer began).
 */
async function timeTask(sup, task) {
  const started = process.hrtime.bigint();
  const run = sup.spawn({ task, retainEvents: false });
  const at = {};
  run.on('event', (event) => {
    // The Fen fake's echo sends its answer as one block: its first text is that block.
    const key = event.type === 'assistant-text' ? 'assistant-text-delta' : event.type;
    if ((key === 'turn-started' || key === 'assistant-text-delta') && at[key] === undefined) at[key] = nsToMs(process.hrtime.bigint() - started);
  });
  const outcome = await run.outcome;
  if (outcome.status !== 'done') throw new Error(`a benched task ended ${outcome.status}: ${outcome.error ?? ''}`);
  if (at['turn-started'] === undefined || at['assistant-text-delta'] === undefined) throw new Error(`a benched task never started a turn or streamed text: ${JSON.stringify(outcome)}`);
  return { turn: at['turn-started'], text: at['assistant-text-delta'] };
}

/** A pool whose start is spawnRun, telling which children it started without a task (the warm ones). */
function pool(options, warm) {
  const children = [];
  const start = (runOptions) => {
    const run = spawnRun(runOptions);
    if (runOptions.task === undefined) children.push(run);
    return run;
  };
  const sup = createSupervisor({ concurrency: 2, defaults: options, start, ...(warm ? { warm: 1 } : {}) });
  /** Resolves once a child waits for a task (none taken since it said ready). */
  const waiting = async () => {
    for (;;) {
      if (children.some((run) => run.state === 'ready' && run.listenerCount('event') === 0)) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return { sup, waiting };
}

/** `samples` tasks one at a time through a cold pool and a warm one, interleaved (cold, warm, warm, cold...). */
async function warmAgainstCold(options, samples) {
  const cold = pool(options, false);
  const warm = pool(options, true);
  const times = { cold: [], warm: [] };
  try {
    for (let index = 0; index < samples; index++) {
      for (const kind of index % 2 === 0 ? ['cold', 'warm'] : ['warm', 'cold']) {
        if (kind === 'warm') await warm.waiting();
        times[kind].push(await timeTask(kind === 'warm' ? warm.sup : cold.sup, `task ${index}`));
      }
    }
  } finally {
    await Promise.all([cold.sup.shutdown(), warm.sup.shutdown()]);
  }
  return times;
}

export async function run(options = {}) {
  const bench = 'warm';
  const samples = sized(options, { full: 40, quick: 12, smoke: 2 });
  const rows = [];
  for (const agent of AGENTS) {
    const started = await agent.start();
    if (started === undefined) {
      console.log(`\n  warm: ${agent.label} is not installed (npm run agents:install): no rows`);
      continue;
    }
    let times;
    try {
      await warmAgainstCold(started.options, 2); // warm-up: module loading, the first spawns
      times = await warmAgainstCold(started.options, samples);
    } finally {
      await started.close();
    }
    const of = (kind, key) => times[kind].map((time) => time[key]);
    const baseline = 'a child started for the task';
    for (const [key, what] of [['turn', "the task's first event (turn-started)"], ['text', 'its first text']]) {
      const warmP50 = median(of('warm', key));
      const coldP50 = median(of('cold', key));
      rows.push(
        row({ bench, metric: `${agent.label}: spawn() to ${what} p50, warm child`, value: warmP50, unit: 'ms', baseline, baselineValue: coldP50, target: 'ratio < 1', met: warmP50 < coldP50 }),
        row({ bench, metric: `${agent.label}: spawn() to ${what} p90, warm child`, value: percentile(of('warm', key), 90), unit: 'ms', baseline, baselineValue: percentile(of('cold', key), 90) }),
      );
    }
  }
  return rows;
}
