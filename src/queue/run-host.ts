// The worker's run host, main-thread side: a worker thread runs the pool, so the lock renewals of the main thread never wait on a /proc walk.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';
import type { AckOrigin, Delivery, Outcome, RunEvent, RunHandleState, RunOptions } from '../api/types.js';
import { childlessOutcome } from '../run/outcome.js';
import type { AckRecordBody, RelayedControl } from './records.js';

/** Messages to the thread. */
export type HostRequest =
  | { t: 'start'; id: string; options: RunOptions }
  | { t: 'control'; id: string; req: number; control: RelayedControl; text?: string }
  | { t: 'stop'; id: string; reason: string }
  | { t: 'shutdown' };

/** Messages from the thread. */
export type HostMessage =
  | { t: 'events'; id: string; events: RunEvent[]; at: number }
  | { t: 'state'; id: string; state: RunHandleState }
  | { t: 'sent'; id: string; control: string; origin: AckOrigin; seq: number }
  | { t: 'ack'; id: string; control: string; origin: AckOrigin; ack: AckRecordBody }
  | { t: 'delivery'; id: string; seq: number; delivery: Delivery }
  | { t: 'kill'; id: string; signal: string; pids: number[] }
  | { t: 'outcome'; id: string; outcome: Outcome }
  | { t: 'control-result'; req: number; ack: AckRecordBody }
  | { t: 'closed' };

/** Where one run's messages go. */
export interface HostRunSink {
  events(events: RunEvent[], at: number): void;
  state(state: RunHandleState): void;
  /** A control was written to the child (its answer comes as `ack`, or as a control's result). */
  sent(control: string, origin: AckOrigin, seq: number): void;
  ack(control: string, origin: AckOrigin, ack: AckRecordBody): void;
  delivery(seq: number, delivery: Delivery): void;
  kill(step: { signal: string; pids: number[] }): void;
  outcome(outcome: Outcome): void;
}

/** The built thread script, found from the package root (this module may sit in a shared chunk of dist/, or in src/ under a test runner). */
function threadScript(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'subvisor') {
          const script = join(dir, 'dist', 'queue', 'run-host-thread.js');
          if (!existsSync(script)) throw new Error(`subvisor/queue: ${script} is missing; build the package first (npx tsup)`);
          return script;
        }
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('subvisor/queue: cannot find the subvisor package root');
    dir = parent;
  }
}

/** The pool in its thread, seen from the worker: start runs, relay controls, stop them, close. */
export class RunHost {
  readonly #thread: Thread;
  readonly #sinks = new Map<string, HostRunSink>();
  readonly #pending = new Map<number, (ack: AckRecordBody) => void>();
  #nextReq = 1;
  #gone: string | undefined;
  #closed: Promise<void> | undefined;
  readonly #exited: Promise<void>;

  constructor(concurrency: number, onError: (error: Error) => void) {
    this.#thread = new Thread(threadScript(), { workerData: { concurrency } });
    this.#thread.on('message', (message: HostMessage) => this.#receive(message));
    this.#thread.on('error', (error) => onError(new Error(`the run host thread failed: ${error.message}`)));
    this.#exited = new Promise((resolve) => {
      this.#thread.once('exit', (code) => {
        this.#fail(`the run host thread exited (code ${code})`);
        resolve();
      });
    });
  }

  get size(): number {
    return this.#sinks.size;
  }

  start(id: string, options: RunOptions, sink: HostRunSink): void {
    if (this.#gone !== undefined) {
      sink.outcome(childlessOutcome(id, 'failed', 'channel-error', this.#gone));
      return;
    }
    this.#sinks.set(id, sink);
    this.#thread.postMessage({ t: 'start', id, options } satisfies HostRequest);
  }

  /** Relays a control to a run of this host; resolves with its ack (`unanswered` when the run is not here). */
  control(id: string, control: RelayedControl, text: string | undefined): Promise<AckRecordBody> {
    if (this.#gone !== undefined || !this.#sinks.has(id)) return Promise.resolve({ status: 'unanswered', reason: 'the run is not on this worker', seq: 0 });
    const req = this.#nextReq++;
    return new Promise((resolve) => {
      this.#pending.set(req, resolve);
      const message: HostRequest = { t: 'control', id, req, control };
      if (text !== undefined) message.text = text;
      this.#thread.postMessage(message);
    });
  }

  /** Ends a run (cancel, then the kill ladder); its outcome arrives as usual. */
  stop(id: string, reason: string): void {
    if (this.#gone === undefined && this.#sinks.has(id)) this.#thread.postMessage({ t: 'stop', id, reason } satisfies HostRequest);
  }

  /** Kills what still runs, waits for every tree to be gone and for the thread to exit. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      if (this.#gone === undefined) this.#thread.postMessage({ t: 'shutdown' } satisfies HostRequest);
      await this.#exited;
    })();
    return this.#closed;
  }

  #receive(message: HostMessage): void {
    if (message.t === 'closed') return;
    if (message.t === 'control-result') {
      const resolve = this.#pending.get(message.req);
      this.#pending.delete(message.req);
      resolve?.(message.ack);
      return;
    }
    const sink = this.#sinks.get(message.id);
    if (sink === undefined) return;
    switch (message.t) {
      case 'events':
        sink.events(message.events, message.at);
        break;
      case 'state':
        sink.state(message.state);
        break;
      case 'sent':
        sink.sent(message.control, message.origin, message.seq);
        break;
      case 'ack':
        sink.ack(message.control, message.origin, message.ack);
        break;
      case 'delivery':
        sink.delivery(message.seq, message.delivery);
        break;
      case 'kill':
        sink.kill({ signal: message.signal, pids: message.pids });
        break;
      case 'outcome':
        this.#sinks.delete(message.id);
        sink.outcome(message.outcome);
        break;
    }
  }

  /** The thread is gone: every run it held ends failed, every pending control unanswered. */
  #fail(reason: string): void {
    this.#gone = reason;
    for (const resolve of this.#pending.values()) resolve({ status: 'unanswered', reason, seq: 0 });
    this.#pending.clear();
    const sinks = [...this.#sinks];
    this.#sinks.clear();
    for (const [id, sink] of sinks) sink.outcome(childlessOutcome(id, 'failed', 'channel-error', reason));
  }
}
