// Benchmark: the pinned Gemini CLI (0.61.0, .agents/, `gemini --acp`) driven by subvisor's spawnRun({ protocol: 'acp' })
// and by the ACP TypeScript SDK (@agentclientprotocol/sdk 2.4.0: its client app, `client().onRequest(...)
// .onNotification(...).connect(ndJsonStream(...))`, which replaced ClientSideConnection in 2.x) over the same spawned
// binary, against the same fakeModel, alternating, in one run. Time to the session, to the first text (the first
// agent_message_chunk), to the turn's end (the prompt's answer), to the process gone; the parent's CPU per event; and
// after a cancel (subvisor's; the SDK side: session/cancel, then the end of stdin, ACP's way to make the agent leave)
// while an approved command runs `sleep 30` with a grandchild, how long until no process of the tree is left and how
// many are left at all.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { spawnRun } from 'subvisor';
import { ROOT, row, sized } from './lib/harness.mjs';
import { GONE_BOUND_MS, alternateSides, caseRuns, readings, since, subvisorCancel, untilGone } from './lib/agent-cases.mjs';

const AGENTS = join(ROOT, '.agents');
const GEMINI = join(AGENTS, 'node_modules', '.bin', 'gemini');
const SDK = join(AGENTS, 'node_modules', '@agentclientprotocol', 'sdk', 'dist', 'v1', 'stable', 'acp.js');
/** The answer: about 2000 characters in 50 streamed pieces, no word twice (Gemini CLI takes a repeated one for a loop: `max_turn_requests`). */
const ANSWER_TURN = { text: Array.from({ length: 400 }, (_, index) => `w${index.toString(36)} `).join('').slice(0, 2000), chunkChars: 40, times: 1e6 };
/** A command that outlives a plain kill of the agent: a shell with a background sleep. */
const SLEEP_TURN = { text: 'Sleeping.', shell: "sh -c 'sleep 30 & wait'", times: 1e6 };
const CLIENT_CAPABILITIES = { fs: { readTextFile: false, writeTextFile: false }, terminal: false };

async function subvisorTurn(env, cwd) {
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const run = spawnRun({ protocol: 'acp', command: GEMINI, args: ['--acp'], env, cwd, task: 'Say it', readyTimeoutMs: 120_000 });
  let events = 0;
  let ready;
  let first;
  let turn;
  let stopReason;
  for await (const event of run) {
    events++;
    if (event.type === 'ready') ready = since(start);
    if (first === undefined && event.type === 'assistant-text-delta') first = since(start);
    if (event.type === 'turn-complete') {
      turn = since(start);
      stopReason = event.stopReason;
    }
  }
  const outcome = await run.outcome;
  const done = since(start);
  const used = process.cpuUsage(cpu);
  if (outcome.status !== 'done' || stopReason !== 'end_turn') throw new Error(`a subvisor turn ended ${outcome.status} (${stopReason}): ${outcome.error ?? ''}`);
  return { ready, first, turn, done, cpuMs: (used.user + used.system) / 1000, cpuPerEventUs: (used.user + used.system) / events, events };
}

/** Gemini CLI on stdio, with the SDK's client on its pipes: `onUpdate` sees each session/update; permissions are allowed once. */
function sdkClient(acp, env, cwd, onUpdate) {
  const child = spawn(GEMINI, ['--acp'], { cwd, env, stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const app = acp
    .client({ name: 'bench' })
    .onNotification(acp.methods.client.session.update, ({ params }) => onUpdate(params.update))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => ({
      outcome: { outcome: 'selected', optionId: params.options.find((option) => option.kind === 'allow_once').optionId },
    }));
  const connection = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  return { child, exited, agent: connection.agent, connection };
}

async function sdkSession(acp, agent, cwd) {
  await agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: CLIENT_CAPABILITIES });
  const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  return sessionId;
}

async function sdkTurn(acp, env, cwd) {
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  let events = 0;
  let first;
  const { child, exited, agent, connection } = sdkClient(acp, env, cwd, (update) => {
    events++;
    if (first === undefined && update.sessionUpdate === 'agent_message_chunk') first = since(start);
  });
  const sessionId = await sdkSession(acp, agent, cwd);
  const ready = since(start);
  const answer = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'Say it' }] });
  events++;
  const turn = since(start);
  child.stdin.end();
  await exited;
  connection.close();
  const done = since(start);
  const used = process.cpuUsage(cpu);
  if (answer.stopReason !== 'end_turn') throw new Error(`an SDK turn ended ${answer.stopReason}`);
  return { ready, first, turn, done, cpuMs: (used.user + used.system) / 1000, cpuPerEventUs: (used.user + used.system) / events, events };
}

