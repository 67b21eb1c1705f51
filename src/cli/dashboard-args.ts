// Parses `supervise dashboard`: its own options (--port, --host, --allow-remote), then a queue (--redis URL --queue NAME) or a batch (--tasks FILE ... -- command).
import { parseArgs } from 'node:util';
import type { DashboardOptions } from '../dashboard/types.js';
import { parseArgsUsageError } from './parse-errors.js';
import { isRemoteCommandLine, queueName, redisUrl } from './queue-args.js';
import { UsageError } from './usage-error.js';

/** The dashboard's own options, taken out of argv before what follows them is parsed. */
const BOARD_OPTIONS = new Set(['--port', '--host', '--allow-remote']);

/** `supervise dashboard --redis URL --queue NAME`: a board of every run of a queue. */
export interface QueueBoardOptions {
  redis: string;
  queue: string;
  prefix?: string;
}

export type DashboardCommandLine =
  | { kind: 'queue'; board: DashboardOptions; queue: QueueBoardOptions }
  /** A batch: `rest` is a `supervise --tasks ...` command line. */
  | { kind: 'batch'; board: DashboardOptions; rest: string[] };

/** Parses the arguments after `dashboard`. Throws UsageError on any mistake. */
export function parseDashboardCommandLine(argv: readonly string[]): DashboardCommandLine {
  const end = argv.indexOf('--');
  const head = end === -1 ? [...argv] : argv.slice(0, end);
  const board: DashboardOptions = {};
  const rest: string[] = [];
  for (let index = 0; index < head.length; index++) {
    const arg = head[index]!;
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (!BOARD_OPTIONS.has(name)) {
      rest.push(arg);
      continue;
    }
    if (name === '--allow-remote') {
      board.allowRemote = true;
      continue;
    }
    const value = inline ?? head[++index];
    if (value === undefined || value === '') throw new UsageError(`option ${name} needs a value, as in ${name} VALUE.`);
    if (name === '--host') board.host = value;
    else board.port = port(value);
  }
  if (end !== -1) rest.push(...argv.slice(end));
  if (isRemoteCommandLine(rest)) return { kind: 'queue', board, queue: parseQueueBoard(rest) };
  if (!rest.some((arg) => arg === '--tasks' || arg.startsWith('--tasks='))) {
    throw new UsageError('supervise dashboard shows a queue (--redis URL --queue NAME) or a batch (--tasks FILE [options] -- command); give one of them.');
  }
  return { kind: 'batch', board, rest };
}

function port(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed > 65535) throw new UsageError(`--port "${value}" is not a port number (0 to 65535; 0: any free port).`);
  return parsed;
}

const QUEUE_BOARD_OPTIONS = { redis: { type: 'string' }, queue: { type: 'string' }, prefix: { type: 'string' } } as const;

function parseQueueBoard(argv: readonly string[]): QueueBoardOptions {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: QUEUE_BOARD_OPTIONS });
  } catch (error) {
    throw parseArgsUsageError(error, [...Object.keys(QUEUE_BOARD_OPTIONS), 'port', 'host', 'allow-remote'], 'A queue dashboard takes --redis, --queue, --prefix and the dashboard options.');
  }
  if (parsed.positionals.length > 0) throw new UsageError(`unexpected argument "${parsed.positionals[0]}": a queue dashboard shows the queue's runs, it starts none.`);
  const options: QueueBoardOptions = { redis: redisUrl(parsed.values.redis), queue: queueName(parsed.values.queue) };
  if (parsed.values.prefix !== undefined) options.prefix = parsed.values.prefix;
  return options;
}
