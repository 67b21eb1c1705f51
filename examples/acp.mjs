// examples/acp.mjs: an Agent Client Protocol agent (the real Gemini CLI, `gemini --acp`) behind the Run API, against
// fakeModel (a scripted model on 127.0.0.1: no key, no network): it thinks, streams its answer, asks to run a command
// (approved here), and the run ends with the answer, the session id and token usage. Uses the pinned binary of
// `npm run agents:install` (.agents/), else `gemini` on PATH; without either it says so and exits 0.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnRun } from 'subvisor';
import { fakeModel } from 'subvisor/testing';

const pinned = join(process.cwd(), '.agents', 'node_modules', '.bin', 'gemini');
const gemini = existsSync(join(process.cwd(), '.agents', '.installed')) ? pinned : spawnSync('gemini', ['--version']).status === 0 ? 'gemini' : undefined;
if (gemini === undefined) {
  console.log('Gemini CLI is not installed (npm run agents:install, or npm install -g @google/gemini-cli): nothing to run.');
  process.exit(0);
}

// The model's two answers: a thought, text and a command (Gemini CLI's run_shell_command tool), then the text after it ran.
const model = await fakeModel({
  turns: [
    { thinking: 'The user wants a file and a greeting.', text: 'I will create the file. ', shell: 'touch hello.txt && echo made' },
    { text: 'Created hello.txt. Hello!' },
  ],
});
// A private HOME whose settings point Gemini CLI at the model (GOOGLE_GEMINI_BASE_URL, a dummy key).
const setup = model.setup('gemini');
const cwd = join(setup.home, 'work');
mkdirSync(cwd);

const run = spawnRun({
  protocol: 'acp',
  command: gemini, // each ACP agent has its own command: there is no default
  args: ['--acp'], // and its own flag: `qwen --acp`, `opencode acp`, `goose acp`, `kimi acp`...
  env: setup.env,
  cwd,
  task: 'Create hello.txt, then say hello',
  // Gemini CLI asks (session/request_permission) before a command: approved here, denied (reject_once) without `approve`.
  approve: (request) => request.kind === 'tool_call' && request.title.includes('touch hello.txt'),
  timeoutMs: 120_000,
});
for await (const event of run) {
  if (event.type === 'assistant-text-delta') process.stdout.write(event.delta ?? '');
  if (event.type === 'tool-call') console.log(`\n  [tool call: ${event.name} ${JSON.stringify(event.arguments)}]`);
  if (event.type === 'tool-result') console.log(`  [tool result: ${JSON.stringify(event.result)}]`);
}

const outcome = await run.outcome;
console.log('\n\nanswer:', outcome.finalText);
console.log('outcome:', { status: outcome.status, sessionId: outcome.sessionId, turns: outcome.turns, usage: outcome.usage, fileMade: existsSync(join(cwd, 'hello.txt')) });
await model.close(); // removes the private HOME
process.exitCode = outcome.status === 'done' ? 0 : 1;
