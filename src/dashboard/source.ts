// What a dashboard shows runs from: a pool or a queue producer, seen as entries it can follow and control; and the entry of any run handle.
import type { Ack, Outcome, RunEvent, RunHandleState } from '../api/types.js';

/** Where a followed run's news goes. */
export interface BoardRunSink {
  event(event: RunEvent): void;
  state(state: string): void;
  outcome(outcome: Outcome): void;
}

/** The controls the page may send: the run's own acknowledged ones, nothing else. */
export interface BoardControls {
  steer(text: string): Promise<Ack>;
  cancel(): Promise<Ack>;
  terminate(): Promise<Outcome>;
}

/** One run as a source hands it to the board. */
export interface BoardEntry {
  readonly id: string;
  /** The protocol, or (a queued run) the worker profile's name. */
  readonly label: string;
  readonly task: string | undefined;
  /** 1 for a first attempt (a pool's retry, a queue's next attempt after a lost worker: more). */
  readonly attempt: number;
  /** The state when the board first sees it. */
  readonly state: string;
  /** Follows the run until its outcome (which always comes: `outcome` never rejects); returns a function that stops. */
  follow(sink: BoardRunSink): () => void;
  readonly controls: BoardControls;
}

/** A rate-limit gate that is not open, as the page shows it (a pool's `sup.rateLimited`). */
export interface BoardGate {
  key: string;
  state: 'shut' | 'ramping';
  /** Shut: when it starts to reopen (epoch ms). */
  until: number | null;
  /** Ramping: how many runs may start in this step. */
  allowance: number | null;
  /** Runs waiting at it. */
  waiting: number;
  /** What shut it, in a few words (the status, the native frame, the run). */
  reason: string;
}

/** A pool or a queue producer, as a dashboard reads it. */
export interface BoardSource {
  /** `pool` or `queue`: what the page calls the runs' column and its counts. */
  readonly kind: 'pool' | 'queue';
  /** Hands every run now and every later one to `listener`; returns a function that stops. */
  follow(listener: (entry: BoardEntry) => void): () => void;
  /** Counts of the source's own, when it keeps them (the pool's); else the board counts its rows. */
  counts?(): Record<string, number>;
  /** A pool's rate-limit gates not open: `listener` gets them now and at every change; returns a function that stops. */
  followGates?(listener: (gates: BoardGate[]) => void): () => void;
}

/** What a run handle (a pool's run, a queued run) must offer to be shown. */
export interface ShowableRun {
  readonly id: string;
  readonly state: RunHandleState;
  readonly outcome: Promise<Outcome>;
  on(event: 'event', listener: (event: RunEvent) => void): unknown;
  on(event: 'state', listener: (state: RunHandleState) => void): unknown;
  off(event: 'event', listener: (event: RunEvent) => void): unknown;
  off(event: 'state', listener: (state: RunHandleState) => void): unknown;
  steer(text: string): Promise<Ack>;
  cancel(): Promise<Ack>;
  terminate(reason?: string): Promise<Outcome>;
}

/** The board's entry of a run handle: followed by its listeners until its outcome, controlled by its own methods. */
export function boardEntry(run: ShowableRun, about: { label: string; task: string | undefined; attempt: number }): BoardEntry {
  return {
    id: run.id,
    ...about,
    state: run.state,
    follow(sink) {
      const onEvent = (event: RunEvent) => sink.event(event);
      const onState = (state: RunHandleState) => sink.state(state);
      run.on('event', onEvent);
      run.on('state', onState);
      let following = true;
      const stop = () => {
        following = false;
        run.off('event', onEvent);
        run.off('state', onState);
      };
      void run.outcome.then((outcome) => {
        if (!following) return;
        stop();
        sink.outcome(outcome);
      });
      return stop;
    },
    controls: {
      steer: (text) => run.steer(text),
      cancel: () => run.cancel(),
      terminate: () => run.terminate('terminated from the dashboard'),
    },
  };
}
