// One run, awaited, and nothing else: the process must then exit on its own (no process.exit call).
// Usage: node spawn-lone-run.mjs <stateDir> <echo|stubborn|abort>
import { spawnRun } from 'subvisor';
import { fakeChild } from 'subvisor/testing';

const [stateDir, mode] = process.argv.slice(2);

// Node itself holds an 'exit' listener while a top-level await is pending: count only what is added.
const countHandlers = () => ({
  SIGINT: process.listenerCount('SIGINT'),
  SIGTERM: process.listenerCount('SIGTERM'),
  SIGHUP: process.listenerCount('SIGHUP'),
  exit: process.listenerCount('exit'),
});
const baseline = countHandlers();

const scenarios = {
  echo: { turns: [{ answer: { echo: true, prefix: 'echo:' } }] },
  stubborn: { ignore: ['cancel', 'sigterm'], turns: [{ steps: [{ misbehave: { grandchildren: { count: 1, session: true } } }, { pause: 60_000 }] }] },
  abort: { turns: [{ steps: [{ pause: 60_000 }] }] },
};

const child = fakeChild(scenarios[mode], { turnTickMs: 5, idleTickMs: 20, transcript: false });
const controller = new AbortController();
const run = spawnRun({
  command: child.command,
  args: child.args,
  env: child.env,
  task: 'lone',
  stateDir,
  killGraceMs: 200,
  signal: controller.signal,
});
run.on('event', (event) => {
  if (event.type !== 'turn-started') return;
  if (mode === 'stubborn') void run.cancel();
  if (mode === 'abort') controller.abort();
});
const outcome = await run.outcome;
child.cleanup();
const now = countHandlers();
const handlers = Object.fromEntries(Object.entries(now).map(([name, count]) => [name, count - baseline[name]]));
process.stdout.write(`${JSON.stringify({ status: outcome.status, finalText: outcome.finalText, killed: outcome.killed, escalated: outcome.escalated, handlers })}\n`);
