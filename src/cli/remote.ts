// supervise --redis URL --queue NAME --profile NAME: one run on a queue worker, shown and controlled like a local one.
import { createQueueSupervisor } from '../queue/producer.js';
import type { RemoteRun, RemoteSpawnOptions } from '../queue/types.js';
import type { Outcome } from '../api/types.js';
import { openControlsSource, type ControlsSource } from './controls-source.js';
import { ControlDispatcher, type ControlTarget } from './controls.js';
import { EventMarks } from './event-marks.js';
import { EXIT, exitCodeFor, type ExitCode } from './exit-codes.js';
import type { CliStreams } from './streams.js';
import { createOutputWriter, Stdout } from './output.js';
import { oncePerMessage } from './once-per-message.js';
import { Progress } from './progress.js';
import { progressDisplay } from './progress-display.js';
import type { RemoteCliOptions } from './queue-args.js';
import { stopOnSignalsAndClosedStdout, summarize, watch } from './run-report.js';
import { readTask } from './task-source.js';
import { UsageError } from './usage-error.js';

/** Runs the task on a queue worker; resolves with supervise's exit code for its outcome. */
export async function superviseRemote(options: RemoteCliOptions, streams: CliStreams): Promise<ExitCode> {
  const task = await readTask({ task: options.task, taskFile: options.taskFile, stdin: streams.stdin, stdinIsTTY: streams.stdinIsTTY });
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
  const spawnOptions: RemoteSpawnOptions = { profile: options.profile, task: task.text, keepAlive: options.keepAlive };
  if (options.runId !== undefined) spawnOptions.runId = options.runId;
  if (options.timeoutMs !== undefined) spawnOptions.timeoutMs = options.timeoutMs;
  if (options.attempts !== undefined) spawnOptions.attempts = options.attempts;

  const progress = new Progress(await progressDisplay(streams.stderr.isTTY === true, options.quiet), streams.stderr);
  const qs = createQueueSupervisor(options.prefix === undefined ? { connection: options.redis, queue: options.queue } : { connection: options.redis, queue: options.queue, prefix: options.prefix });
  // Redis unreachable is worth one line per distinct problem, not one per reconnect.
  qs.onError(oncePerMessage((message) => progress.say(`queue: ${message}`)));
  let run: RemoteRun;
  try {
    run = qs.spawn(spawnOptions);
  } catch (error) {
    controls?.close();
    await qs.close();
    throw new UsageError(`cannot enqueue the run: ${(error as Error).message}`);
  }
  const stdout = new Stdout(streams.stdout);
  const writer = createOutputWriter(options.output, stdout);
  const marks = new EventMarks();
  const source = options.controls === '-' ? 'stdin' : (options.controls ?? 'controls');
  dispatcher = new ControlDispatcher(startedTarget(run), { say: (text) => progress.say(text), source, writer, marks });
  progress.started(run.id, undefined);
  progress.inform(`queued on ${options.queue} as profile ${options.profile}`);
  run.on('state', (state) => progress.state(state));
  run.on('attempt', (attempt, worker) => progress.inform(`attempt ${attempt} started on worker ${worker}`));

  const removeSignalHandlers = stopOnSignalsAndClosedStdout(run, progress, stdout);

  let outcome: Outcome;
  try {
    await watch(run, progress, writer, marks);
  } finally {
    outcome = await run.outcome;
    controls?.close();
    removeSignalHandlers();
  }
  await dispatcher.settled();
  await qs.close();
  progress.stop();
  summarize(outcome, progress);
  await writer.outcome(outcome);
  const code = exitCodeFor({ status: outcome.status, notStarted: outcome.spawnFailed, errorCode: outcome.errorCode });
  if (stdout.isGone && code === EXIT.done) {
    progress.say('stdout closed before the answer was written');
    return EXIT.failed;
  }
  return code;
}

/**
 * The run as the controls file sees it: like a local run's control file, a control read before the run
 * started (while it waits in the queue) is sent once a worker has started it, instead of being refused.
 */
function startedTarget(run: RemoteRun): ControlTarget {
  const started = new Promise<void>((resolve) => {
    if (run.attempt > 0) resolve();
    run.once('attempt', () => resolve());
    void run.outcome.then(() => resolve());
  });
  const after = <T>(send: () => Promise<T>) => started.then(send);
  return {
    prompt: (text) => after(() => run.prompt(text)),
    steer: (text) => after(() => run.steer(text)),
    followUp: (text) => after(() => run.followUp(text)),
    finalize: (note) => after(() => run.finalize(note)),
    cancel: () => run.cancel(),
    close: () => after(() => run.close()),
  };
}