async function sdkCancel(acp, env, cwd, tag) {
  const { child, exited, agent, connection } = sdkClient(acp, env, cwd, () => undefined);
  const sessionId = await sdkSession(acp, agent, cwd);
  const prompt = agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text: 'Sleep' }] }).catch(() => undefined);
  await caseRuns(tag, 'sleep');
  const measured = await untilGone(tag, () => {
    void agent.notify(acp.methods.agent.session.cancel, { sessionId });
    void prompt.then(() => child.stdin.end());
  });
  await exited;
  connection.close();
  return { ...measured, status: 'cancelled' };
}

export async function run(options = {}) {
  const bench = 'acp';
  if (!existsSync(join(AGENTS, '.installed')) || !existsSync(GEMINI) || !existsSync(SDK)) {
    console.log('\n  acp: the pinned Gemini CLI or ACP SDK is not installed (npm run agents:install): no rows');
    return [];
  }
  const acp = await import(pathToFileURL(SDK).href);
  const { turns, stops } = await alternateSides({
    agent: 'gemini',
    samples: sized(options, { full: 8, quick: 3, smoke: 1 }),
    cancels: sized(options, { full: 4, quick: 2, smoke: 1 }),
    answerTurn: ANSWER_TURN,
    sleepTurn: SLEEP_TURN,
    turn: { subvisor: subvisorTurn, sdk: (env, cwd) => sdkTurn(acp, env, cwd) },
    stop: { subvisor: (env, cwd, tag) => subvisorCancel({ protocol: 'acp', command: GEMINI, args: ['--acp'], env, cwd, readyTimeoutMs: 120_000 }, tag), sdk: (env, cwd, tag) => sdkCancel(acp, env, cwd, tag) },
  });

  const sdkName = 'ACP SDK 2.4.0 client app (gemini --acp)';
  const { p50, gone, left } = readings({ turns, stops });
  console.log(`\n  acp: ${JSON.stringify({ turns, stops })}`);
  return [
    row({ bench, metric: 'Gemini CLI (ACP): start to the session created (subvisor: ready; SDK: session/new answered), p50', value: p50('subvisor', 'ready'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'ready') }),
    row({ bench, metric: 'Gemini CLI (ACP): start to the first text (the first agent_message_chunk), p50', value: p50('subvisor', 'first'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'first') }),
    row({ bench, metric: "Gemini CLI (ACP): start to the turn's end (the prompt answered), p50", value: p50('subvisor', 'turn'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'turn') }),
    row({ bench, metric: 'Gemini CLI (ACP): start to the process gone, p50', value: p50('subvisor', 'done'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'done') }),
    row({ bench, metric: 'Gemini CLI (ACP): parent CPU per event, p50', value: p50('subvisor', 'cpuPerEventUs'), unit: 'us', baseline: sdkName, baselineValue: p50('sdk', 'cpuPerEventUs') }),
    row({ bench, metric: 'Gemini CLI (ACP): parent CPU per turn, p50', value: p50('subvisor', 'cpuMs'), unit: 'ms', baseline: sdkName, baselineValue: p50('sdk', 'cpuMs') }),
    row({ bench, metric: 'Gemini CLI (ACP): events per turn, p50', value: p50('subvisor', 'events'), unit: 'events', baseline: sdkName, baselineValue: p50('sdk', 'events') }),
    row({ bench, metric: `Gemini CLI (ACP): cancel mid-command until no process of the tree is left, p50 (${GONE_BOUND_MS} when some are left)`, value: gone('subvisor'), unit: 'ms', baseline: sdkName, baselineValue: gone('sdk') }),
    row({ bench, metric: `Gemini CLI (ACP): processes of the tree left ${GONE_BOUND_MS / 1000} s after cancel, max`, value: left('subvisor'), unit: 'processes', baseline: sdkName, baselineValue: left('sdk') }),
  ];
}
