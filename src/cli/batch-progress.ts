// Batch mode's progress on stderr: one live line of pool counts on a terminal (log-update), else only messages.
import type { Writable } from 'node:stream';
import type { SupervisorCounts } from '../pool/types.js';
import { formatElapsed } from './progress.js';
import type { LiveLine, ProgressDisplay, ProgressMode } from './progress-display.js';

const PREFIX = 'supervise: ';
const REFRESH_MS = 250;

/** Counts as the batch line shows them: invalid task lines count as failed, timed out too. */
export interface BatchCounts extends SupervisorCounts {
  invalid: number;
  /** The rate-limit gate when it holds tasks back (`rate-limited until 14:03:07`, `rate-limited: reopening`). */
  rateLimited?: string;
}

export function formatBatchCounts(counts: BatchCounts, elapsedMs: number): string {
  const failed = counts.failed + counts.timedOut + counts.invalid;
  const parts = [`${counts.running} running`, `${counts.queued} queued`, `${counts.done} done`, `${failed} failed`];
  if (counts.cancelled > 0) parts.push(`${counts.cancelled} cancelled`);
  if (counts.warm > 0) parts.push(`${counts.warm} warm`);
  if (counts.rateLimited !== undefined) parts.push(counts.rateLimited);
  parts.push(formatElapsed(elapsedMs));
  return parts.join(' · ');
}

/**
 * `live` (a terminal, no --quiet): the counts line, redrawn in place every 250 ms and on every change.
 * `plain`: nothing but the messages (`say`) and the closing summary, so a log stays short; `quiet`: the summary
 * only when a task did not end done.
 */
export class BatchProgress {
  private readonly mode: ProgressMode;
  private readonly render: LiveLine | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly startedAt: number;
  private stopped = false;

  constructor(
    display: ProgressDisplay,
    private readonly stderr: Writable,
    private readonly counts: () => BatchCounts,
    private readonly now: () => number = Date.now,
  ) {
    this.mode = display.mode;
    this.startedAt = now();
    if (display.liveLine !== undefined) {
      this.render = display.liveLine(stderr);
      this.timer = setInterval(() => this.draw(), REFRESH_MS);
      this.timer.unref();
      this.draw();
    }
  }

  get elapsedMs(): number {
    return this.now() - this.startedAt;
  }

  /** A message about how the batch goes (its summary when every task ended done): shown unless --quiet. */
  inform(text: string): void {
    if (this.mode !== 'quiet') this.say(text);
  }

  /** A message in every mode (bad task lines, signals, failures). */
  say(text: string): void {
    if (this.render !== undefined && !this.stopped) this.render.clear();
    this.stderr.write(`${PREFIX}${text}\n`);
    this.draw();
  }

  /** The counts changed. */
  draw(): void {
    if (this.render !== undefined && !this.stopped) this.render(`${PREFIX}${formatBatchCounts(this.counts(), this.elapsedMs)}`);
  }

  /** Clears the live line and stops the refresh; idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.render?.clear();
  }
}
