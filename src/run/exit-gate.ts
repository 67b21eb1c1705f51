// The stream's last event: the child's `exit` held until the run's verdict gives it its status (or a synthetic one), published once, then the iterators end.
import type { FinishReport } from '../protocol/driver.js';
import type { ExitRunEvent, RunEvent } from '../protocol/index.js';
import type { Verdict } from './outcome.js';

/**
 * Closes the descriptor of events still behind when a run handle is dropped before they were taken
 * (nothing else would: the program holds no way to take them any more).
 */
const eventsBehindRelease = new FinalizationRegistry<() => void>((release) => release());

export interface ExitGateHooks {
  runId: string;
  publish(event: RunEvent): void;
  endIterators(): void;
}

export class ExitGate {
  readonly #hooks: ExitGateHooks;
  /** An `exit` came (the driver's, or made up): nothing is published after it. */
  #closed = false;
  /** The driver's `exit` event, held until the run's verdict gives it its status. */
  #held: ExitRunEvent | undefined;
  /** The run's single verdict, once the child is gone: every published `exit` carries its status. */
  #verdict: Verdict | undefined;
  #eventsBehind = false;

  constructor(hooks: ExitGateHooks) {
    this.#hooks = hooks;
  }

  /** The exit came: nothing more is published. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The outcome may come before the last events: the driver still publishes them as the consumers take them. */
  get eventsBehind(): boolean {
    return this.#eventsBehind;
  }

  /**
   * The driver's exit is the child's word; the stream's last event is the run's verdict, known once the
   * child is gone (a deadline or a protocol failure can still outrank what the child said).
   */
  childExit(event: ExitRunEvent): void {
    this.#closed = true;
    if (this.#verdict === undefined) this.#held = event;
    else this.#publishExit(event, this.#verdict);
  }

  /**
   * The run's verdict is known: the held exit goes out with its status; else, when the driver still has
   * events behind, a synthetic exit follows them (`owner`: the run handle, whose collection releases
   * them); else a synthetic exit now.
   */
  decided(verdict: Verdict, finished: void | FinishReport, owner: object): void {
    this.#verdict = verdict;
    const held = this.#held;
    this.#held = undefined;
    if (held !== undefined) {
      this.#publishExit(held, verdict);
    } else if (finished?.eventsBehind !== undefined && !this.#closed) {
      this.#eventsBehind = true;
      const token = {};
      if (finished.release !== undefined) eventsBehindRelease.register(owner, finished.release, token);
      void finished.eventsBehind.then(() => {
        eventsBehindRelease.unregister(token);
        if (!this.#closed) this.synthetic(verdict);
        this.#eventsBehind = false;
      });
    } else if (!this.#closed) {
      this.synthetic(verdict);
    }
  }

  /** An exit the child never sent: the verdict's status, marked synthetic. */
  synthetic(verdict: Verdict): void {
    const event: ExitRunEvent = { type: 'exit', status: verdict.status, synthetic: true, run: this.#hooks.runId };
    if (verdict.error !== '') event.error = verdict.error;
    this.#closed = true;
    this.#hooks.publish(event);
    this.#hooks.endIterators();
  }

  /**
   * Publishes the driver's `exit` with the verdict's status: when the child said otherwise (it obeyed the
   * cancel of a deadline, a protocol failure outranked it), its word stays in `childStatus` and the
   * verdict's error replaces its own.
   */
  #publishExit(exit: ExitRunEvent, verdict: Verdict): void {
    let event = exit;
    if (exit.status !== verdict.status) {
      event = { ...exit, status: verdict.status, childStatus: exit.status };
      if (verdict.error !== '') event.error = verdict.error;
      else delete event.error;
    }
    this.#hooks.publish(event);
    this.#hooks.endIterators();
  }
}
