// The run's options after spawnRun applied the defaults and checked them: what the core and the drivers read.
import type { AnswerQuestionCallback, ApproveCallback } from './requests.js';

/** Options after defaults and validation (see spawn-run.ts). */
export interface ResolvedRunOptions {
  /** The protocol's name (`RunOptions.protocol`). */
  protocol: string;
  command: string;
  args: readonly string[];
  task: string | undefined;
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
  maxFinalTextBytes: number;
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
