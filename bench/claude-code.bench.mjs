// Benchmark: the pinned Claude Code (2.1.328, .agents/) driven by subvisor's spawnRun({ protocol: 'claude-code' }) and by
// the Claude Agent SDK's query() (@anthropic-ai/claude-agent-sdk 0.3.328; pathToClaudeCodeExecutable: the same binary),
// both over stream-json with partial messages, against the same fakeModel, alternating, in one run. Time to
// `system/init`, to the first text delta, to the turn's end (the `result`), to the process gone; the parent's CPU per
// event and per turn; and after a cancel (subvisor) or an abort (the SDK's AbortController) while a Bash command runs
// `sleep 30` with a grandchild (in a session of its own), how long until no process of the tree is left and how many
// are left at all.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnRun } from 'subvisor';
import { ROOT, row, sized } from './lib/harness.mjs';
import { GONE_BOUND_MS, alternateSides, readings, sdkAbort, since, subvisorCancel } from './lib/agent-cases.mjs';

const AGENTS = join(ROOT, '.agents');
const CLAUDE = join(AGENTS, 'node_modules', '.bin', 'claude');
const SDK = join(AGENTS, 'node_modules', '@anthropic-ai', 'claude-agent-sdk', 'sdk.mjs');
/** The answer: 2000 characters in 50 streamed pieces. */
const ANSWER_TURN = { text: 'word '.repeat(400), chunkChars: 40, times: 1e6 };
/** A command that outlives a plain kill of the agent: a shell with a background sleep. */
const SLEEP_TURN = { text: 'Sleeping.', shell: "sh -c 'sleep 30 & wait'", times: 1e6 };
/** The SDK's side approves every tool, as subvisor's `approve` does here. */
const allow = async (_name, input) => ({ behavior: 'allow', updatedInput: input });

function isTextDelta(message) {
  return message.type === 'stream_event' && message.event?.type === 'content_block_delta' && message.event.delta?.type === 'text_delta';
}

async function subvisorTurn(env, cwd) {
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const run = spawnRun({ protocol: 'claude-code', command: CLAUDE, env, cwd, task: 'Say it' });
  let events = 0;
  let init;
  let first;
  let turn;
  for await (const event of run) {
    events++;
    if (event.type === 'agent-started') init = since(start);
    if (first === undefined && event.type === 'assistant-text-delta') first = since(start);
    if (event.type === 'turn-complete') turn = since(start);
  }
  const outcome = await run.outcome;
  const done = since(start);
  const used = process.cpuUsage(cpu);
  if (outcome.status !== 'done') throw new Error(`a subvisor turn ended ${outcome.status}: ${outcome.error ?? ''}`);
  return { init, first, turn, done, cpuMs: (used.user + used.system) / 1000, cpuPerEventUs: (used.user + used.system) / events, events };
}

async function sdkTurn(query, env, cwd) {
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const messages = query({ prompt: 'Say it', options: { pathToClaudeCodeExecutable: CLAUDE, env, cwd, includePartialMessages: true, canUseTool: allow } });
  let events = 0;
  let init;
  let first;
  let turn;
  let completed = false;
  for await (const message of messages) {
    events++;
    if (init === undefined && message.type === 'system' && message.subtype === 'init') init = since(start);
    if (first === undefined && isTextDelta(message)) first = since(start);
    if (message.type === 'result') {
      turn = since(start);
      completed = message.is_error !== true;
    }
  }
  const done = since(start);
  const used = process.cpuUsage(cpu);
  if (!completed) throw new Error('an SDK turn did not complete');
  return { init, first, turn, done, cpuMs: (used.user + used.system) / 1000, cpuPerEventUs: (used.user + used.system) / events, events };
}

function sdkStop(query, env, cwd, tag) {
  const abortController = new AbortController();
  const messages = query({ prompt: 'Sleep', options: { pathToClaudeCodeExecutable: CLAUDE, env, cwd, includePartialMessages: true, canUseTool: allow, abortController } });
  return sdkAbort(tag, async () => {
    for await (const _message of messages);
  }, () => abortController.abort());
}

export async function run(options = {}) {
  const bench = 'claude-code';
  if (!existsSync(join(AGENTS, '.installed')) || !existsSync(CLAUDE) || !existsSync(SDK)) {
    console.log('\n  claude-code: the pinned Claude Code or Claude Agent SDK is not installed (npm run agents:install): no rows');
    return [];
  }
  const { query } = await import(pathToFileURL(SDK).href);
  const { turns, stops } = await alternateSides({
    agent: 'claude-code',
    samples: sized(options, { full: 8, quick: 3, smoke: 1 }),
    cancels: sized(options, { full: 4, quick: 2, smoke: 1 }),
    answerTurn: ANSWER_TURN,
    sleepTurn: SLEEP_TURN,
    turn: { subvisor: subvisorTurn, sdk: (env, cwd) => sdkTurn(query, env, cwd) },
    stop: { subvisor: (env, cwd, tag) => subvisorCancel({ protocol: 'claude-code', command: CLAUDE, env, cwd }, tag), sdk: (env, cwd, tag) => sdkStop(query, env, cwd, tag) },
  });

  const sdkName = 'Claude Agent SDK query()';
  const { p50, gone, left } = readings({ turns, stops });
  console.log(`\n  claude-code: ${JSON.stringify({ turns, stops })}`);
  return [
    row({ bench, metric: 'Claude Code: start to system/init, p50', value: p50('subvisor', 'init'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'init') }),
    row({ bench, metric: 'Claude Code: start to the first text delta, p50', value: p50('subvisor', 'first'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'first') }),
    row({ bench, metric: "Claude Code: start to the turn's end (result), p50", value: p50('subvisor', 'turn'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'turn') }),
    row({ bench, metric: 'Claude Code: start to the process gone, p50', value: p50('subvisor', 'done'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'done') }),
    row({ bench, metric: 'Claude Code: parent CPU per event, p50', value: p50('subvisor', 'cpuPerEventUs'), unit: 'us', baseline: sdkName, baselineValue: p50('sdk', 'cpuPerEventUs') }),
    row({ bench, metric: 'Claude Code: parent CPU per turn, p50', value: p50('subvisor', 'cpuMs'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'cpuMs') }),
    row({ bench, metric: 'Claude Code: events per turn, p50', value: p50('subvisor', 'events'), unit: 'events', baseline: sdkName, baselineValue: p50('sdk', 'events') }),
    row({ bench, metric: `Claude Code: cancel / abort mid-command until no process of the tree is left, p50 (${GONE_BOUND_MS} when some are left)`, value: gone('subvisor'), unit: 'ms', baseline: sdkName, baselineValue: gone('sdk') }),
    row({ bench, metric: `Claude Code: processes of the tree left ${GONE_BOUND_MS / 1000} s after cancel / abort, max`, value: left('subvisor'), unit: 'processes', baseline: sdkName, baselineValue: left('sdk') }),
  ];
}
