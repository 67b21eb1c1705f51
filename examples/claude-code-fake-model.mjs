// examples/claude-code-fake-model.mjs: the real Claude Code against a scripted model on loopback: no key, no network, no bill.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { fakeModel } from 'subvisor/testing';

// Claude Code from `npm run agents:install` (this repository), else `claude` on PATH.
const claude = [fileURLToPath(new URL('../.agents/node_modules/.bin/claude', import.meta.url)), 'claude'].find(
  (command) => spawnSync(command, ['--version'], { stdio: 'ignore' }).status === 0,
);
if (claude === undefined) {
  console.log('Claude Code is not installed (npm run agents:install): nothing to run.');
  process.exit(0);
}

// The model's answers, one per request Claude Code makes: thinking and text, then a call of its Bash tool.
const model = await fakeModel({
  turns: [
    { thinking: 'A greeting is asked for.', text: 'Hello from a scripted model.' },
    { shell: 'echo tool ran' },
    { text: 'The tool said: tool ran.' },
  ],
});
const setup = model.setup('claude-code'); // ANTHROPIC_BASE_URL, a key, a private HOME, no telemetry
const cwd = mkdtempSync(join(tmpdir(), 'claude-example-'));
const env = { ...process.env };
for (const [key, value] of Object.entries(setup.env)) {
  if (value === undefined) delete env[key];
  else env[key] = value;
}
const child = spawn(claude, ['--output-format', 'stream-json', '--input-format', 'stream-json', '--verbose'], { cwd, env });
const lines = createInterface({ input: child.stdout });
const send = (text) => child.stdin.write(`${JSON.stringify({ type: 'user', message: { role: 'user', content: text }, parent_tool_use_id: null, session_id: '' })}\n`);
const answers = [];

try {
  send('Say hello');
  for await (const line of lines) {
    const message = JSON.parse(line);
    if (message.type !== 'result') continue;
    answers.push(message.result);
    if (answers.length === 1) send('Run echo');
    else break;
  }
  child.stdin.end();
  await new Promise((resolve) => child.once('exit', resolve));

  assert.deepEqual(answers, ['Hello from a scripted model.', 'The tool said: tool ran.']);
  // What reached the model: the prompts, and the tool's output.
  assert.equal(model.turnRequests[0].userText, 'Say hello');
  assert.equal(model.turnRequests[2].toolResults[0].output, 'tool ran');
  console.log(answers.join('\n'));
} finally {
  child.kill('SIGKILL');
  await model.close(); // also removes the private HOME
  rmSync(cwd, { recursive: true, force: true });
}
