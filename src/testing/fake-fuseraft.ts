#!/usr/bin/env node
// The subvisor-fake-fuseraft program: a scripted fuseraft speaking its live-session JSONL (`repl --vscode`, `run --bridge`).
import { FuseraftBridge } from './fuseraft/bridge.js';
import { FUSERAFT_USAGE, FuseraftUsageError, parseFuseraftArgs } from './fuseraft/args.js';
import { sessionConfigFrom } from './fuseraft/config.js';
import { FuseraftRepl } from './fuseraft/repl.js';
import { GRANDCHILD_FLAG, runGrandchild } from './process/grandchild.js';
import { HOG_FLAG, runHog } from './process/hog.js';

/** A scenario that cannot be loaded is the fake's own failure (fuseraft's command-line errors exit 1). */
const EXIT_BAD_SCENARIO = 2;

function main(argv: string[]): void {
  if (argv[0] === GRANDCHILD_FLAG) return runGrandchild(argv.slice(1));
  if (argv[0] === HOG_FLAG) return runHog(argv.slice(1));
  const command = parseFuseraftArgs(argv);
  if (command.kind === 'help') {
    process.stdout.write(`${FUSERAFT_USAGE}\n`);
    return;
  }
  if (command.kind === 'repl') {
    new FuseraftRepl(sessionConfigFrom('repl', command.scenario, argv, process.env)).start();
    return;
  }
  const target = { config: command.config, ...(command.task === undefined ? {} : { task: command.task }), ...(command.resume === undefined ? {} : { resume: command.resume }) };
  new FuseraftBridge(sessionConfigFrom('bridge', command.scenario, argv, process.env), target).start();
}

try {
  main(process.argv.slice(2));
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof FuseraftUsageError) {
    process.stderr.write(`${message}\n\n${FUSERAFT_USAGE}\n`);
    process.exit(1);
  }
  process.stderr.write(`subvisor-fake-fuseraft: ${message}\n`);
  process.exit(EXIT_BAD_SCENARIO);
}
