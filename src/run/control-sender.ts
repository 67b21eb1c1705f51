// How a control goes out: refused while the run cannot take it, written through the driver, its ack awaited in the ledger, its writing told to the `control` listeners.
import { ControlRefusedError } from './errors.js';
import { isEndingControl, runEndedAck } from './ended-ack.js';
import type { ControlLedger } from './control-ledger.js';
import type { Control, Driver } from '../protocol/driver.js';
import type { Ack, AckOrigin, SentControl } from './handle.js';

export interface ControlSenderHooks {
  runId: string;
  driver: Pick<Driver, 'send'>;
  ledger: ControlLedger;
  /** The caller's `ackTimeoutMs` (a task handed over later may bring another). */
  ackTimeoutMs: number | undefined;
  /** The channel is gone: no control can reach the child. */
  broken(reason: string): void;
  /** The caller's cancel was written (its grace runs from now, answered or not). */
  cancelWritten(): void;
  /** The caller's control was written: an ack is now awaited. */
  written(): void;
  /** Someone listens to `control`: what was written is worth telling. */
  listening(): boolean;
  tell(sent: SentControl): void;
}

export class ControlSender {
  /** Controls may be sent (the child is not known to be exiting or gone). */
  open = false;
  readonly #hooks: ControlSenderHooks;
  /** Tells the `control` listeners of the task prompt, once: see {@link taskWritten}. */
  #taskWritten: (() => void) | undefined;

  constructor(hooks: ControlSenderHooks) {
    this.#hooks = hooks;
  }

  /** The bound of the caller's acks from now on (a task handed to a run that waited for one brings its own). */
  set ackTimeoutMs(ms: number | undefined) {
    this.#hooks.ackTimeoutMs = ms;
  }

  /** A caller's control: rejects (ControlRefusedError) what cannot be sent; an ending control on an ended run resolves instead. */
  send(control: Control): Promise<Ack> {
    const type = control.type;
    const hooks = this.#hooks;
    if (!this.open) {
      if (isEndingControl(type)) return Promise.resolve(runEndedAck(type, `run ${hooks.runId} has ended or is ending`));
      return Promise.reject(
        new ControlRefusedError('run-ended', type, `cannot send ${type}: run ${hooks.runId} has ended or is ending`),
      );
    }
    if ((control.type === 'steer' || control.type === 'follow-up') && control.text === '') {
      return Promise.reject(
        new ControlRefusedError('empty-text', type, `cannot send ${type} with empty text: the child would never inject it`),
      );
    }
    const sent = hooks.driver.send(control);
    if (sent.kind === 'refused') {
      return Promise.reject(new ControlRefusedError(sent.code, type, `cannot send ${type}: ${sent.reason}`));
    }
    if (sent.kind === 'broken') {
      hooks.broken(sent.reason);
      if (isEndingControl(type)) return Promise.resolve(runEndedAck(type, sent.reason));
      return Promise.reject(new ControlRefusedError('run-ended', type, `cannot send ${type}: ${sent.reason}`));
    }
    const ack = hooks.ledger.awaitAck(sent.ref, type, 'caller', hooks.ackTimeoutMs);
    this.#wrote(control, sent.ref, 'caller');
    if (type === 'cancel') hooks.cancelWritten();
    hooks.written();
    return ack;
  }

  /**
   * A control of the core's own (close, cancel; a budget's finalize, the repair follow-up): its ack, or
   * undefined when it was not sent (failures only matter through the kill ladder).
   */
  sendOwn(control: Control): Promise<Ack> | undefined {
    if (!this.open) return undefined;
    const hooks = this.#hooks;
    const sent = hooks.driver.send(control);
    if (sent.kind === 'sent') {
      const ack = hooks.ledger.awaitAck(sent.ref, control.type, 'auto', undefined);
      this.#wrote(control, sent.ref, 'auto');
      return ack;
    }
    if (sent.kind === 'broken') hooks.broken(sent.reason);
    return undefined;
  }

  /**
   * The task of a run started without one, handed over now (a pool's warm child): its ack is the run's
   * `taskAck`, bounded like a caller's; undefined when it could not be sent (a broken channel ends the run).
   */
  sendTask(text: string): Promise<Ack> | undefined {
    if (!this.open) return undefined;
    const hooks = this.#hooks;
    const sent = hooks.driver.send({ type: 'prompt', text });
    if (sent.kind === 'broken') hooks.broken(sent.reason);
    if (sent.kind !== 'sent') return undefined;
    const ack = hooks.ledger.awaitAck(sent.ref, 'prompt', 'task', hooks.ackTimeoutMs);
    // Told as the task written at launch is: the handle that relays this run listens from the hand-off's return.
    this.taskWritten(text, sent.ref);
    hooks.written();
    return ack;
  }

  /**
   * The driver wrote the task prompt at launch, before anybody could listen: it is told on a microtask,
   * or before anything that answers it (see {@link tellTaskWritten}), whichever comes first.
   */
  taskWritten(text: string, ref: number): void {
    const task: Control = { type: 'prompt', text };
    this.#taskWritten = () => this.#wrote(task, ref, 'task');
    queueMicrotask(() => this.tellTaskWritten());
  }

  tellTaskWritten(): void {
    const tell = this.#taskWritten;
    this.#taskWritten = undefined;
    tell?.();
  }

  #wrote(control: Control, seq: number, origin: AckOrigin): void {
    if (!this.#hooks.listening()) return;
    const sent: SentControl = { type: control.type, seq, origin };
    if ('text' in control) sent.text = control.text;
    if ('note' in control && control.note !== undefined) sent.note = control.note;
    this.#hooks.tell(sent);
  }
}
