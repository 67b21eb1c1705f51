// The fake fuseraft's command line: the scenario argument, then `repl --vscode ...` or `run --bridge -c <config> <task>`.

/** A command line the fake (like fuseraft's parser) refuses: message on stderr, exit code 1. */
export class FuseraftUsageError extends Error {}

export const FUSERAFT_USAGE = `usage: subvisor-fake-fuseraft [scenario] repl --vscode [--no-banner] [--model <id>] [--resume <id>]
       subvisor-fake-fuseraft [scenario] run --bridge -c <config> (<task> | --resume <id>)
  scenario: a built-in name of the mode, a path to a scenario JSON file, or "env" to read $SUBVISOR_FAKE_SCENARIO
            (only as the first argument; default: "env" when that variable is set, else "chat" / "success").
  Like fuseraft's live sessions: JSONL on stdin and stdout. repl: close stdin to end (session_end, exit 0).
  run --bridge: the last event is result; the process exits with its exitCode.`;

export type FuseraftCommand =
  | { kind: 'help' }
  | { kind: 'repl'; scenario?: string; model?: string; resume?: string }
  | { kind: 'bridge'; scenario?: string; config: string; task?: string; resume?: string };

function takeValue(rest: string[], index: number, flag: string): string {
  const value = rest[index + 1];
  if (value === undefined || value.startsWith('-')) throw new FuseraftUsageError(`Required argument missing for option: '${flag}'.`);
  return value;
}

export function parseFuseraftArgs(argv: string[]): FuseraftCommand {
  if (argv.includes('--help') || argv.includes('-h')) return { kind: 'help' };
  let rest = argv;
  let scenario: string | undefined;
  if (rest[0] !== undefined && rest[0] !== 'repl' && rest[0] !== 'run' && !rest[0].startsWith('-')) {
    scenario = rest[0];
    rest = rest.slice(1);
  }
  const verb = rest[0];
  const options = new Map<string, string | true>();
  const positionals: string[] = [];
  const valueFlags = verb === 'repl' ? ['--model', '--resume'] : ['-c', '--config', '--resume'];
  const switches = verb === 'repl' ? ['--vscode', '--no-banner'] : ['--bridge', '--hitl'];
  for (let index = 1; index < rest.length; index += 1) {
    const arg = rest[index] as string;
    if (valueFlags.includes(arg)) {
      options.set(arg === '--config' ? '-c' : arg, takeValue(rest, index, arg));
      index += 1;
    } else if (switches.includes(arg)) options.set(arg, true);
    else if (arg.startsWith('-')) throw new FuseraftUsageError(`Unrecognized command or argument '${arg}'.`);
    else positionals.push(arg);
  }
  const set = (name: string, value: string | true | undefined) => (typeof value === 'string' ? { [name]: value } : {});
  if (verb === 'repl') {
    if (options.get('--vscode') !== true) throw new FuseraftUsageError('the fake fuseraft only has the JSON repl: pass --vscode');
    if (positionals.length > 0) throw new FuseraftUsageError(`Unrecognized command or argument '${positionals[0]}'.`);
    return { kind: 'repl', ...set('scenario', scenario), ...set('model', options.get('--model')), ...set('resume', options.get('--resume')) };
  }
  if (verb === 'run') {
    if (options.get('--bridge') !== true) throw new FuseraftUsageError('the fake fuseraft only runs with --bridge');
    if (options.get('--hitl') === true) throw new FuseraftUsageError('--bridge cannot be combined with --hitl');
    const config = options.get('-c');
    if (typeof config !== 'string') throw new FuseraftUsageError("Option '-c' is required.");
    if (positionals.length > 1) throw new FuseraftUsageError(`Unrecognized command or argument '${positionals[1]}'.`);
    const resume = options.get('--resume');
    if (positionals.length === 0 && typeof resume !== 'string') throw new FuseraftUsageError('a task (or --resume <id>) is required');
    return { kind: 'bridge', config, ...set('scenario', scenario), ...set('task', positionals[0]), ...set('resume', resume) };
  }
  throw new FuseraftUsageError(verb === undefined ? 'a command is required: repl or run' : `Unrecognized command or argument '${verb}'.`);
}
