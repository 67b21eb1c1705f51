// Runs fakeChild('demo') from the BUILT package (`subvisor/testing`) with a tiny inline parent; prints a JSON report.
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeChild, KIT_FLAG } from 'subvisor/testing';

const leakCheck = process.argv[2] === '--leave-dirs';
const fake = fakeChild('demo', { turnTickMs: 5, idleTickMs: 10 });
const dir = mkdtempSync(join(tmpdir(), 'subvisor-smoke-'));
const control = join(dir, 'control.jsonl');
const events = join(dir, 'events.jsonl');
writeFileSync(events, '');
writeFileSync(control, `${JSON.stringify({ v: 1, seq: 1, type: 'prompt', run: 'smoke', text: 'Inspect the README' })}\n`);
const child = spawn(fake.command, fake.args, {
  env: { ...process.env, ...fake.env, FEN_WIRE_CONTROL_PATH: control, FEN_WIRE_EVENT_PATH: events, FEN_WIRE_RUN_ID: 'smoke' },
  stdio: 'ignore',
});
const lines = () => readFileSync(events, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line));
let closed = false;
const timer = setInterval(() => {
  if (!closed && lines().some((event) => event.type === 'turn-complete')) {
    appendFileSync(control, `${JSON.stringify({ v: 1, seq: 2, type: 'close', run: 'smoke' })}\n`);
    closed = true;
  }
}, 20);
child.on('exit', (code) => {
  clearInterval(timer);
  const all = lines();
  const result = all.find((event) => event.type === 'result');
  const transcript = fake.transcript();
  const transcriptDir = JSON.parse(fake.args[1].slice(KIT_FLAG.length)).SUBVISOR_FAKE_TRANSCRIPT_DIR;
  if (!leakCheck) fake.cleanup();
  rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify({ script: fake.args[0], code, last: all.at(-1), finalText: result?.['final-text'], finalState: transcript.finalState, transcriptDir }));
});
