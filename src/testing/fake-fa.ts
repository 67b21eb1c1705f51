#!/usr/bin/env node
// The subvisor-fake-fa program: a scripted `fa` that answers one headless prompt over HEP v1 (or prose), like fa does.
import { FA_USAGE, FA_USAGE_EXIT, FaUsageError, parseFaArgs } from './fa/args.js';
import { faConfigFrom } from './fa/config.js';
import { FA_DEFAULT_VERSION, FakeFaRun } from './fa/program.js';
import { GRANDCHILD_FLAG, runGrandchild } from './process/grandchild.js';
import { HOG_FLAG, runHog } from './process/hog.js';

/** A scenario that cannot be loaded is the fake's own failure, kept apart from fa's exit codes (0, 1, 64, 130). */
const EXIT_BAD_SCENARIO = 2;

function main(argv: string[]): void {
  if (argv[0] === GRANDCHILD_FLAG) return runGrandchild(argv.slice(1));
  if (argv[0] === HOG_FLAG) return runHog(argv.slice(1));
  const command = parseFaArgs(argv);
  if (command.kind === 'help') {
    process.stdout.write(`${FA_USAGE}\n`);
    return;
  }
  if (command.kind === 'version') {
    process.stdout.write(command.json ? `${JSON.stringify({ version: FA_DEFAULT_VERSION, hep: 'v1' })}\n` : `fa ${FA_DEFAULT_VERSION} (subvisor fake)\n`);
    return;
  }
  const run = new FakeFaRun(faConfigFrom(command.args, argv, process.env));
  run.start().catch((error: unknown) => {
    process.stderr.write(`subvisor-fake-fa: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(EXIT_BAD_SCENARIO);
  });
}

try {
  main(process.argv.slice(2));
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof FaUsageError) {
    process.stderr.write(`fa: ${message}\n${FA_USAGE}\n`);
    process.exit(FA_USAGE_EXIT);
  }
  process.stderr.write(`subvisor-fake-fa: ${message}\n`);
  process.exit(EXIT_BAD_SCENARIO);
}
