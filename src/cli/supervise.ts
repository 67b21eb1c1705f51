#!/usr/bin/env node
// The supervise bin: wires the process streams into main() and exits with its code once stdout has drained.
import { isatty } from 'node:tty';
import { main } from './main.js';

// A closed stderr (supervise 2>&- or a reader that left) must not crash the run.
process.stderr.on('error', () => undefined);

const code = await main(process.argv.slice(2), {
  stdin: () => process.stdin,
  stdinIsTTY: isatty(0),
  stdout: process.stdout,
  stderr: process.stderr,
});
process.exitCode = code;
// Everything was written and flushed by now; if a stray handle still held the event loop, do not hang the
// caller's pipeline: exit shortly after, with the same code.
setTimeout(() => process.exit(code), 2000).unref();
