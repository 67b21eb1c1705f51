// supervise dashboard: a live page of a queue's runs until a signal, or of a --tasks batch, which stays up after the batch until a signal.
import { createQueueSupervisor } from '../queue/producer.js';
import type { Dashboard, DashboardOptions } from '../dashboard/types.js';
import type { Supervisor } from '../pool/types.js';
import { parseCommandLine } from './args.js';
import { runBatch } from './batch.js';
import { readOutputSchema } from './output-schema-file.js';
import type { DashboardCommandLine } from './dashboard-args.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import { oncePerMessage } from './once-per-message.js';
import { requireDirectories } from './run-options.js';
import { handleSignals } from './signals.js';
import type { CliStreams } from './streams.js';
import { UsageError } from './usage-error.js';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Serves the dashboard the command line asks for; resolves with the exit code once it is closed. */
export async function runDashboardCommand(command: DashboardCommandLine, streams: CliStreams): Promise<ExitCode> {
  const say = (text: string) => streams.stderr.write(`supervise: ${text}\n`);
  return command.kind === 'queue' ? queueBoard(command, say) : batchBoard(command.rest, command.board, streams, say);
}

async function queueBoard(command: Extract<DashboardCommandLine, { kind: 'queue' }>, say: (text: string) => void): Promise<ExitCode> {
  const { redis, queue, prefix } = command.queue;
  const qs = createQueueSupervisor(prefix === undefined ? { connection: redis, queue } : { connection: redis, queue, prefix });
  qs.onError(oncePerMessage((message) => say(`queue: ${message}`)));
  let dashboard: Dashboard;
  try {
    dashboard = await serve(() => qs.serveDashboard({ ...command.board, runs: 'queue' }));
  } catch (error) {
    await qs.close();
    throw error;
  }
  say(`dashboard of queue ${queue} at ${dashboard.url}`);
  say('it follows every run of the queue; Ctrl-C (SIGINT or SIGTERM) stops it (the runs go on)');
  await nextSignal();
  await dashboard.close();
  await qs.close();
  return EXIT.done;
}

async function batchBoard(argv: string[], board: DashboardOptions, streams: CliStreams, say: (text: string) => void): Promise<ExitCode> {
  const parsed = parseCommandLine(argv);
  if (parsed.kind !== 'run' || parsed.options.tasks === undefined) {
    throw new UsageError('supervise dashboard --tasks FILE takes the options of a batch (supervise --tasks): see supervise --help.');
  }
  const { options } = parsed;
  requireDirectories(options);
  let dashboard: Dashboard | undefined;
  const served = async (pool: Supervisor) => {
    dashboard = await serve(() => pool.serveDashboard(board));
    say(`dashboard at ${dashboard.url}`);
  };
  // A batch stopped by a signal ends the command; one that ran to its end leaves its page up to be read.
  let interrupted = false;
  const onSignal = () => (interrupted = true);
  for (const signal of SIGNALS) process.on(signal, onSignal);
  let code: ExitCode;
  try {
    const outputSchema = options.outputSchema === undefined ? undefined : await readOutputSchema(options.outputSchema);
    code = await runBatch(options, options.tasks!, streams, outputSchema, served);
  } finally {
    for (const signal of SIGNALS) process.off(signal, onSignal);
  }
  if (!interrupted) {
    say('the batch is over; the dashboard stays up until Ctrl-C (SIGINT or SIGTERM)');
    await nextSignal();
  }
  await dashboard?.close();
  return code;
}

/** Serves a dashboard; a refused option (a host that is not loopback, a port in use) is a usage error. */
async function serve(start: () => Promise<Dashboard>): Promise<Dashboard> {
  try {
    return await start();
  } catch (error) {
    throw new UsageError(`cannot serve the dashboard: ${(error as Error).message}`);
  }
}

/** Resolves at the next SIGINT, SIGTERM or SIGHUP. */
function nextSignal(): Promise<void> {
  return new Promise((resolve) => {
    const remove = handleSignals({
      cancel: () => {
        remove();
        resolve();
      },
      killNow: () => undefined,
    });
  });
}
