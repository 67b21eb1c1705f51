// The run's options after spawnRun applied the defaults and checked them: what the core and the drivers read.
import type { AnswerQuestionCallback, ApproveCallback } from './requests.js';
import type { BudgetLimits, SharedBudget } from './budget.js';
import type { TreeLimits } from './tree-limits.js';

/** Options after defaults and validation (see spawn-run.ts). */
export interface ResolvedRunOptions {
  /** The protocol's name (`RunOptions.protocol`). */
  protocol: string;
  command: string;
  args: readonly string[];
  /** The first prompt, with `outputSchema`'s instructions appended. */
  task: string | undefined;
  /** spawnRun: the agent's own conversation to resume (`RunOptions.resume`), for a protocol that `resumes`; undefined otherwise. */
  resume: string | undefined;
  runId: string;
  cwd: string | undefined;
  env: Record<string, string>;
  deadlineMs: number | undefined;
  killGraceMs: number;
  finalizeGraceMs: number;
  readyTimeoutMs: number;
  ackTimeoutMs: number | undefined;
  stallTimeoutMs: number | undefined;
  requestTimeoutMs: number;
  keepAlive: boolean;
  stateDir: string;
  signal: AbortSignal | undefined;
  /** Fen: the largest `final-text-path` file read, in bytes (`RunOptions.maxFinalTextBytes`). */
  maxFinalTextBytes: number;
  /**
   * The longest answer kept, in characters (UTF-16 code units), by a driver that assembles its answer from
   * streamed or sent text (fuseraft, fuseraft serve, mew, and the agents' drivers): `RunOptions.maxFinalTextBytes`
   * read as a character count; a longer answer is cut there and marked truncated.
   */
  maxAnswerChars: number;
  maxFrameBytes: number;
  keepFiles: boolean;
  retainEvents: boolean;
  highWaterMark: number;
  highWaterBytes: number;
  /** Fen: `'auto'` (unset), 0 (read on every notification) or the coalescing budget in ms (see RunOptions). */
  latencyBudgetMs: number | 'auto';
  outputTailBytes: number;
  handleParentSignals: boolean;
  approve: ApproveCallback | undefined;
  answerQuestion: AnswerQuestionCallback | undefined;
  /** A durable run: its lease, renewed while a parent holds it (see RunOptions.durable); undefined otherwise. */
  durable: { leaseMs: number } | undefined;
  /** The run's journal (RunOptions.journal): its directory and bound; undefined without one. The api layer writes it. */
  journal: { dir: string; maxBytes: number } | undefined;
  /**
   * attachRun only: the durable run being re-attached, as its record says, with the lease this parent
   * took. The driver opens `dir` instead of making a channel; the core adopts the child.
   */
  attach: AttachTarget | undefined;
  /** The run's own budget limits (checked against what the protocol reports); undefined without any. */
  budget: BudgetLimits | undefined;
  /** A budget shared with other runs (created by `sharedBudget()`). */
  sharedBudget: SharedBudget | undefined;
  /** The JSON Schema the answer must match (checked at spawn: it compiles). */
  outputSchema: JsonSchema | undefined;
  /** Limits on the child's process tree (checked; `sampleIntervalMs` set when a sampled limit is); undefined without any. */
  limits: TreeLimits | undefined;
  /** The bubblewrap sandbox the child runs in (see RunOptions.sandbox); undefined without one. */
  sandbox: { writable: readonly string[]; network: boolean } | undefined;
  /** connectRun only: where the daemon is and how to attach; undefined for spawnRun. */
  connection: ResolvedConnection | undefined;
  /**
   * The run span's trace context as propagation fields (`traceparent`, `tracestate`), for a daemon whose
   * transport has a place for them (a WebSocket handshake); undefined when the run is not traced.
   */
  traceHeaders: Readonly<Record<string, string>> | undefined;
}

/** The connection options of connectRun after defaults and checks (see ConnectOptions). */
export interface ResolvedConnection {
  /** Exactly one of `url` and `socketPath` is set. */
  url: string | undefined;
  socketPath: string | undefined;
  /** Secret: never put into an event, outcome, error or log. */
  token: string | undefined;
  clientId: string | undefined;
  resume: string | undefined;
  /** mew: the session to attach to (`sessionId`, or `resume`). */
  sessionId: string | undefined;
  /** mew: how outgoing tags are spelled. */
  mewTagCase: 'snake_case' | 'PascalCase';
  pingIntervalMs: number;
  pongTimeoutMs: number;
  reconnectGraceMs: number;
}

/** The durable run attachRun re-attaches (see ResolvedRunOptions.attach). */
export interface AttachTarget {
  /** The run's directory (the driver's channel, its record and lease). */
  dir: string;
  /** The child's pid, its start time (a pid that now names another process is refused) and its tree marker. */
  pid: number;
  pidStart: string;
  marker: string;
  /** When the run started (epoch ms): files the child made since are its own. */
  startedAt: number;
}
/** A JSON Schema (draft-07 by default; `$schema` picks 2019-09 or 2020-12): an object, or a boolean. */
export type JsonSchema = { readonly [keyword: string]: unknown } | boolean;
