// examples/codex.mjs: the real Codex (codex app-server) behind the Run API, against fakeModel (a scripted model on
// 127.0.0.1: no key, no network): it reasons, streams its answer, asks to run a command (approved here), and the run
// ends with the answer, the thread id and token usage. Uses the pinned binary of `npm run agents:install` (.agents/),
// else `codex` on PATH; without either it says so and exits 0.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnRun } from 'subvisor';
import { fakeModel } from 'subvisor/testing';

const pinned = join(process.cwd(), '.agents', 'node_modules', '.bin', 'codex');
const codex = existsSync(join(process.cwd(), '.agents', '.installed')) ? pinned : spawnSync('codex', ['--version']).status === 0 ? 'codex' : undefined;
if (codex === undefined) {
  console.log('Codex is not installed (npm run agents:install, or npm install -g @openai/codex): nothing to run.');
  process.exit(0);
}

// The model's two answers: reasoning, text and a command (Codex's exec_command tool), then the text after it ran.
const model = await fakeModel({
  turns: [
    { thinking: 'The user wants a file and a greeting.', text: 'I will create the file. ', shell: 'touch hello.txt && echo made' },
    { text: 'Created hello.txt. Hello!' },
  ],
});
// A private HOME and CODEX_HOME whose config.toml points Codex at the model (a provider of its own, a dummy key).
const setup = model.setup('codex');
const cwd = join(setup.home, 'work');
mkdirSync(cwd);

const run = spawnRun({
  protocol: 'codex',
  command: codex, // the default is `codex` on PATH; subvisor runs `codex app-server`
  env: setup.env,
  cwd,
  task: 'Create hello.txt, then say hello',
  // subvisor asks Codex for approvalPolicy "untrusted": a command that is not a known-safe read is asked about here,
  // and declined when there is no `approve`.
  approve: (request) => request.kind === 'shell_command' && request.command.includes('touch hello.txt'),
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
await model.close(); // removes the private HOME (and the folders Codex's sandbox left in the cwd)
process.exitCode = outcome.status === 'done' ? 0 : 1;
