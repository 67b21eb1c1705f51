// Benchmark 12, warm children: time from sup.spawn() to the task's first event (its turn-started), a task handed to
// a child already waiting against one started for it, in the same run, per agent. Add an agent to AGENTS to bench it.
import { createSupervisor, spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';
import { median, nsToMs, percentile, row, sized } from './lib/harness.mjs';

/**
 * The agents benched: `options()` gives the run options of one (undefined when it is not installed: its rows are
 * left out), `label` names it in the rows. A real agent's entry (Claude Code on fakeModel) goes here when its
 * driver lands: the same measurements apply to it unchanged.
 */
const AGENTS = [
  {
    label: 'Fen fake child',
    // Its idle poll is 20 ms (Fen's own is 300 ms): a waiting child reads its task about as soon as a stdio agent
    // blocked on its stdin would.
    options() {
      const child = fakeChild('echo', { transcript: false, idleTickMs: 20, turnTickMs: 5 });
      child.cleanup();
      return { command: child.command, args: child.args, env: child.env };
    },
  },
];

/** ms from `spawn()` to the run's first `turn-started` (its task reached the agent), and to its outcome. */
async function timeTask(sup, task) {
  const started = process.hrtime.bigint();
  const run = sup.spawn({ task, retainEvents: false });
  let firstTurnMs;
  run.on('event', (event) => {
    if (event.type === 'turn-started' && firstTurnMs === undefined) firstTurnMs = nsToMs(process.hrtime.bigint() - started);
  });
  const outcome = await run.outcome;
  if (outcome.status !== 'done') throw new Error(`a benched task ended ${outcome.status}: ${outcome.error ?? ''}`);
  if (firstTurnMs === undefined) throw new Error('a benched task never started a turn');
  return firstTurnMs;
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
    const agentOptions = agent.options();
    if (agentOptions === undefined) continue;
    await warmAgainstCold(agentOptions, 2); // warm-up: module loading, the first spawns
    const times = await warmAgainstCold(agentOptions, samples);
    const warmP50 = median(times.warm);
    const coldP50 = median(times.cold);
    rows.push(
      row({ bench, metric: `${agent.label}: spawn() to the task's first event (turn-started) p50, warm child`, value: warmP50, unit: 'ms', baseline: 'a child started for the task', baselineValue: coldP50, target: 'ratio < 1', met: warmP50 < coldP50 }),
      row({ bench, metric: `${agent.label}: spawn() to the task's first event p90, warm child`, value: percentile(times.warm, 90), unit: 'ms', baseline: 'a child started for the task', baselineValue: percentile(times.cold, 90) }),
    );
  }
  return rows;
}
