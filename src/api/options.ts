// Public options of spawnRun (RunOptions) and connectRun (ConnectOptions), documented with their defaults.
import type { ConnectProtocolName, ProtocolName } from './registry.js';
import type { AnswerQuestionCallback, ApproveCallback } from '../protocol/requests.js';
import type { Budget } from '../protocol/budget.js';
import type { JsonSchema } from '../protocol/resolved-options.js';
import type { SandboxOptions, TreeLimits } from '../protocol/tree-limits.js';
import type { RunTracing } from '../observe/types.js';

/**
 * Options of {@link spawnRun}. Only `command` is required. Every duration is in milliseconds. `T` is the
 * type `outputSchema` describes: `outcome.data` has it (your claim, which the schema checks at run time).
 *
 * Invalid options (no command, a negative duration, a first prompt too large for one wire line) make
 * `spawnRun` throw synchronously: nothing has been started at that point.
 */
// T only types outcome.data (see spawnRun<T>): nothing here reads it.
export interface RunOptions<T = unknown> {
  /**
   * The protocol the child speaks: `'fen'` (default, Fen's wire protocol over a private directory),
   * `'hep'` (Fa's HEP v1: `command args -p <task>`, frames on stdout; `task` is required), `'fuseraft'`
   * (`fuseraft repl --vscode --no-banner`) or `'fuseraft-bridge'` (`fuseraft run --bridge -c <config>`,
   * the task appended as its last argument; see docs/fuseraft.md). Every protocol yields the same
   * {@link RunEvent} types and the same {@link Outcome}.
   */
  protocol?: ProtocolName;
  /**
   * The program to start. Never run through a shell: arguments are passed as they are. Required, except for a
   * protocol that names its agent's program (`codex`: `codex` on `PATH`).
   */
  command?: string;
  /** Arguments of `command`. */
  args?: readonly string[];
  /**
   * The first prompt. It is appended to the control file before the child is spawned, so the child
   * handles it as soon as it is ready. Without a task the child waits in `ready`; with
   * `keepAlive: false` that means it is closed right away.
   */
  task?: string;
  /**
   * `protocol: 'codex'`: resume this conversation of the agent's own (Codex's thread id, `outcome.sessionId` of an
   * earlier run with the same `CODEX_HOME`) instead of starting one; `task` is then its next prompt. A protocol
   * that cannot resume one refuses it (TypeError).
   */
  resume?: string;
  /** The run id both sides agree on (`FEN_WIRE_RUN_ID`). Defaults to a random UUID. */
  runId?: string;
  /** Working directory of the child. Defaults to the parent's. */
  cwd?: string;
  /**
   * Environment of the child, merged over `process.env`. A key set to `undefined` removes it. The
   * `FEN_WIRE_*` variables are always set by subvisor and win over this.
   */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Time budget from now. Sets `FEN_WIRE_DEADLINE` (whole Unix seconds, rounded up) and a parent-side
   * timer: when the child has not exited by that (rounded-up) deadline, the kill ladder starts and the
   * outcome is `timed-out`. Mutually exclusive with `deadline`. Default 2700000 (45 minutes, as Fen's own
   * parent) when `deadline` is not given either; `Infinity`: no deadline at all (a hung child then hangs the run).
   */
  timeoutMs?: number;
  /** Absolute deadline (a `Date` or epoch milliseconds); see `timeoutMs`. */
  deadline?: Date | number;
  /**
   * Grace given to the child at each step of the kill ladder: after a moment the child should exit
   * (its `exit` event, a `cancel()` sent, the deadline, a protocol failure, abort, disposal), wait this
   * long, then SIGTERM the tree, wait this long again, then SIGKILL it. Default 3000.
   */
  killGraceMs?: number;
  /** How long an accepted `finalize` may take before subvisor sends `cancel`. Default 120000. */
  finalizeGraceMs?: number;
  /** How long the child may take to say `ready`; past it the tree is killed and the outcome is `failed`. Default 30000. */
  readyTimeoutMs?: number;
  /**
   * How long a control waits for its `control-ack` before its promise resolves `unanswered`, counted
   * from when it was written, or from `ready` for a control written before it (the task prompt among
   * them: a child reads no control before `ready`, and `readyTimeoutMs` bounds that wait). Default: no
   * timeout (the ack is awaited until the run ends, then it is `unanswered`).
   */
  ackTimeoutMs?: number;
  /**
   * Stall watchdog: while a turn is open, a child that writes nothing (no event, not even a rejected
   * line) for this long is cancelled and then killed (the kill ladder), with `errorCode: 'stalled'`
   * (status `cancelled`). Not armed before `ready` (that is `readyTimeoutMs`) or between turns. The same
   * for every protocol. Default: off. See `run.lastEventAt`.
   */
  stallTimeoutMs?: number;
  /**
   * How long the agent may wait on a request subvisor cannot answer or deny (a request kind the driver
   * has no response for, such as a request a mew build newer than subvisor adds) for someone else to settle it (another
   * client of the daemon); past it the run fails with `errorCode: 'request-unanswered'`, is cancelled and
   * reaped. Requests subvisor can answer (approvals, questions) are answered by your callbacks or denied by
   * default and are not bounded by this. Default 30000.
   */
  requestTimeoutMs?: number;
  /**
   * `false` (default): once the mirrored state is `ready` and every control sent has been answered,
   * subvisor sends `close`, as Fen's own parent does, so a run ends after its work. `true`: the run
   * stays open in `ready` for more prompts until you call `close()`, `finalize()` or `cancel()`.
   */
  keepAlive?: boolean;
  /** Where the private run directory is created (mode 0700). Default `os.tmpdir()`. */
  stateDir?: string;
  /** Aborting it cancels the run and starts the kill ladder; the outcome is `cancelled`. */
  signal?: AbortSignal;
  /** Largest `final-text-path` file subvisor reads. Default 64 MiB. */
  maxFinalTextBytes?: number;
  /** Keep the run directory (control and event files) after the run, for debugging. Default false. */
  keepFiles?: boolean;
  /**
   * A run that outlives its parent (Fen only: its channel is two files, not a pipe). The child is not
   * reaped when the parent dies, however it dies (SIGKILL, a signal, its exit): its output goes to a file
   * in the run's directory (`stateDir/subvisor-durable-<runId>`), and a later parent re-attaches to it
   * with `attachRun({ runId, stateDir })`. While a parent holds the run it renews a lease; once the
   * parent is gone and nobody took the lease for `leaseMs` (default 30000), the watchdog reaps the tree
   * and removes the files. The run id must name a directory (1-128 of `A-Z a-z 0-9 . _ -`). See
   * docs/durable.md.
   */
  durable?: { leaseMs?: number };
  /**
   * A journal of the run: one JSONL file of what the caller saw (every event, every control sent with
   * its ack and delivery, the states, the kill steps, the outcome), bounded (`maxBytes`, default 16 MiB:
   * past it the file says so and keeps only the outcome), private (0600 in a 0700 directory), never
   * holding the daemon's token. `true`: in `stateDir/subvisor-journals`; a string: in that directory.
   * The file is `<runId>.jsonl` (`<runId>.2.jsonl`... when taken) and whole once `outcome` resolves.
   * A journal that cannot be created throws `JournalError` before anything starts. See docs/journal.md.
   */
  journal?: boolean | string | JournalOptions;
  /**
   * `true` (default): events that arrive before the first async iterator is created are kept, so a
   * late `for await` still sees every event from the first (Fen: past the high-water marks they wait in
   * the event file; other protocols keep them in memory). Set `false` when you only listen with
   * `on(...)` or await the outcome: then nothing is retained and an iterator created later sees only
   * the events that arrive after it.
   */
  retainEvents?: boolean;
  /**
   * Backpressure: while an active iterator has more than this many events waiting, subvisor stops
   * reading the event file (the file is the buffer) and resumes when the iterator drains. Default 1024.
   */
  highWaterMark?: number;
  /**
   * Backpressure counted in bytes, beside `highWaterMark`: reading also pauses while an iterator holds
   * events that took more than this many bytes on the wire (so 12 KB events and 200 B events are
   * bounded by what they cost). Default 1 MiB (1048576).
   */
  highWaterBytes?: number;
  /**
   * Fen: how long an event may wait in the event file before it is read, once the child writes faster
   * than this. With e.g. 30, the first event after a quiet spell is still read at once, but while events
   * keep coming sooner than this the run stops watching the file and reads it on a tick every this many
   * ms, shared by all runs with the same budget: far fewer wake-ups for busy runs, each event at most this
   * late. 0: every write is read as soon as the file system reports it (sub-millisecond), however busy.
   * Unset (the default): 0 while this process's event files wake it fewer than 500 times a second (all
   * runs together), 20 while they wake it more often, until they calm down (below 150 a second): one
   * run streaming fast keeps sub-millisecond reads, many busy runs together cost a fraction of the CPU,
   * and a sparse run beside them is still read at once. At most 1000 ms.
   */
  latencyBudgetMs?: number;
  /**
   * Protocols that frame messages as stdout lines (HEP): the longest line read, in bytes. A longer one
   * is rejected (`too-large`), skipped to its newline, and the answer is marked truncated. HEP does
   * not bound its frames (a long answer is one `turn_done` line), so the default is generous: 16 MiB.
   * Fen's lines are bounded by its spec (64 KiB) and ignore this.
   */
  maxFrameBytes?: number;
  /** Bytes of the child's combined stdout/stderr (stderr only under HEP) kept in `outcome.outputTail`. Default 65536. */
  outputTailBytes?: number;
  /**
   * `true` (default): while this run is alive, SIGINT/SIGTERM/SIGHUP of the parent process cancel it
   * and reap its tree within a short grace (1 s per step), then the signal takes its normal course (the
   * process dies with 129/130/143 unless it has other listeners for that signal). Pass `false` when your
   * program handles these signals itself (call `terminate()`/`kill()` from your handler). Either way
   * every tree still alive when the process exits is SIGKILLed synchronously from an `exit` hook, and
   * the watchdog reaps the trees of a parent killed without running any hook (SIGKILL, out of memory).
   */
  handleParentSignals?: boolean;
  /**
   * fuseraft and mew: decides each `approval_request` (mew: `permission_request`, kind `tool_permission`;
   * `workspace_permission_request`, `subagent_permission_request`, `plan_approval_request`, `goal_proposed`:
   * kinds `workspace_permission`, `subagent_permission`, `plan_approval`, `goal_proposal`), one at a time, in
   * order (sync or async). Without it every request is denied. `true` approves a known kind only; an unknown
   * kind needs the explicit answer `'approve-unknown-kind'`. Other protocols have no approvals and ignore it.
   */
  approve?: ApproveCallback;
  /**
   * fuseraft repl only: answers each `question` (the text, or null to skip). Given, subvisor sets
   * `FUSERAFT_VSCODE_QUESTIONS=1` so fuseraft may ask; without it, `0`. Other protocols ignore it.
   */
  answerQuestion?: AnswerQuestionCallback;
  /**
   * `protocol: 'mew'` only: the `ws://host:port` address the daemon started by `command` listens on.
   * subvisor connects once the daemon accepts connections (within `readyTimeoutMs`), runs one session
   * on it, and reaps the daemon's process tree at the end (see docs/daemons.md).
   */
  url?: string;
  /** `protocol: 'mew'` only: how outgoing message tags are spelled (see {@link ConnectOptions.mewTagCase}). */
  mewTagCase?: MewTagCase;
  /**
   * Limits on what the run may spend, counted from what the child reports: `maxTurns` (completed turns),
   * `maxToolCalls`, `maxTokens` (input + output), `maxCostUsd`, and `shared`, a budget drawn on by many runs
   * (`sharedBudget()`; a pool's `budget.total`). A limit on a figure the protocol does not report is a
   * TypeError (see docs/api.md#budgets). On reaching one, a run idle with its answer is closed, a working
   * one is asked for its answer now where the protocol can (finalize), else cancelled; `outcome.budget`
   * says which limit and the figures, and `errorCode` is `budget-exceeded` whenever it did not end `done`.
   */
  budget?: Budget;
  /**
   * A JSON Schema the answer must match (draft-07, or 2019-09/2020-12 by its `$schema`): the task is sent
   * with instructions to answer in that shape, the answer (the whole text, or its last fenced JSON block)
   * is validated and becomes `outcome.data`. An invalid answer gets one repair turn before the automatic
   * close where the protocol can continue the conversation, then ends `failed` with `invalid-output`
   * (`outcome.outputErrors`; the answer stays in `finalText`). A schema that cannot be compiled is a TypeError.
   */
  outputSchema?: JsonSchema;
  /**
   * What is appended to the task (after a blank line) about the answer's shape: by default a sentence
   * asking for one fenced JSON block, and the schema. A string replaces it; `false` appends nothing
   * (your task says it already). Needs `outputSchema`.
   */
  outputInstructions?: string | false;
  /**
   * OpenTelemetry (docs/observability.md). Default `true`: when the application registered an
   * OpenTelemetry SDK, the run gets a span (`invoke_agent`) under the active context, with a child span per
   * turn and per tool call, and the child gets its context in `TRACEPARENT`/`TRACESTATE` (a variable you set
   * in `env` yourself wins); with no SDK registered, nothing at all is done. `false`: none of it.
   * `{ parent, attributes }`: as `true`, under `parent` instead of the active context, with `attributes`
   * on the run's span (`gen_ai.agent.name` also names it).
   */
  tracing?: RunTracing;
  /**
   * Limits on what the run's whole process tree (the child and everything it starts) may use
   * (docs/api.md#limits): `memoryBytes` (resident memory, sampled from /proc), `cpuSeconds` (each process's
   * RLIMIT_CPU, and the tree's CPU time, sampled), `processes` (sampled), `openFiles` (each process's
   * RLIMIT_NOFILE), `sampleIntervalMs` (default 1000). Over a sampled limit the tree is killed (SIGTERM at
   * once, SIGKILL after `killGraceMs`) and the run ends `failed` with `errorCode` `memory-limit`,
   * `cpu-limit` or `process-limit`; `outcome.limits` says which limit, the figure seen and the peaks. The
   * rlimits are set through util-linux `prlimit` (Linux); the sampled limits need /proc (Linux). Not for
   * durable runs.
   */
  limits?: TreeLimits;
  /**
   * Runs the child under bubblewrap (`bwrap`, Linux; docs/api.md#sandbox): `/` read-only, only `cwd`, the
   * run's own directory, a private tmp (TMPDIR) and `writable` writable; a pid namespace of its own (the
   * tree dies whole with it); no network unless `network: true`. `true`: the defaults. Without `bwrap` on
   * the PATH the run never starts (`spawn-failed`); it never runs unsandboxed. Not for durable runs, nor
   * for mew's daemon without `network: true`.
   */
  sandbox?: boolean | SandboxOptions;
}

