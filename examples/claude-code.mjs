// examples/claude-code.mjs: the real Claude Code behind the Run API, against fakeModel (a scripted model on 127.0.0.1:
// no key, no network): it thinks, streams its answer, asks to run a Bash command (approved here), and the run ends
// with the answer, the session id, token usage and the cost Claude Code reports. Uses the pinned binary of
// `npm run agents:install` (.agents/), else `claude` on PATH; without either it says so and exits 0.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnRun } from 'subvisor';
import { fakeModel } from 'subvisor/testing';

const pinned = join(process.cwd(), '.agents', 'node_modules', '.bin', 'claude');
const claude = existsSync(join(process.cwd(), '.agents', '.installed')) ? pinned : spawnSync('claude', ['--version']).status === 0 ? 'claude' : undefined;
if (claude === undefined) {
  console.log('Claude Code is not installed (npm run agents:install, or npm install -g @anthropic-ai/claude-code): nothing to run.');
  process.exit(0);
}

// The model's two answers: thinking, text and a call of Claude Code's Bash tool, then the text after it ran.
const model = await fakeModel({
  turns: [
    { thinking: 'The user wants a file and a greeting.', text: 'I will create the file. ', shell: 'touch hello.txt && echo made' },
    { text: 'Created hello.txt. Hello!' },
  ],
});
// ANTHROPIC_BASE_URL pointing at the model, a dummy key, a private HOME, no telemetry or update checks.
const setup = model.setup('claude-code');
const cwd = join(setup.home, 'work');
mkdirSync(cwd);

const run = spawnRun({
  protocol: 'claude-code',
  command: claude, // the default is `claude` on PATH; subvisor adds its stream-json flags
  env: setup.env,
  cwd,
  task: 'Create hello.txt, then say hello',
  // Claude Code asks before a command that writes (read-only ones it runs itself); with no `approve` it is denied.
  approve: (request) => request.kind === 'shell_command' && request.command === 'touch hello.txt && echo made',
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
