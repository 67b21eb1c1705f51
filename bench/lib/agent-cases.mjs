// What a benchmark of a real agent needs around each measured case: fakeModel in a process of its own, the case's
// environment (tagged), after a cancel or an abort how long until no process of the case's tree is left, and the two
// sides (subvisor, the agent's SDK) run alternately with their readings.
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnRun } from 'subvisor';
import { median, nsToMs, sleep } from './harness.mjs';
import { taggedProcesses } from './hygiene.mjs';

/** Every process of one measured case carries this variable: the case's tree, wherever it was re-parented. */
export const CASE_VARIABLE = 'SUBVISOR_BENCH_CASE';
/** How long a cancelled tree may take to go before the processes still there are counted as left. */
export const GONE_BOUND_MS = 15_000;

/** fakeModel in its own process (its CPU is not the parent's), set up for `agent` (`codex`, `claude-code`...). */
export async function startModel(turns, agent) {
  const child = fork(fileURLToPath(new URL('./model-process.mjs', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.send({ type: 'start', turns, agent });
  const started = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the model process exited ${code}`)));
  });
  return {
    ...started,
    close: async () => {
      child.send({ type: 'close' });
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/** The environment of one case: ours with the model's setup over it (an undefined key removed), tagged. */
export function caseEnv(model, tag) {
  const env = { ...process.env };
  for (const [key, value] of Object.entries(model.env)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  env[CASE_VARIABLE] = tag;
  return env;
}

/** Milliseconds since `start` (a process.hrtime.bigint()). */
export function since(start) {
  return nsToMs(process.hrtime.bigint() - start);
}

/** Waits until a process of the case runs `command` (the tool's `sleep`), at most 60 s. */
export async function caseRuns(tag, command) {
  const until = Date.now() + 60_000;
  while (!taggedProcesses(tag, CASE_VARIABLE).some((process_) => process_.cmdline.startsWith(command))) {
    if (Date.now() > until) throw new Error(`${command} never ran`);
    await sleep(20);
  }
}

/**
 * After `stop()`: ms until no process of the case is left (undefined past GONE_BOUND_MS), and how many were left at
 * the bound (SIGKILLed then, so the next case starts clean).
 */
export async function untilGone(tag, stop) {
  const start = process.hrtime.bigint();
  stop();
  for (;;) {
    const left = taggedProcesses(tag, CASE_VARIABLE);
    if (left.length === 0) return { goneMs: since(start), left: 0 };
    if (since(start) > GONE_BOUND_MS) {
      for (const process_ of left) {
        try {
          process.kill(process_.pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      return { goneMs: undefined, left: left.length, what: left.map((process_) => process_.cmdline.split(' ')[0]) };
    }
    await sleep(10);
  }
}

/** subvisor's side of a stop: a run of `options` (its task `Sleep`, approved) cancelled once the case's `sleep` runs. */
export async function subvisorCancel(options, tag) {
  const run = spawnRun({ ...options, task: 'Sleep', approve: () => true, retainEvents: false });
  await caseRuns(tag, 'sleep');
  const measured = await untilGone(tag, () => void run.cancel());
  const outcome = await run.outcome;
  return { ...measured, status: outcome.status };
}

/**
 * An SDK's side of a stop: `consume()` drives the SDK's turn (its task `Sleep`), `abort()` is fired once the case's
 * `sleep` runs, and the time until the tree is gone is measured.
 */
export async function sdkAbort(tag, consume, abort) {
  // The abort ends the SDK's iteration with an AbortError.
  const drained = consume().catch(() => undefined);
  await caseRuns(tag, 'sleep');
  const measured = await untilGone(tag, abort);
  await drained;
  return { ...measured, status: 'aborted' };
}

/**
 * The two sides of an agent's benchmark (`subvisor` and the agent's own SDK), alternating which goes first: `samples`
 * turns answering `answerTurn` (`turn[side](env, cwd)`), then `cancels` stops of a command `sleepTurn` runs
 * (`stop[side](env, cwd, tag)`), each case in a cwd of its own with a tagged environment, fakeModel set up for `agent`.
 */
export async function alternateSides({ agent, samples, cancels, answerTurn, sleepTurn, turn, stop }) {
  const turns = { subvisor: [], sdk: [] };
  const stops = { subvisor: [], sdk: [] };
  const textModel = await startModel([answerTurn], agent);
  try {
    for (let index = 0; index < samples; index++) {
      for (const side of index % 2 === 0 ? ['subvisor', 'sdk'] : ['sdk', 'subvisor']) {
        const cwd = join(textModel.home, `work-${side}-${index}`);
        mkdirSync(cwd, { recursive: true });
        turns[side].push(await turn[side](caseEnv(textModel, randomUUID()), cwd));
      }
    }
  } finally {
    await textModel.close();
  }
  const sleepModel = await startModel([sleepTurn], agent);
  try {
    for (let index = 0; index < cancels; index++) {
      for (const side of index % 2 === 0 ? ['subvisor', 'sdk'] : ['sdk', 'subvisor']) {
        const cwd = join(sleepModel.home, `stop-${side}-${index}`);
        mkdirSync(cwd, { recursive: true });
        const tag = randomUUID();
        stops[side].push(await stop[side](caseEnv(sleepModel, tag), cwd, tag));
      }
    }
  } finally {
    await sleepModel.close();
  }
  return { turns, stops };
}

/** The readings of {@link alternateSides}' samples: a side's p50 of a turn's `key`, its p50 time to gone (the bound when some were left), the most left. */
export function readings({ turns, stops }) {
  return {
    p50: (side, key) => median(turns[side].map((sample) => sample[key])),
    gone: (side) => median(stops[side].map((sample) => sample.goneMs ?? GONE_BOUND_MS)),
    left: (side) => Math.max(...stops[side].map((sample) => sample.left)),
  };
}