/**
 * How mew message tags are spelled: `snake_case` (`submit_prompt`, what mew's daemon speaks: the
 * default) or `PascalCase` (`SubmitPrompt`, the spelling of the example in mew's protocol page).
 * Incoming tags are read in either spelling whatever this says.
 */
export type MewTagCase = 'snake_case' | 'PascalCase';

/** `RunOptions.journal` spelled out. */
export interface JournalOptions {
  /** The directory of the journal files (made 0700 when missing; refused when others can read it). Default `stateDir/subvisor-journals`. */
  dir?: string;
  /** The file's bound in bytes (at least 65536). Default 16 MiB. */
  maxBytes?: number;
}

/** The options {@link ConnectOptions} shares with {@link RunOptions}: they mean the same for a run on a daemon. */
export type SharedRunOptions<T = unknown> = Pick<
  RunOptions<T>,
  | 'journal'
  | 'task'
  | 'runId'
  | 'cwd'
  | 'timeoutMs'
  | 'deadline'
  | 'killGraceMs'
  | 'finalizeGraceMs'
  | 'readyTimeoutMs'
  | 'ackTimeoutMs'
  | 'stallTimeoutMs'
  | 'requestTimeoutMs'
  | 'keepAlive'
  | 'signal'
  | 'maxFinalTextBytes'
  | 'maxFrameBytes'
  | 'retainEvents'
  | 'highWaterMark'
  | 'highWaterBytes'
  | 'handleParentSignals'
  | 'approve'
  | 'answerQuestion'
  | 'budget'
  | 'outputSchema'
  | 'outputInstructions'
  | 'tracing'
