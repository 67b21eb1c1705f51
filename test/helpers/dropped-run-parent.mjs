// A parent (run with --expose-gc) that awaits a flooding run's outcome without iterating it, drops the handle, and reports its open event-file descriptors before and after a GC.
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnRun } from '../../dist/index.js';

const child = fileURLToPath(new URL('./hostile-fen-child.mjs', import.meta.url));
const stateDir = mkdtempSync(join(tmpdir(), 'subvisor-dropped-'));

function eventFileDescriptors() {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(stateDir)) count++;
    } catch {
      // closed meanwhile
    }
  }
  return count;
}

async function runAndDrop() {
  const steps = [{ ready: true }, { ack: 'task' }, { flood: { count: 5_000, bytes: 1024 } }, { result: 'flooded' }, { exit: 'done' }];
  const run = spawnRun({ command: process.execPath, args: [child, JSON.stringify({ steps })], task: 'go', stateDir, highWaterMark: 100, killGraceMs: 300 });
  let published = 0;
  run.on('event', () => published++);
  const outcome = await run.outcome;
  return { status: outcome.status, published };
}

const { status, published } = await runAndDrop();
const afterOutcome = eventFileDescriptors();
let afterGc = afterOutcome;
for (let attempt = 0; attempt < 50 && afterGc > 0; attempt++) {
  globalThis.gc();
  await new Promise((resolve) => setTimeout(resolve, 20));
  afterGc = eventFileDescriptors();
}
const leftovers = readdirSync(stateDir);
rmSync(stateDir, { recursive: true, force: true });
process.stdout.write(JSON.stringify({ status, published, afterOutcome, afterGc, leftovers }));
