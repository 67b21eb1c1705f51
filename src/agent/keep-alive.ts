// sessions: 'keep-alive': one live run per session, each invoke one prompt on it, the turn's window held open for follow-ups.
import { ControlRefusedError } from '../run/errors.js';
import type { Run, RunEvent } from '../api/types.js';
import { endOfRun } from './fresh-turn.js';
import type { TurnSource } from './invoke-stream.js';
import { RunEventMapper } from './map-run-events.js';
import { cancelThenKill } from './stop-run.js';
import { failed } from './terminal.js';
import type { AgentEvent } from './types.js';

/** A session's live keep-alive run and the one event iterator all its invokes read in turn. */
export class KeepAliveSession {
  readonly events: AsyncIterator<RunEvent, undefined>;
  /** Accepted follow-ups not yet injected or dropped: the turn's window stays open until they are. */
  readonly pendingFollowUps = new Set<number>();
  idleTimer: NodeJS.Timeout | undefined;

  constructor(readonly run: Run) {
    this.events = run[Symbol.asyncIterator]();
    // Listeners run synchronously with the run's own bookkeeping, before the next event is published.
    run.on('ack', (ack, control) => {
      if (control === 'follow-up' && ack.status === 'accepted') this.pendingFollowUps.add(ack.seq);
    });
    run.on('delivery', (seq) => this.pendingFollowUps.delete(seq));
  }
}

/** What a keep-alive turn needs from the agent that owns the sessions. */
export interface SessionHost {
  /** The session's run when it is still alive. */
  liveSession(session: string): KeepAliveSession | undefined;
  /** Starts a keep-alive run whose first prompt is `text` (throws on invalid options). */
  startSession(session: string, text: string): KeepAliveSession;
  /** Forgets a session whose run ended or is being stopped. */
  dropSession(session: string, live: KeepAliveSession): void;
  /** The invoke on `session` is over (the session may go idle). */
  release(session: string): void;
}

export class KeepAliveTurn implements TurnSource {
  readonly #mapper: RunEventMapper;
  #live: KeepAliveSession | undefined;
  #turnOpen = false;
  #released = false;

  constructor(
    private readonly host: SessionHost,
    private readonly session: string,
    passRunEvents: boolean,
    private readonly cancelGraceMs: number,
  ) {
    this.#mapper = new RunEventMapper(passRunEvents);
  }

  /** The run serving this turn (once started). */
  get run(): Run | undefined {
    return this.#live?.run;
  }

  /**
   * Sends the prompt to the session's live run, or starts one with it. Returns the events of a turn that
   * cannot start (the run refused the prompt), or undefined once the prompt is on its way.
   */
  async start(text: string): Promise<AgentEvent[] | undefined> {
    const live = this.host.liveSession(this.session);
    if (live !== undefined) {
      if (live.idleTimer !== undefined) clearTimeout(live.idleTimer);
      live.idleTimer = undefined;
      try {
        const ack = await live.run.prompt(text);
        if (ack.status === 'accepted') {
          this.#live = live;
          return undefined;
        }
        if (ack.status === 'rejected' && !live.run.ended) {
          return [failed('session_busy', `the session's run refused the prompt: ${ack.reason ?? 'rejected'}`, true)];
        }
      } catch (error) {
        if (!(error instanceof ControlRefusedError)) throw error;
      }
      // The run ended while the session was idle: a new one takes over.
      this.host.dropSession(this.session, live);
    }
    this.#live = this.host.startSession(this.session, text);
    return undefined;
  }

  async pull(): Promise<AgentEvent[]> {
    const live = this.#live!;
    try {
      const next = await live.events.next();
      if (next.done === true) return await this.#endOfRun(live);
      const event = next.value;
      const out = this.#mapper.map(event);
      switch (event.type) {
        case 'turn-started':
          this.#turnOpen = true;
          break;
        case 'turn-complete':
          if (!this.#turnOpen) break;
          this.#turnOpen = false;
          if (event.stopReason === 'error') {
            const child = this.#mapper.childFailure;
            out.push(failed(child?.code ?? 'turn_failed', child?.details ?? 'the turn ended in an error', child?.retryable ?? true));
            this.#release();
          } else if (event.stopReason !== 'aborted' && live.pendingFollowUps.size === 0) {
            // An aborted turn means the run is being cancelled or finalized: its exit decides.
            const data = this.#mapper.data;
            out.push(data === undefined ? { type: 'completed' } : { type: 'completed', data });
            this.#release();
          }
          break;
        case 'exit':
          out.push(...(await this.#endOfRun(live)));
          break;
      }
      return out;
    } catch (error) {
      await this.stop();
      return [failed('internal_error', `subvisor internal error: ${(error as Error).message}`, false)];
    }
  }

  async stop(): Promise<void> {
    const live = this.#live;
    try {
      if (live !== undefined) {
        this.host.dropSession(this.session, live);
        await cancelThenKill(live.run, this.cancelGraceMs, 'the agent consumer stopped reading');
      }
    } finally {
      this.#release();
    }
  }

  async #endOfRun(live: KeepAliveSession): Promise<AgentEvent[]> {
    const outcome = await live.run.outcome;
    this.host.dropSession(this.session, live);
    this.#release();
    return endOfRun(outcome, this.#mapper);
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    this.host.release(this.session);
  }
}
