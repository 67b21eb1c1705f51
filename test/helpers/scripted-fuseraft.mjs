#!/usr/bin/env node
// A minimal scripted fuseraft child for the driver's end-to-end tests: runs the JSON steps in SCRIPTED_FUSERAFT.
//
// Steps (run in order):
//   {"send": {...}}            write one frame as a JSON line
//   {"raw": "text"}            write one raw stdout line (noise)
//   {"big": n, "type": t}      write a frame {type: t, text: "x" * n} (an overlong line)
//   {"read": "type"}           wait for the next stdin line; it must be JSON of that type, and is echoed
//                              back as {"type":"echo","line":{...}} (so tests see what the driver sent)
//   {"eof": true}              wait for stdin to end (lines read meanwhile are echoed)
//   {"sleep": ms}
//   {"exit": code}             exit now with that code
//   {"kill": "SIGKILL"}        die by that signal (a crash)
//   {"grandchild": true}       start a grandchild that ignores SIGTERM and sleeps (stays in the tree);
//                              announced as {"type":"grandchild","pid":N}; "setsid": the same in a session
//                              of its own (no longer in the child's process group)
//   {"argv": true}             write {"type":"argv","argv":[...]} (the arguments after the script)
//   {"env": "NAME"}            write {"type":"env","name":"NAME","value":...} (null when unset)
//   {"ignore": ["SIGTERM"]}    ignore these signals from now on
//   {"onSigint": [...steps]}   on SIGINT, run these steps instead of dying
// A read that meets end of input exits with code 9. After the last step the process exits 0.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const steps = JSON.parse(process.env.SCRIPTED_FUSERAFT ?? '[]');
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
const queue = [];
let waiting;
let ended = false;
lines.on('line', (line) => {
  if (waiting) {
    const resolve = waiting;
    waiting = undefined;
    resolve(line);
  } else queue.push(line);
});
lines.on('close', () => {
  ended = true;
  if (waiting) {
    const resolve = waiting;
    waiting = undefined;
    resolve(undefined);
  }
});

const nextLine = () => (queue.length > 0 ? Promise.resolve(queue.shift()) : ended ? Promise.resolve(undefined) : new Promise((resolve) => (waiting = resolve)));
const write = (frame) => process.stdout.write(`${typeof frame === 'string' ? frame : JSON.stringify(frame)}\n`);
const echo = (line) => {
  let parsed;
  try {
    parsed = JSON.parse(line);
  } catch {
    parsed = { unparsable: line };
  }
  write({ type: 'echo', line: parsed });
  return parsed;
};

async function run(list) {
  for (const step of list) {
    if ('send' in step) write(step.send);
    else if ('raw' in step) write(step.raw);
    else if ('big' in step) write({ type: step.type, text: 'x'.repeat(step.big) });
    else if ('read' in step) {
      const line = await nextLine();
      if (line === undefined) process.exit(9);
      const parsed = echo(line);
      if (parsed.type !== step.read) {
        write({ type: 'error', text: `script expected ${step.read}, got ${parsed.type}` });
        process.exit(8);
      }
    } else if ('eof' in step) {
      for (let line = await nextLine(); line !== undefined; line = await nextLine()) echo(line);
    } else if ('sleep' in step) await new Promise((resolve) => setTimeout(resolve, step.sleep));
    else if ('exit' in step) process.exit(step.exit);
    else if ('kill' in step) process.kill(process.pid, step.kill);
    else if ('grandchild' in step) {
      const grandchild = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: 'ignore', detached: step.grandchild === 'setsid' });
      grandchild.unref();
      write({ type: 'grandchild', pid: grandchild.pid });
    } else if ('argv' in step) write({ type: 'argv', argv: process.argv.slice(2) });
    else if ('env' in step) write({ type: 'env', name: step.env, value: process.env[step.env] ?? null }); else if ('ignore' in step) for (const signal of step.ignore) process.on(signal, () => undefined);
    else if ('onSigint' in step) process.on('SIGINT', () => void run(step.onSigint));
  }
}

await run(steps);
process.exit(0);
