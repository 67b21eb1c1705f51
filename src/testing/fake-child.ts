#!/usr/bin/env node
// The subvisor-fake-child program: a scripted child speaking Fen's wire protocol exactly like `fen --presenter rpc`.
import { applyKit, configFrom, USAGE, UsageError } from './child/config.js';
import { KIT_FLAG } from './child-env.js';
import { GRANDCHILD_FLAG, runGrandchild } from './process/grandchild.js';
import { HOG_FLAG, runHog } from './process/hog.js';
import { FakeChildRun } from './child/run.js';
import { ReplayChildRun } from './replay/replay-child.js';

function main(argv: string[]): void {
  if (argv[0] === GRANDCHILD_FLAG) return runGrandchild(argv.slice(1));
  if (argv[0] === HOG_FLAG) return runHog(argv.slice(1));
  if (argv[0]?.startsWith(KIT_FLAG) === true) {
    applyKit(argv[0].slice(KIT_FLAG.length));
    argv = argv.slice(1);
  }
  if (argv[0] === '--help' || argv[0] === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = configFrom(argv[0], process.env);
  if (config.scenario.replay !== undefined) new ReplayChildRun(config, config.scenario.replay).start();
  else new FakeChildRun(config).start();
}

try {
  main(process.argv.slice(2));
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`subvisor-fake-child: ${message}\n${error instanceof UsageError ? `${USAGE}\n` : ''}`);
  process.exit(1);
}