>;

/**
 * Options of {@link connectRun}: a run that is a session or task on a daemon many clients attach to,
 * reached over a WebSocket (`url`) or a Unix socket (`socketPath`): exactly one of the two. No process
 * is started or owned. The shared options mean what they mean for `spawnRun`, with these differences:
 * `readyTimeoutMs` bounds connecting and the daemon's greeting; the kill ladder becomes "wait
 * `killGraceMs`, then drop the connection"; `timeoutMs`/`deadline` cancel the daemon's work (the daemon
 * does not know the deadline) and drop the connection at once; `maxFrameBytes` bounds one message.
 */
export interface ConnectOptions<T = unknown> extends SharedRunOptions<T> {
  /** The daemon's protocol (see docs/daemons.md). */
  protocol: ConnectProtocolName;
  /** `ws://host:port/path` or `wss://...`. Its user info, query and fragment are never shown (errors show scheme, host and path). */
  url?: string;
  /** The path of the daemon's Unix socket (messages are JSON lines). */
  socketPath?: string;
  /**
   * The bearer token the daemon wants (WebSocket handshake `Authorization: Bearer <token>`). A secret:
   * it never appears in events, the outcome, error messages or logs.
   */
  token?: string;
  /** The client id the daemon keeps this client's work under across reconnects (fuseraft serve: 1-64 of A-Z a-z 0-9 - _). */
  clientId?: string;
  /** Re-attach to this session or task instead of starting one (exclusive with `task`). */
  resume?: string;
  /** mew: attach to this existing session (`attach_session`) instead of creating one; a `task` is submitted to it. */
  sessionId?: string;
  /** mew: how outgoing tags are spelled (default `snake_case`, mew's own; `PascalCase` for a peer that wants the seed example's). */
  mewTagCase?: MewTagCase;
  /** Liveness: probe the daemon this often (0: never). Default 15000. */
  pingIntervalMs?: number;
  /** A probe unanswered this long ends the run `failed` (`no-pong`). Default 10000. */
  pongTimeoutMs?: number;
  /** After a dropped connection, how long re-attaching may take before the run fails (`connection-lost`); 0: never re-attach. Default 10000. */
  reconnectGraceMs?: number;
}

/**
 * Options of `attachRun`: which durable run (its `runId` and the `stateDir` it was started in), and how
 * this parent's handle behaves. Everything else (timers, grace, keepAlive, the deadline) is the run's
 * own, as its first parent set it (see docs/durable.md).
 */
export interface AttachOptions
  extends Pick<RunOptions, 'signal' | 'ackTimeoutMs' | 'retainEvents' | 'highWaterMark' | 'highWaterBytes' | 'latencyBudgetMs' | 'handleParentSignals' | 'journal'> {
  /** The durable run's id. */
  runId: string;
  /** Where it was started (`RunOptions.stateDir`). Default `os.tmpdir()`. */
  stateDir?: string;
}
