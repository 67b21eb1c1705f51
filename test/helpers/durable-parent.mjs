// A parent that starts one durable run and waits to be killed: it prints {"pid","runId","events"} once the first turn started (and completed, with "turns").
// Usage: node durable-parent.mjs '<{"child":{command,args,env},"stateDir","runId","leaseMs","killGraceMs","keepAlive"}>'
import { spawnRun } from '../../dist/index.js';

const { child, stateDir, runId, leaseMs, killGraceMs = 500, keepAlive = false } = JSON.parse(process.argv[2]);
const run = spawnRun({ ...child, task: 'durable task', stateDir, runId, killGraceMs, keepAlive, durable: { leaseMs } });
let events = 0;
run.on('event', (event) => {
  events++;
  if (event.type === 'turn-started' || event.type === 'turn-complete') {
    process.stdout.write(`${JSON.stringify({ type: event.type, pid: run.pid, runId: run.id, events, seq: event.seq })}\n`);
  }
});
// Stays alive until killed, as a parent in the middle of its work.
setInterval(() => {}, 1000);
