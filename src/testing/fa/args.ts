// The fake fa's command line: the scenario argument, then fa's own headless flags, parsed as strictly as fa does.

/** A bad command line: fa prints the message and a usage hint to stderr and exits 64 (EX_USAGE). */
export class FaUsageError extends Error {}

export const FA_USAGE_EXIT = 64;

export const FA_USAGE = `usage: subvisor-fake-fa [scenario] [--output events|events=full] (-p <task> | <task words>)
       subvisor-fake-fa --version [--output json]
  scenario: a built-in name, a path to a scenario JSON file, or "env" to read $SUBVISOR_FAKE_SCENARIO
            (only as the first argument; default: "env" when that variable is set, else "tools").
  Like fa: stdout carries HEP v1 frames with --output events, prose otherwise; exit 0 ok, 1 provider error,
  130 cancelled (SIGINT/SIGTERM), 64 usage error. The fake has no interactive mode: a task is required.`;

export type FaOutputMode = 'prose' | 'events' | 'events=full';

export interface FaArgs {
  /** The first argument when it is not a flag (the fake's own addition). */
  scenario?: string;
  output: FaOutputMode;
  task: string;
  /** `--session <name>`: the header's session id. */
  session?: string;
}

export type FaCommand = { kind: 'help' } | { kind: 'version'; json: boolean } | { kind: 'run'; args: FaArgs };

/** fa's value flags the fake accepts (and ignores unless noted), each taking the next argument. */
const VALUE_FLAGS = new Set([
  '-p',
  '--prompt',
  '--output',
  '--session',
  '--model',
  '--provider',
  '--base-url',
  '--system-prompt',
  '--system-prompt-file',
  '--mode',
  '--cwd',
  '--session-root',
  '--log-file',
  '--tools',
  '--plugin',
]);

const OUTPUT_MODES: ReadonlySet<string> = new Set(['events', 'events=full', 'json', 'text']);

/** Parses argv (without node and the script) into what to do; throws {@link FaUsageError} as fa would exit 64. */
export function parseFaArgs(argv: string[]): FaCommand {
  let rest = argv;
  let scenario: string | undefined;
  if (rest[0] !== undefined && !rest[0].startsWith('-')) {
    scenario = rest[0];
    rest = rest.slice(1);
  }
  const values = new Map<string, string>();
  const positionals: string[] = [];
  for (let index = 0; index < rest.length; index += 1) {
    const arg = rest[index] as string;
    if (arg === '--help' || arg === '-h') return { kind: 'help' };
    if (arg === '--version') {
      const output = rest.indexOf('--output');
      return { kind: 'version', json: output >= 0 && rest[output + 1] === 'json' };
    }
    if (VALUE_FLAGS.has(arg)) {
      const value = rest[index + 1];
      if (value === undefined) throw new FaUsageError(`${arg} requires a value`);
      values.set(arg === '--prompt' ? '-p' : arg, value);
      index += 1;
      continue;
    }
    if (arg.startsWith('-')) throw new FaUsageError(`unknown argument: ${arg}`);
    positionals.push(arg);
  }
  const output = values.get('--output');
  if (output !== undefined && !OUTPUT_MODES.has(output)) throw new FaUsageError(`unknown --output mode: ${output}`);
  const prompt = values.get('-p');
  if (prompt !== undefined && positionals.length > 0) throw new FaUsageError('-p/--prompt cannot be combined with positional arguments');
  const task = prompt ?? positionals.join(' ');
  if (prompt === undefined && positionals.length === 0) {
    throw new FaUsageError('no task: the fake fa has no interactive mode (give -p <task>)');
  }
  const args: FaArgs = { output: output === 'events' || output === 'events=full' ? output : 'prose', task };
  if (scenario !== undefined) args.scenario = scenario;
  const session = values.get('--session');
  if (session !== undefined) args.session = session;
  return { kind: 'run', args };
}
