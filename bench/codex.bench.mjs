// Benchmark: the pinned Codex (0.169.0, .agents/) driven by subvisor's spawnRun({ protocol: 'codex' }) (codex app-server)
// and by the Codex TypeScript SDK (@openai/codex-sdk, which runs `codex exec --experimental-json`; codexPathOverride: the
// same binary), against the same fakeModel, alternating, in one run. Time to the first text (subvisor: the first text
// delta; the SDK's exec mode streams none: its first agent_message item), to the turn's end, to the process gone; the
// parent's CPU per event; and after a cancel (subvisor) or an abort (the SDK's signal) while a command runs `sleep 30`
// with a grandchild, how long until no process of the tree is left and how many are left at all.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnRun } from 'subvisor';
import { ROOT, row, sized } from './lib/harness.mjs';
import { GONE_BOUND_MS, alternateSides, readings, sdkAbort, since, subvisorCancel } from './lib/agent-cases.mjs';

const AGENTS = join(ROOT, '.agents');
const CODEX = join(AGENTS, 'node_modules', '.bin', 'codex');
const SDK = join(AGENTS, 'node_modules', '@openai', 'codex-sdk', 'dist', 'index.js');
/** The answer: 2000 characters in 50 streamed pieces. */
const ANSWER_TURN = { text: 'word '.repeat(400), chunkChars: 40, times: 1e6 };
/** A command that outlives a plain kill of the agent: a shell with a background sleep (under Codex's sandbox helper and bwrap). */
const SLEEP_TURN = { text: 'Sleeping.', shell: "sh -c 'sleep 30 & wait'", times: 1e6 };

/** The thread options of the SDK's side: as subvisor's (workspace-write), without asking (exec mode cannot ask). */
const SDK_THREAD = { sandboxMode: 'workspace-write', approvalPolicy: 'never', skipGitRepoCheck: true };

async function subvisorTurn(env, cwd) {
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const run = spawnRun({ protocol: 'codex', command: CODEX, env, cwd, task: 'Say it' });
  let events = 0;
  let ready;
  let first;
  let turn;
  for await (const event of run) {
    events++;
    if (event.type === 'ready') ready = since(start);
    if (first === undefined && event.type === 'assistant-text-delta') first = since(start);
    if (event.type === 'turn-complete') turn = since(start);
  }
  const outcome = await run.outcome;
  const done = since(start);
  const used = process.cpuUsage(cpu);
  if (outcome.status !== 'done') throw new Error(`a subvisor turn ended ${outcome.status}: ${outcome.error ?? ''}`);
  return { ready, first, turn, done, cpuMs: (used.user + used.system) / 1000, cpuPerEventUs: (used.user + used.system) / events, events };
}

async function sdkTurn(Codex, env, cwd) {
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const thread = new Codex({ codexPathOverride: CODEX, env }).startThread({ ...SDK_THREAD, workingDirectory: cwd });
  const { events: stream } = await thread.runStreamed('Say it');
  let events = 0;
  let ready;
  let first;
  let turn;
  let completed = false;
  for await (const event of stream) {
    events++;
    if (event.type === 'thread.started') ready = since(start);
    if (first === undefined && (event.type === 'item.updated' || event.type === 'item.completed') && event.item?.type === 'agent_message') first = since(start);
    if (event.type === 'turn.completed') {
      turn = since(start);
      completed = true;
    }
  }
  const done = since(start);
  const used = process.cpuUsage(cpu);
  if (!completed) throw new Error('an SDK turn did not complete');
  return { ready, first, turn, done, cpuMs: (used.user + used.system) / 1000, cpuPerEventUs: (used.user + used.system) / events, events };
}

function sdkStop(Codex, env, cwd, tag) {
  const controller = new AbortController();
  const thread = new Codex({ codexPathOverride: CODEX, env }).startThread({ ...SDK_THREAD, workingDirectory: cwd });
  return sdkAbort(tag, async () => {
    const { events } = await thread.runStreamed('Sleep', { signal: controller.signal });
    for await (const _event of events);
  }, () => controller.abort());
}

export async function run(options = {}) {
  const bench = 'codex';
  if (!existsSync(join(AGENTS, '.installed')) || !existsSync(CODEX) || !existsSync(SDK)) {
    console.log('\n  codex: the pinned Codex or Codex SDK is not installed (npm run agents:install): no rows');
    return [];
  }
  const { Codex } = await import(pathToFileURL(SDK).href);
  const { turns, stops } = await alternateSides({
    agent: 'codex',
    samples: sized(options, { full: 8, quick: 3, smoke: 1 }),
    cancels: sized(options, { full: 4, quick: 2, smoke: 1 }),
    answerTurn: ANSWER_TURN,
    sleepTurn: SLEEP_TURN,
    turn: { subvisor: subvisorTurn, sdk: (env, cwd) => sdkTurn(Codex, env, cwd) },
    stop: { subvisor: (env, cwd, tag) => subvisorCancel({ protocol: 'codex', command: CODEX, env, cwd }, tag), sdk: (env, cwd, tag) => sdkStop(Codex, env, cwd, tag) },
  });

  const sdkName = 'Codex SDK (codex exec --experimental-json)';
  const { p50, gone, left } = readings({ turns, stops });
  console.log(`\n  codex: ${JSON.stringify({ turns, stops })}`);
  return [
    row({ bench, metric: 'Codex: start to the thread started (subvisor: ready; SDK: thread.started), p50', value: p50('subvisor', 'ready'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'ready') }),
    row({ bench, metric: 'Codex: start to the first text (subvisor: first delta; SDK: first agent_message), p50', value: p50('subvisor', 'first'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'first') }),
    row({ bench, metric: "Codex: start to the turn's end, p50", value: p50('subvisor', 'turn'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'turn') }),
    row({ bench, metric: 'Codex: start to the process gone, p50', value: p50('subvisor', 'done'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'done') }),
    row({ bench, metric: 'Codex: parent CPU per event, p50', value: p50('subvisor', 'cpuPerEventUs'), unit: 'us', baseline: sdkName, baselineValue: p50('sdk', 'cpuPerEventUs') }),
    row({ bench, metric: 'Codex: parent CPU per turn, p50', value: p50('subvisor', 'cpuMs'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'cpuMs') }),
    row({ bench, metric: 'Codex: events per turn, p50', value: p50('subvisor', 'events'), unit: 'events', baseline: sdkName, baselineValue: p50('sdk', 'events') }),
    row({ bench, metric: `Codex: cancel / abort mid-command until no process of the tree is left, p50 (${GONE_BOUND_MS} when some are left)`, value: gone('subvisor'), unit: 'ms', baseline: sdkName, baselineValue: gone('sdk') }),
    row({ bench, metric: `Codex: processes of the tree left ${GONE_BOUND_MS / 1000} s after cancel / abort, max`, value: left('subvisor'), unit: 'processes', baseline: sdkName, baselineValue: left('sdk') }),
  ];
}
