#!/usr/bin/env node
// The subvisor-fake-mew program: `subvisor-fake-mew daemon --port HOST:PORT [--scenario S]`, a fake `mew daemon` as a process.
import { loadScenarioObject } from './process/scenario-source.js';
import { isMewBuiltinScenarioName, MEW_BUILTIN_SCENARIOS } from './mew/builtins.js';
import type { MewDaemonScenario } from './mew/scenario.js';
import { fakeMewDaemon } from './mew/server.js';
import { HOG_FLAG, runHog, startHog } from './process/hog.js';
import type { HogSpec } from './process/hog.js';

const USAGE = `usage: subvisor-fake-mew daemon --port HOST:PORT [--scenario NAME|FILE.json|env] [--listen-delay MS] [--ignore-sigterm] [--hog JSON]

A fake mew daemon for tests: it listens for WebSocket clients on HOST:PORT and plays the scenario
(built-in: ${Object.keys(MEW_BUILTIN_SCENARIOS).join(', ')}; default chat).
--listen-delay MS   start listening only after MS (a daemon that takes time to boot)
--ignore-sigterm    ignore SIGTERM (only SIGKILL ends it), to test a supervisor's kill ladder
--hog JSON          first of all, start a hog grandchild ({"allocateBytes","spinMs","processes","lifeMs"}), to test a supervisor's limits`;

interface DaemonArgs {
  host: string;
  port: number;
  scenario: MewDaemonScenario;
  listenDelayMs: number;
  ignoreSigterm: boolean;
  hog?: HogSpec;
}

class UsageError extends Error {}

function parse(argv: string[]): DaemonArgs {
  if (argv[0] !== 'daemon') throw new UsageError(argv[0] === undefined ? 'missing command' : `unknown command ${argv[0]}`);
  const args: DaemonArgs = { host: '127.0.0.1', port: 0, scenario: MEW_BUILTIN_SCENARIOS.chat, listenDelayMs: 0, ignoreSigterm: false };
  for (let i = 1; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new UsageError(`${flag} needs a value`);
      return next;
    };
    if (flag === '--port') {
      const match = /^(.+):(\d+)$/.exec(value());
      if (match === null) throw new UsageError('--port takes HOST:PORT');
      args.host = match[1]!;
      args.port = Number(match[2]);
    } else if (flag === '--scenario') {
      const name = value();
      args.scenario = isMewBuiltinScenarioName(name) ? MEW_BUILTIN_SCENARIOS[name] : (loadScenarioObject(name, (message) => new UsageError(message)) as MewDaemonScenario);
    } else if (flag === '--listen-delay') {
      args.listenDelayMs = Number(value());
      if (!Number.isFinite(args.listenDelayMs) || args.listenDelayMs < 0) throw new UsageError('--listen-delay takes milliseconds');
    } else if (flag === '--ignore-sigterm') {
      args.ignoreSigterm = true;
    } else if (flag === '--hog') {
      args.hog = JSON.parse(value()) as HogSpec;
    } else {
      throw new UsageError(`unknown option ${flag}`);
    }
  }
  return args;
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === '--help' || argv[0] === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (argv[0] === HOG_FLAG) return runHog(argv.slice(1));
  const args = parse(argv);
  if (args.ignoreSigterm) process.on('SIGTERM', () => process.stderr.write('subvisor-fake-mew: ignoring SIGTERM\n'));
  if (args.hog !== undefined) {
    const report = await startHog(args.hog);
    process.stderr.write(`subvisor-fake-mew: hog ${report.pid ?? 'failed'}${report.error === undefined ? '' : `: ${report.error}`}\n`);
  }
  if (args.listenDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, args.listenDelayMs));
  const daemon = await fakeMewDaemon(args.scenario, { host: args.host, port: args.port });
  process.stderr.write(`subvisor-fake-mew: listening on ${daemon.url.replace('127.0.0.1', args.host)}\n`);
  if (!args.ignoreSigterm) process.once('SIGTERM', () => void daemon.close().then(() => process.exit(0)));
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`subvisor-fake-mew: ${message}\n${error instanceof UsageError ? `\n${USAGE}\n` : ''}`);
  process.exit(error instanceof UsageError ? 64 : 1);
});
