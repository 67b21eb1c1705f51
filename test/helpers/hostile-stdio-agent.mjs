#!/usr/bin/env node
// A hostile agent for the stdio JSON protocols (codex, claude-code, acp): it ignores its arguments (each protocol puts
// its own first) and does what HOSTILE_BEHAVIOUR says the moment the parent first writes to it:
//   never-ready     answers nothing, ignores SIGTERM, and has a grandchild in a session of its own that ignores it too
//   crash-mid-line  writes half a JSON line, then kills itself with SIGKILL
//   garbage-exit    writes lines no protocol accepts, then exits 3
import { spawn } from 'node:child_process';

const behaviour = process.env.HOSTILE_BEHAVIOUR;
let acted = false;

function act() {
  if (acted) return;
  acted = true;
  if (behaviour === 'never-ready') {
    process.on('SIGTERM', () => undefined);
    spawn('sh', ['-c', 'trap "" TERM; sleep 60'], { detached: true, stdio: 'ignore' }).unref();
    setInterval(() => undefined, 1000);
  } else if (behaviour === 'crash-mid-line') {
    process.stdout.write('{"id":1,"result":{"half', () => process.kill(process.pid, 'SIGKILL'));
  } else if (behaviour === 'garbage-exit') {
    process.stdout.write('not json at all\n{"unterminated": \n[1, 2, 3]\n42\n', () => process.exit(3));
  } else {
    process.stderr.write(`unknown HOSTILE_BEHAVIOUR ${behaviour}\n`);
    process.exit(2);
  }
}

process.stdin.on('data', act);
// Claude Code's parent writes first too; a parent that never writes still meets the behaviour.
setTimeout(act, 200);
