// Runs supervise end to end: arguments, task, spawnRun (or connectRun for a daemon), controls, signals, progress, output and the exit code (--tasks: batch.ts; queue: remote.ts, worker-command.ts).
import { connectRun } from '../api/connect-run.js';
import { spawnRun } from '../api/spawn-run.js';
import type { Outcome, Run, RunOptions } from '../api/types.js';
import { approveCallbackFor } from './approval-policy.js';
import { parseCommandLine, type CliOptions } from './args.js';
import { runBatch } from './batch.js';
import { openControlsSource, type ControlsSource } from './controls-source.js';
import { ControlDispatcher } from './controls.js';
import { EventMarks } from './event-marks.js';
import { EXIT, exitCodeFor, type ExitCode } from './exit-codes.js';
import { helpText, packageVersion, usageText } from './help.js';
import { createOutputWriter, Stdout } from './output.js';
import type { CliStreams } from './streams.js';
import { Progress, progressModeFor } from './progress.js';
import { stopOnSignalsAndClosedStdout, summarize, watch } from './run-report.js';
import { connectOptionsFrom, requireDirectories, sharedRunOptions } from './run-options.js';
import { parseDashboardCommandLine } from './dashboard-args.js';
import { isRemoteCommandLine, parseRemoteCommandLine, parseWorkerCommandLine } from './queue-args.js';
import { readTask, readToken } from './task-source.js';
import { terminalAsker, type TerminalAsker } from './terminal-ask.js';
import { UsageError } from './usage-error.js';

function runOptionsFrom(options: CliOptions, task: string): RunOptions {
  const runOptions: RunOptions = {
    ...sharedRunOptions(options),
    task,
    keepAlive: options.keepAlive,
    // supervise owns SIGINT/SIGTERM: first = cancel with the normal backstop, second = kill now.
    handleParentSignals: false,
  };
  if (options.runId !== undefined) runOptions.runId = options.runId;
  return runOptions;
}

async function supervise(options: CliOptions, streams: CliStreams): Promise<ExitCode> {
  requireDirectories(options);
  if (options.tasks !== undefined) return runBatch(options, options.tasks, streams);
  // Re-attaching to a fuseraft serve task sends no task.
  const reattach = options.protocol === 'fuseraft-serve' && options.sessionId !== undefined;
  const task = reattach ? undefined : await readTask({ task: options.task, taskFile: options.taskFile, stdin: streams.stdin, stdinIsTTY: streams.stdinIsTTY });
  const token = options.tokenFile === undefined ? undefined : await readToken(options.tokenFile);

  // The controls source is opened before the run so that a bad path is a usage error with nothing started;
  // its lines (and its end) arrive asynchronously, once the run, the dispatcher and the progress below exist.
  let dispatcher: ControlDispatcher | undefined;
  let controls: ControlsSource | undefined;
  if (options.controls !== undefined) {
    controls = openControlsSource(options.controls, {
      line: (line) => dispatcher?.line(line),
      end: (error) => {
        if (error !== undefined) progress.say(`reading controls stopped: ${error.message}`);
      },
    });
  }

  // --approve ask needs someone at a terminal: standard input a TTY (the task then came from an option).
  // Like the controls' callbacks, these run only once the run (and the progress below) exist.
  let asker: TerminalAsker | undefined;
  const approves = options.protocol.startsWith('fuseraft') || options.protocol === 'mew';
  if (approves && options.approve === 'ask' && streams.stdinIsTTY) {
    asker = terminalAsker(streams.stdin, streams.stderr, () => progress.hold());
  }
  const approve = approves ? approveCallbackFor(options.approve, asker?.ask, (text) => progress.say(text)) : undefined;

  let run: Run;
  try {
    run = options.connect
      ? connectRun({ ...connectOptionsFrom(options, task?.text, token), ...(approve === undefined ? {} : { approve }) })
      : spawnRun({ ...runOptionsFrom(options, task!.text), ...(approve === undefined ? {} : { approve }) });
  } catch (error) {
    controls?.close();
    throw new UsageError(`cannot start the run: ${(error as Error).message}`);
  }
  const stdout = new Stdout(streams.stdout);
  const writer = createOutputWriter(options.output, stdout);
  const progress = new Progress(progressModeFor(streams.stderr.isTTY === true, options.quiet), streams.stderr);
  const marks = new EventMarks();
  const source = options.controls === '-' ? 'stdin' : (options.controls ?? 'controls');
  dispatcher = new ControlDispatcher(run, { say: (text) => progress.say(text), source, writer, marks });
  progress.started(run.id, run.pid);
  run.on('state', (state) => progress.state(state));

  const removeSignalHandlers = stopOnSignalsAndClosedStdout(run, progress, stdout);

  let outcome: Outcome;
  try {
    await watch(run, progress, writer, marks);
  } finally {
    outcome = await run.outcome;
    controls?.close();
    asker?.close();
    removeSignalHandlers();
  }
  await dispatcher.settled();
  progress.stop();
  summarize(outcome, progress);
  if (options.keepFiles) progress.say(`--keep-files: the run's control and event files are in ${run.channelDir}`);
  await writer.outcome(outcome);

  const code = exitCodeFor({ status: outcome.status, notStarted: outcome.spawnFailed });
  if (stdout.isGone && code === EXIT.done) {
    progress.say('stdout closed before the answer was written');
    return EXIT.failed;
  }
  return code;
}

/** Parses argv and runs; resolves with the exit code after everything was written. Never rejects. */
export async function main(argv: readonly string[], streams: CliStreams): Promise<ExitCode> {
  try {
    // The queue (BullMQ, ioredis) is loaded only by the commands that use it: it costs every other
    // invocation ~0.35 s of CPU at start-up.
    if (argv[0] === 'worker') {
      const options = parseWorkerCommandLine(argv.slice(1));
      const { runWorkerCommand } = await import('./worker-command.js');
      return await runWorkerCommand(options, streams);
    }
    if (argv[0] === 'dashboard') {
      const command = parseDashboardCommandLine(argv.slice(1));
      const { runDashboardCommand } = await import('./dashboard-command.js');
      return await runDashboardCommand(command, streams);
    }
    if (isRemoteCommandLine(argv)) {
      const options = parseRemoteCommandLine(argv);
      const { superviseRemote } = await import('./remote.js');
      return await superviseRemote(options, streams);
    }
    const parsed = parseCommandLine(argv);
    if (parsed.kind === 'usage') {
      streams.stderr.write(usageText());
      return EXIT.usage;
    }
    if (parsed.kind === 'help') {
      await new Stdout(streams.stdout).write(helpText());
      return EXIT.done;
    }
    if (parsed.kind === 'version') {
      await new Stdout(streams.stdout).write(`${packageVersion()}\n`);
      return EXIT.done;
    }
    return await supervise(parsed.options, streams);
  } catch (error) {
    if (error instanceof UsageError) {
      streams.stderr.write(`supervise: ${error.message}\n`);
      return EXIT.usage;
    }
    streams.stderr.write(`supervise: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return EXIT.failed;
  }
}
