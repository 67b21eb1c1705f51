// Progress on stderr: a live status line on a terminal (log-update), plain one-line notes otherwise, or nothing with --quiet.
import type { Writable } from 'node:stream';
import type { RunEvent, RunHandleState } from '../api/types.js';
import { totalTokens } from '../wire/index.js';
import type { LiveLine, ProgressDisplay, ProgressMode } from './progress-display.js';

const PREFIX = 'supervise: ';
const REFRESH_MS = 250;

export function formatElapsed(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.floor((ms % 60_000) / 1000);
  return `${minutes}m${String(seconds).padStart(2, '0')}s`;
}

/** What the status line shows, updated from the run's events. */
interface Status {
  state: RunHandleState;
  turn: number;
  tool?: string;
  /** Tokens of finished turns. */
  doneTokens: number;
  /** Tokens of model calls in the running turn (replaced by the turn's own total when it completes). */
  turnTokens: number;
}

export class Progress {
  private readonly status: Status = { state: 'starting', turn: 0, doneTokens: 0, turnTokens: 0 };
  private readonly startedAt: number;
  private readonly mode: ProgressMode;
  private readonly render: LiveLine | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Holds on the live line (a question on the terminal): it is cleared and not redrawn meanwhile. */
  private holds = 0;

  constructor(
    display: ProgressDisplay,
    private readonly stderr: Writable,
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

  /** Clears the live line and keeps it off until the returned release is called (once). */
  hold(): () => void {
    this.holds++;
    this.render?.clear();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds--;
      this.draw();
    };
  }

  /** A message about how the run goes (queued, started on a worker, ended done): shown unless --quiet. */
  inform(text: string): void {
    if (this.mode !== 'quiet') this.say(text);
  }

  /** A message that shows in every mode (control acks, warnings, errors). */
  say(text: string): void {
    if (this.render !== undefined && !this.stopped && this.holds === 0) {
      this.render.clear();
      this.stderr.write(`${PREFIX}${text}\n`);
      this.draw();
    } else {
      this.stderr.write(`${PREFIX}${text}\n`);
    }
  }

  /** A progress note: printed in plain mode only (the live line already shows it). */
  private note(text: string): void {
    if (this.mode === 'plain') this.stderr.write(`${PREFIX}${text}\n`);
  }

  /** Without a pid the child never started; the closing summary says why. */
  started(runId: string, pid: number | undefined): void {
    if (pid !== undefined) this.note(`run ${runId} started (pid ${pid})`);
  }

  state(state: RunHandleState): void {
    this.status.state = state;
    this.draw();
  }

  event(event: RunEvent): void {
    switch (event.type) {
      case 'ready':
        this.note('child ready');
        break;
      case 'turn-started':
        this.status.turn = event.turn;
        this.status.turnTokens = 0;
        this.note(`turn ${event.turn} started`);
        break;
      case 'llm-end':
        this.status.turnTokens += totalTokens(event.usage) ?? 0;
        break;
      case 'tool-call':
        this.status.tool = event.name;
        this.note(`tool ${event.name}`);
        break;
      case 'tool-result':
        this.status.tool = undefined;
        break;
      case 'turn-complete': {
        const tokens = totalTokens(event.usage);
        this.status.doneTokens += tokens ?? this.status.turnTokens;
        this.status.turnTokens = 0;
        this.status.tool = undefined;
        const usage = tokens === undefined ? '' : `, ${tokens} tokens`;
        this.note(`turn ${event.turn} complete (${event.stopReason}${usage})`);
        break;
      }
      default:
        return;
    }
    this.draw();
  }

  private line(): string {
    const { state, turn, tool, doneTokens, turnTokens } = this.status;
    const parts = [state, turn > 0 ? `turn ${turn}` : 'no turn yet'];
    if (tool !== undefined) parts.push(`tool ${tool}`);
    parts.push(`${doneTokens + turnTokens} tokens`, formatElapsed(this.now() - this.startedAt));
    return `${PREFIX}${parts.join(' · ')}`;
  }

  private draw(): void {
    if (this.render !== undefined && !this.stopped && this.holds === 0) this.render(this.line());
  }

  /** Clears the live line (before the answer is printed) and stops the refresh timer; idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.render?.clear();
  }
}
