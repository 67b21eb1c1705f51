// The --help text.
import { EXIT_CODE_HELP } from './exit-codes.js';

/** Option rows of --help: the flag and its description lines, aligned into two columns. */
type HelpRow = readonly [flag: string, ...lines: string[]];

const FLAG_COLUMN = 29;

function section(title: string, rows: readonly HelpRow[]): string {
  const body = rows.map(([flag, first = '', ...rest]) =>
    [`  ${flag.padEnd(FLAG_COLUMN - 2)}${first}`, ...rest.map((line) => `${' '.repeat(FLAG_COLUMN)}${line}`)].join('\n'),
  );
  return `${title}:\n${body.join('\n')}`;
}

/** What supervise prints (on stderr, exit 2) when it is run without any argument. */
export function usageText(): string {
  return `supervise: run a child agent (Fen, Claude Code, Codex, an ACP agent such as Gemini CLI, Fa, fuseraft, mew), watch it, steer it, get its answer.

Usage:
  supervise [options] -- <child command> [args...]

Example:
  supervise --task 'Inspect the README' -- fen --presenter rpc > answer.md

Run 'supervise --help' for the options and exit codes.
`;
}

export function helpText(): string {
  const exitCodes = EXIT_CODE_HELP.map(([code, meaning]) => `  ${String(code).padStart(3)}  ${meaning}`).join('\n');
  return `supervise: run a child agent (Fen, Claude Code, Codex, an ACP agent such as Gemini CLI, Fa, fuseraft, mew), watch it, steer it, get its answer.

Usage:
  supervise [options] -- <child command> [args...]
  supervise --tasks FILE [--parallel N] [run options] -- <child command> [args...]
  supervise --redis URL --queue NAME --profile NAME [--task TEXT] [queue run options]
  supervise worker --redis URL --queue NAME --profiles FILE [worker options]
  supervise attach RUN_ID [--state-dir DIR] [-o MODE] [--controls FILE] [-q]
                          (a durable run started with --durable: its answer, and its exit code)
  supervise dashboard [--port N] [--host H] --tasks FILE [batch options] -- <child command> [args...]
  supervise dashboard [--port N] [--host H] --redis URL --queue NAME [--prefix P]

The task (the child's first prompt) comes from --task, --task-file, or standard input when it is
not a terminal (all of it). stdout carries only what --output asks for; progress, control acks,
warnings and errors go to stderr.

${section('Task', [
  ['--task TEXT', 'the task'],
  ['--task-file FILE', 'read the task from FILE (trailing newlines dropped)'],
])}

${section('Output', [
  ['-o, --output MODE', 'text    the whole final answer, once, at the end (default)',
    'events  one JSON object per line: every run event (camelCase), the',
    '        supervise-* control reports, and last {"type":"outcome",...}',
    'json    the outcome object, once'],
  ['-q, --quiet', 'only control acks, warnings and errors on stderr (nothing for a run that ends done)'],
])}

${section('Controls while it runs', [
  ['--controls FILE', 'one control per line, from a file, a named pipe (mkfifo) that other',
    "processes write to, or '-' for standard input (then the task must come",
    'from --task or --task-file). A line is one of:',
    '  steer TEXT | follow-up TEXT | prompt TEXT | finalize [NOTE] | cancel | close',
    '  {"type":"steer","text":"..."}   (wire JSON without v, seq, run)',
    'Blank lines and # comments are skipped; invalid lines are reported and',
    'skipped. Each ack (and each steer/follow-up delivery) is reported.'],
])}

${section('Budget and answer shape (see docs/api.md#budgets)', [
  ['--max-turns N', 'stop the run at N completed turns'],
  ['--max-tool-calls N', 'stop the run at N tool calls'],
  ['--max-tokens N', 'stop the run at N tokens (input + output)'],
  ['--max-cost USD', 'stop the run at this cost in dollars (e.g. 0.50)',
    'At a limit a working run is asked for its answer now (finalize) where the',
    'protocol can, else cancelled (exit 4); a limit on a figure the protocol does',
    'not report is a usage error'],
  ['--max-total-tokens N', 'batch mode: the tasks together; once spent, running tasks are stopped'],
  ['--max-total-cost USD', 'and queued ones never start (status cancelled, budget-exceeded)'],
  ['--output-schema FILE', 'a JSON Schema the answer must match: the task asks for that shape, an',
    'invalid answer gets one repair turn where the protocol can, then the run',
    'fails (invalid-output); text output is then the validated value as JSON'],
])}

${section('Limits and sandbox of the tree (see docs/api.md#limits)', [
  ['--max-memory SIZE', "kill the tree once its resident memory passes SIZE (512M, 2G): memory-limit"],
  ['--max-cpu-time DURATION', "each process's RLIMIT_CPU, and the tree's CPU time: cpu-limit"],
  ['--max-processes N', 'kill the tree once it has more than N processes: process-limit'],
  ['--max-open-files N', "each process's RLIMIT_NOFILE (an open past it fails, the run goes on)",
    'The tree is sampled every second (Linux /proc); the rlimits need prlimit.'],
  ['--sandbox', 'run the child under bubblewrap (bwrap): / read-only, the cwd and a private',
    'tmp writable, no network; without bwrap the run does not start (exit 3)'],
  ['--sandbox-write PATH', 'a path the tree may write too (repeatable; implies --sandbox)'],
  ['--sandbox-network', "keep the host's network, loopback included (implies --sandbox)"],
])}

${section('Batch mode', [
  ['--tasks FILE', "run every task of FILE ('-': standard input) through a pool, one per line:",
    'the line as written, or, when it starts with { or ", JSON: a string (the',
    'task) or {"id":..., "task":"...", "env":{...}, "timeout":"10m"}.',
    'stdout: one JSON line per task as it ends ({"id", "line", ...outcome});',
    'a bad line gets {"line", "status":"invalid", "error"} and the batch goes on.',
    'stderr: a live counts line on a terminal, then a summary and the usage',
    '(tokens and cost by protocol, model, status). Exit code: the worst of',
    'the tasks (130 > 2 bad line > 3 > 1 > 4 > 124 > 0). First signal:',
    'no new tasks, running ones cancelled; second: killed at once.'],
  ['--parallel N', 'how many tasks run at once (live process trees; default 4)'],
  ['--warm N', 'keep N children started and waiting for the next task (each holds',
    "one of --parallel's places while it waits); a provider's rate limit",
    'reported by any task holds the next starts (shown on stderr)'],
])}

${section('On a queue (BullMQ on Redis; see docs/scale-out.md)', [
  ['--redis URL', 'run the task on a queue worker instead of here: same output, controls,',
    'signals and exit codes; --task/--task-file, -o, -q, --controls, --run-id,',
    '--timeout and --keep-alive apply (the command is the profile\'s, on the worker)'],
  ['--queue NAME', 'the queue the workers take runs from'],
  ['--profile NAME', 'the profile (defined on the workers) to run'],
  ['--attempts N', 'starts allowed, counting a worker lost mid-run and a failed attempt (1)'],
  ['--prefix P', 'Redis key prefix shared with the workers (subvisor)'],
  ['worker', 'run a worker: --profiles FILE (JSON: {"name": {"command", "args", "env",',
    '"protocol", "cwd", "limits"}}), --concurrency N (1), --lock-duration D (30s),',
    '--stalled-interval D (30s), --max-stalled N (10), --shutdown finish|hand-back',
    '(finish), --shutdown-grace D, --name NAME, --state-dir DIR. First SIGTERM/SIGINT:',
    'no new runs, running ones finish (or go back); a second one hands them back'],
])}

${section('Dashboard (a live page of the runs; see docs/observability.md)', [
  ['dashboard', 'serve a page of a --tasks batch (it stays up after the batch until a signal)',
    'or of every run of a queue (--redis URL --queue NAME, until a signal); its URL,',
    'with its token, is printed on stderr. The page shows every run, a run\'s events',
    'and answer, and steers, cancels or terminates it'],
  ['--port N', 'the port (default 0: any free port)'],
  ['--host H', 'the address (default 127.0.0.1; another needs --allow-remote: plain HTTP)'],
  ['--allow-remote', 'serve on a --host that is not a loopback address'],
])}

${section('Protocol', [
  ['--protocol NAME', "fen (default): Fen's wire protocol (fen --presenter rpc)",
    "hep: Fa's HEP v1 (fa --output events); the task is passed as -p TASK,",
    'one prompt per process: only cancel is accepted among the controls',
    'fuseraft: fuseraft repl --vscode --no-banner (a chat over stdin/stdout)',
    'fuseraft-bridge: fuseraft run --bridge -c CONFIG; the task is appended',
    'mew: a session on a mew daemon (WebSocket): --url and no command attaches',
    'to a running daemon; with a command, supervise starts the daemon first',
    'fuseraft-serve: a task on a running fuseraft serve (--url or --socket, no command)',
    'codex: Codex over JSON-RPC on stdio (-- codex; supervise adds app-server);',
    'approvals come to --approve, -c approval_policy=/sandbox_mode= after codex override',
    "subvisor's untrusted / workspace-write",
    'claude-code: Claude Code in stream-json on stdio (-- claude; supervise adds',
    'its stream-json flags); Bash and other tools ask --approve'],
  ['--url URL', "mew: the daemon's ws://HOST:PORT address; fuseraft-serve: ws://HOST:PORT/attach"],
  ['--socket PATH', "fuseraft-serve: the daemon's Unix socket instead of --url"],
  ['--token-file FILE', "fuseraft-serve: read the bearer token from FILE (there is no token flag:",
    'a command line is visible to other users); never printed'],
  ['--client-id ID', 'fuseraft-serve: Fuseraft-Client-Id, keeps the task across reconnects'],
  ['--session-id ID', 'mew: attach to this session instead of creating one;',
    'fuseraft-serve: re-attach to this task (with --client-id; no task)'],
  ['--mew-tag-case CASE', 'mew: snake_case (default, what mew speaks) or PascalCase tags'],
  ['--approve MODE', 'approval requests (fuseraft, mew, codex, claude-code): never (default)',
    'denies all; always-known approves the documented kinds, denies others; ask asks on the',
    'terminal (y/N; an unknown kind needs "yes"), denies when stdin is not one'],
])}

${section('Run options', [
  ['--run-id ID', 'run id shared with the child (default: a random UUID)'],
  ['--cwd DIR', 'working directory of the child'],
  ['--env KEY=VALUE', 'extra environment for the child (repeatable)'],
  ['--timeout DURATION', 'deadline of the whole run (default 45m; 0: none); past it the run is timed-out'],
  ['--grace DURATION', 'kill grace: wait this long before SIGTERM, and again before SIGKILL (3s)'],
  ['--ready-timeout DURATION', 'how long the child may take to say ready (30s)'],
  ['--finalize-grace DURATION', 'how long a finalize may take before supervise cancels (120s)'],
  ['--stall-timeout DURATION', 'cancel, then kill, a child silent this long in a turn (default off)'],
  ['--latency-budget DURATION', 'Fen: read a busy event file every DURATION at most (up to 1s; 0: every write; default adaptive)'],
  ['--keep-alive', 'keep the run open in ready for more prompts; it ends with a close,',
    'finalize or cancel control, the timeout, or a signal'],
  ['--state-dir DIR', 'where the private run directory is made (default: the temp dir)'],
  ['--keep-files', 'keep the run directory (control and event files) for debugging'],
  ['--journal DIR', 'write a journal of the run (JSONL: events, controls with their acks, the outcome)',
    'to DIR/<run id>.jsonl (0600; DIR is made 0700 and must be private)'],
  ['--durable LEASE', 'a durable run (Fen): it outlives supervise; re-attach with `supervise attach`;',
    'unattended for LEASE (e.g. 30s), it is reaped'],
  ['-h, --help', 'show this help'],
  ['--version', 'show the version'],
])}

Durations: 1500ms, 90s, 10m, 1h; a plain number is seconds.

Signals: the first SIGINT, SIGTERM or SIGHUP cancels the run and lets the kill-after-grace
backstop reap it (exit 130); a second one kills the child's process tree at once.

Exit codes:
${exitCodes}

Examples:
  supervise --task 'Inspect the README' -- fen --presenter rpc > answer.md
  git diff | supervise --timeout 10m -- fen --presenter rpc
  supervise -o events --task 'Fix the tests' -- fen --presenter rpc | jq -c 'select(.type=="tool-call")'
  mkfifo ctl; supervise --task 'Refactor' --controls ctl -- fen --presenter rpc &
  echo 'steer look at docs/ first' > ctl
  supervise --task 'Say hi' -- subvisor-fake-child demo
  supervise --tasks tasks.jsonl --parallel 4 -- fen --presenter rpc > outcomes.jsonl
  supervise --protocol hep --task 'Fix the tests' -- fa --output events
  supervise --protocol mew --url ws://127.0.0.1:7777 --task 'Summarise the README'
  supervise --protocol fuseraft-serve --url ws://127.0.0.1:7070/attach --token-file ~/.fuseraft-token --task 'Fix the tests'
  supervise worker --redis redis://10.0.0.5:6379 --queue agents --profiles profiles.json
  supervise --redis redis://10.0.0.5:6379 --queue agents --profile fen --task 'Fix the tests'
  supervise dashboard --tasks tasks.jsonl --parallel 8 -- fen --presenter rpc > outcomes.jsonl
  supervise dashboard --redis redis://10.0.0.5:6379 --queue agents
`;
}

