// The run's options after spawnRun applied the defaults and checked them: what the core and the drivers read.
import type { AnswerQuestionCallback, ApproveCallback } from '../drivers/fuseraft/prompts.js';

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
  keepAlive: boolean;
  stateDir: string;
  signal: AbortSignal | undefined;
  maxFinalTextBytes: number;
  maxFrameBytes: number;
  keepFiles: boolean;
  retainEvents: boolean;
  highWaterMark: number;
  outputTailBytes: number;
  handleParentSignals: boolean;
  approve: ApproveCallback | undefined;
  answerQuestion: AnswerQuestionCallback | undefined;
}
