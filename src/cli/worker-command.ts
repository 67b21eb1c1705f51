// supervise worker: a queue worker process that runs the profiles of a file until SIGTERM/SIGINT (twice: hand back at once).
import { readProfilesFile } from '../queue/profiles.js';
import { startWorker } from '../queue/worker.js';
import type { WorkerOptions, WorkerProfile } from '../queue/types.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import type { CliStreams } from './streams.js';
import type { WorkerCliOptions } from './queue-args.js';
import { oncePerMessage } from './once-per-message.js';
import { handleSignals } from './signals.js';
import { UsageError } from './usage-error.js';

/** Starts the worker and resolves with 0 once a signal closed it and every run it held ended or went back. */
export async function runWorkerCommand(options: WorkerCliOptions, streams: CliStreams): Promise<ExitCode> {
  let profiles: Record<string, WorkerProfile>;
  try {
    profiles = readProfilesFile(options.profiles);
  } catch (error) {
    throw new UsageError(`--profiles: ${(error as Error).message}`);
  }
  const say = (text: string) => {
    if (!options.quiet) streams.stderr.write(`supervise worker: ${text}\n`);
  };
  const workerOptions: WorkerOptions = {
    connection: options.redis,
    queue: options.queue,
    profiles,
    concurrency: options.concurrency,
    shutdown: options.shutdown,
  };
  const optional: Partial<WorkerOptions> = {
    prefix: options.prefix,
    lockDurationMs: options.lockDurationMs,
    stalledIntervalMs: options.stalledIntervalMs,
    maxStalledCount: options.maxStalledCount,
    shutdownGraceMs: options.shutdownGraceMs,
    name: options.name,
    stateDir: options.stateDir,
  };
  for (const [key, value] of Object.entries(optional)) if (value !== undefined) Object.assign(workerOptions, { [key]: value });
  let worker;
  try {
    worker = startWorker(workerOptions);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  // Errors (Redis down, a bad job) are reported once per distinct message: a reconnect loop repeats them.
  worker.on('error', oncePerMessage((message) => streams.stderr.write(`supervise worker: ${message}\n`)));
  worker.on('start', (runId, attempt) => say(`run ${runId} started (attempt ${attempt})`));
  worker.on('end', (runId, outcome, handedBack) => say(`run ${runId} ${handedBack ? 'handed back to the queue' : `ended ${outcome?.status ?? '(lost its lock)'}`}`));

  const stopped = new Promise<void>((resolve) => {
    const removeSignalHandlers = handleSignals({
      cancel: (signal) => {
        say(`${signal}: taking no new runs; ${options.shutdown === 'finish' ? 'letting the running ones end (send it again to hand them back)' : 'handing the running ones back'}`);
        void worker.close(options.shutdown).then(() => {
          removeSignalHandlers();
          resolve();
        });
      },
      killNow: (signal) => {
        say(`${signal} again: handing the running runs back to the queue now`);
        void worker.close('hand-back');
      },
    });
  });
  await worker.ready();
  say(`${worker.name} ready on queue ${options.queue} (profiles: ${Object.keys(profiles).join(', ')}; concurrency ${options.concurrency})`);
  await stopped;
  say('stopped');
  return EXIT.done;
}
