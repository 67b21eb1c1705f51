// Runs supervise end to end: arguments, task, spawnRun (or connectRun for a daemon), controls, signals, progress, output and the exit code (--tasks: batch.ts; queue: remote.ts, worker-command.ts).
import { AttachError, attachRun } from '../api/attach-run.js';
import { connectRun } from '../api/connect-run.js';
import { APPROVING_PROTOCOLS } from '../api/registry.js';
import { spawnRun } from '../api/spawn-run.js';
import type { JsonSchema, Outcome, Run, RunOptions } from '../api/types.js';
import { approveCallbackFor } from './approval-policy.js';
import { parseAttachCommandLine, parseCommandLine, type CliOptions } from './args.js';
import { runBatch } from './batch.js';
import { openControlsSource, type ControlsSource } from './controls-source.js';
import { ControlDispatcher } from './controls.js';
import { EventMarks } from './event-marks.js';
import { EXIT, exitCodeFor, type ExitCode } from './exit-codes.js';
import { helpText, usageText } from './help.js';
import { packageVersion } from '../text/package-version.js';
import { createOutputWriter, Stdout } from './output.js';
import { dataAsAnswer, readOutputSchema } from './output-schema-file.js';
import type { CliStreams } from './streams.js';
import { Progress } from './progress.js';
import { progressDisplay } from './progress-display.js';
import { stopOnSignalsAndClosedStdout, summarize, watch } from './run-report.js';
import { connectOptionsFrom, requireDirectories, sharedRunOptions } from './run-options.js';
import { parseDashboardCommandLine } from './dashboard-args.js';
import { isRemoteCommandLine, parseRemoteCommandLine, parseWorkerCommandLine } from './queue-args.js';
import { readTask, readToken } from './task-source.js';
import { terminalAsker, type TerminalAsker } from './terminal-ask.js';
import { UsageError } from './usage-error.js';

function runOptionsFrom(options: CliOptions, task: string, outputSchema: JsonSchema | undefined): RunOptions {
  const runOptions: RunOptions = {
    ...sharedRunOptions(options, outputSchema),
    task,
    keepAlive: options.keepAlive,
    // supervise owns SIGINT/SIGTERM: first = cancel with the normal backstop, second = kill now.
    handleParentSignals: false,
  };
  if (options.runId !== undefined) runOptions.runId = options.runId;
  if (options.durableLeaseMs !== undefined) runOptions.durable = { leaseMs: options.durableLeaseMs };
  return runOptions;
}

async function supervise(options: CliOptions, streams: CliStreams): Promise<ExitCode> {
  requireDirectories(options);
  const outputSchema = options.outputSchema === undefined ? undefined : await readOutputSchema(options.outputSchema);
  if (options.tasks !== undefined) return runBatch(options, options.tasks, streams, outputSchema);
  // Re-attaching to a fuseraft serve task, or to a durable run, sends no task.
  const reattach = (options.protocol === 'fuseraft-serve' && options.sessionId !== undefined) || options.attachRunId !== undefined;
  const task = reattach ? undefined : await readTask({ task: options.task, taskFile: options.taskFile, stdin: streams.stdin, stdinIsTTY: streams.stdinIsTTY });
  const token = options.tokenFile === undefined ? undefined : await readToken(options.tokenFile);
  // Before the run starts: nothing the run sets off may come while this is loading.
  const display = await progressDisplay(streams.stderr.isTTY === true, options.quiet);

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
  const approves = APPROVING_PROTOCOLS.includes(options.protocol);
  if (approves && options.approve === 'ask' && streams.stdinIsTTY) {
    asker = terminalAsker(streams.stdin, streams.stderr, () => progress.hold());
  }
  const approve = approves ? approveCallbackFor(options.approve, asker?.ask, (text) => progress.say(text)) : undefined;

  let run: Run;
  try {
    run = options.attachRunId !== undefined
      ? attachRun({
          runId: options.attachRunId,
          ...(options.stateDir === undefined ? {} : { stateDir: options.stateDir }),
          ...(options.journal === undefined ? {} : { journal: options.journal }),
          handleParentSignals: false,
        })
      : options.connect
      ? connectRun({ ...connectOptionsFrom(options, task?.text, token, outputSchema), ...(approve === undefined ? {} : { approve }) })
      : spawnRun({ ...runOptionsFrom(options, task!.text, outputSchema), ...(approve === undefined ? {} : { approve }) });
  } catch (error) {
    controls?.close();
    if (error instanceof AttachError) {
      streams.stderr.write(`supervise: cannot attach to run ${error.runId} (${error.code}): ${error.message}\n`);
      return EXIT.notStarted;
    }
    throw new UsageError(`cannot start the run: ${(error as Error).message}`);
  }
  const stdout = new Stdout(streams.stdout);
  const writer = createOutputWriter(options.output, stdout);
  const progress = new Progress(display, streams.stderr);
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
  // With a schema, text mode prints the validated value (one line of JSON), never an answer that did not match.
  await writer.outcome(outputSchema !== undefined && options.output === 'text' ? dataAsAnswer(outcome) : outcome);

  const code = exitCodeFor({ status: outcome.status, notStarted: outcome.spawnFailed, errorCode: outcome.errorCode });
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
    if (argv[0] === 'attach') return await supervise(parseAttachCommandLine(argv.slice(1)), streams);
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
