// Fen's driver: the private channel directory and FEN_WIRE_* env, control lines, and event lines read into run facts.
import { channelEnv, ControlWriter, createRunDirectory, removeRunDirectory } from '../../channel/index.js';
import type { ControlPayload, ReaderRejection, RunDirectory } from '../../channel/index.js';
import type { Control, Driver, DriverContext, FinishReport, Launch, Protocol, SendOutcome } from '../../run/driver.js';
import type { ResolvedRunOptions } from '../../run/resolved-options.js';
import type { OutcomeErrorCode, RejectedEvent } from '../../run/types/index.js';
import { createSender, toUsage } from '../../wire/index.js';
import type { JsonObject, Usage, WireControlType, WireEvent } from '../../wire/index.js';
import { readAnswer } from './answer.js';
import { withoutTransportNote } from './transport-note.js';
import { toRunEvent } from './to-run-event.js';
import { FILE_FAILURES, TwoPassReader } from './two-pass-reader.js';

/** Outcome codes of the fatal rejections of the event channel. */
const PROTOCOL_FAILURE_CODES: Record<string, OutcomeErrorCode> = {
  'version-mismatch': 'version-mismatch',
  'foreign-run': 'foreign-run',
  'event-file-truncated': 'event-file-truncated',
  'event-file-replaced': 'event-file-replaced',
  'read-error': 'channel-error',
};

/**
 * A Fen child (`--presenter rpc`): controls are appended to the control file, events are tailed from
 * the event file, both in a private run directory named by `FEN_WIRE_*`. stdin is closed and stdout
 * joins stderr in the output tail. The answer is the result's text or its `final-text-path` file.
 */
export class FenDriver implements Driver {
  readonly closeWhenIdle = true;
  readonly readsAhead = true;
  readonly #context: DriverContext;
  #directory: RunDirectory | undefined;
  #writer: ControlWriter | undefined;
  #reader: TwoPassReader | undefined;
  #resultSeen = false;
  /** Resolves once every event was published (the events pass stopped). */
  #eventsDone: (() => void) | undefined;

  constructor(context: DriverContext) {
    this.#context = context;
  }

  get channelDir(): string {
    return this.#directory?.dir ?? '';
  }

  launch(): Launch {
    const { options, runId } = this.#context;
    let directory: RunDirectory | undefined;
    try {
      directory = createRunDirectory(options.stateDir, { keep: options.keepFiles });
      this.#directory = directory;
      this.#writer = new ControlWriter(directory.controlPath, runId);
      let taskRef: number | undefined;
      if (options.task !== undefined) {
        const sent = this.#writer.send('prompt', { text: options.task });
        if (!sent.ok) throw new Error('rejection' in sent ? sent.rejection.reason : sent.reason);
        taskRef = sent.seq;
      }
      const sink = this.#context.sink;
      this.#reader = new TwoPassReader(
        directory.eventPath,
        runId,
        {
          facts: (event, ahead) => {
            this.#facts(event);
            if (ahead) sink.lineAhead(false);
          },
          publish: (event, bytes) => sink.event(withoutTransportNote(toRunEvent(event)), bytes),
          rejectedFacts: (rejection, ahead) => this.#rejectionFacts(rejection, ahead),
          publishRejected: (rejection, bytes, factsAhead) => sink.rejected(toRejectedEvent(rejection), bytes, factsAhead),
          eventsDone: () => this.#eventsDone?.(),
        },
        { backpressure: () => this.#context.backpressure(), latencyBudgetMs: options.latencyBudgetMs },
      );
      this.#reader.start();
      return {
        process: {
          command: options.command,
          args: options.args,
          env: channelEnv(directory, runId, options.deadlineMs),
          stdin: 'ignore',
          stdout: 'tail',
        },
        ...(taskRef === undefined ? {} : { taskRef }),
        ...(options.keepFiles ? {} : { ownFiles: { dir: directory.dir, files: [directory.controlPath, directory.eventPath] } }),
      };
    } catch (error) {
      this.#writer?.close();
      this.#reader?.close();
      if (directory !== undefined) removeRunDirectory(directory.dir);
      this.#directory = undefined;
      throw new Error(`could not set up the run directory under ${options.stateDir}: ${(error as Error).message}`);
    }
  }

  attach(): void {
    // Fen's channel is the run directory, already open: the pipes are only tailed.
  }

  send(control: Control): SendOutcome {
    const writer = this.#writer;
    if (writer === undefined) return { kind: 'broken', reason: 'the control channel is closed' };
    const { type, ...payload } = control;
    const sent = writer.send(type, payload as ControlPayload<WireControlType>);
    if (sent.ok) return { kind: 'sent', ref: sent.seq };
    if ('rejection' in sent) {
      return { kind: 'refused', code: sent.rejection.code === 'too-large' ? 'too-large' : 'invalid', reason: sent.rejection.reason };
    }
    return { kind: 'broken', reason: sent.reason };
  }

  resume(): void {
    this.#reader?.drain();
  }

  finish(): FinishReport | undefined | Promise<FinishReport | undefined> {
    this.#writer?.close();
    const reader = this.#reader;
    if (reader === undefined) return undefined;
    // Everything the child wrote before it died is still in the file: its facts are all read within a
    // turn of the event loop (by the events pass if it gets there first), its events as the consumers
    // take them (never all at once into memory).
    const eventsBehind = new Promise<void>((resolve) => (this.#eventsDone = resolve));
    const report = (): FinishReport | undefined =>
      reader.eventsPending ? { eventsBehind, release: reader.eventsCloser() } : undefined;
    const factsIn = reader.end();
    return factsIn === undefined ? report() : factsIn.then(report);
  }

  disconnect(): void {
    // Never called: a Fen run always has a process.
  }

  dispose(now = false): void {
    this.#writer?.close();
    // Events still behind are read from the open descriptor: the file may be removed under it.
    if (now || this.#reader?.eventsPending !== true || this.#eventsDone === undefined) this.#reader?.close();
    else this.#reader.closeFacts();
    if (this.#directory !== undefined && !this.#context.options.keepFiles) removeRunDirectory(this.#directory.dir);
  }

  /** The facts one event line carries (its event follows, now or later, and settles what they answered). */
  #facts(event: WireEvent): void {
    const sink = this.#context.sink;
    switch (event.type) {
      case 'ready':
        sink.ready();
        break;
      case 'control-ack':
        // A rejection of a line with no usable seq names no control of ours.
        if (event.ref !== undefined) sink.ack(event.ref, event.status, event.reason);
        break;
      case 'steering-injected':
      case 'follow-up-injected':
        if (event.ref !== undefined) sink.delivery(event.ref, 'injected');
        break;
      case 'info':
        for (const ref of event.refs ?? []) sink.delivery(ref, 'dropped');
        break;
      case 'turn-started':
        sink.turnStarted(event.turn);
        break;
      case 'turn-complete':
        sink.turnCompleted({ turn: event.turn, stopReason: event['stop-reason'], ...usageOf(event) });
        break;
      case 'result':
        // Only the first result is the answer: a second one must not read (and remove) another file.
        if (!this.#resultSeen) {
          this.#resultSeen = true;
          sink.result({
            stopReason: event['stop-reason'],
            ...usageOf(event),
            answer: readAnswer(event, {
              maxBytes: this.#context.options.maxFinalTextBytes,
              runStartedAt: this.#context.startedAt,
            }),
          });
        }
        break;
      case 'exit':
        // Nothing may follow `exit` (the reader stops there).
        sink.exit(event.error === undefined ? { status: event.status } : { status: event.status, error: event.error });
        break;
    }
  }

  /** A rejection's facts: a fatal one ends the run; a line found ahead of its publication counts now. */
  #rejectionFacts(rejection: ReaderRejection, ahead: boolean): void {
    const sink = this.#context.sink;
    if (rejection.fatal) {
      sink.fatal(PROTOCOL_FAILURE_CODES[rejection.code] ?? 'channel-error', `protocol failure (${rejection.code}): ${rejection.reason}`);
    }
    if (ahead && !FILE_FAILURES.has(rejection.code)) sink.lineAhead(true);
  }
}

function toRejectedEvent(rejection: ReaderRejection): RejectedEvent {
  const event: RejectedEvent = { type: 'rejected', code: rejection.code, reason: rejection.reason, fatal: rejection.fatal };
  if (rejection.seq !== undefined) event.seq = rejection.seq;
  if (rejection.type !== undefined) event.lineType = rejection.type;
  if (rejection.run !== undefined) event.run = rejection.run;
  if (rejection.errors !== undefined) event.errors = rejection.errors;
  return event;
}

/** Fen's wire protocol (the default). */
export const fenProtocol: Protocol = {
  validate(options: ResolvedRunOptions): void {
    if (options.task === undefined) return;
    const encoded = createSender('control', options.runId).next('prompt', { text: options.task });
    if (!encoded.ok) throw new RangeError(`options.task cannot be sent as a prompt: ${encoded.rejection.reason}`);
  },
  create: (context) => new FenDriver(context),
};

/** The `usage` of a turn-complete or result, in subvisor's shape, as a spreadable field. */
function usageOf(event: { usage?: JsonObject }): { usage?: Usage } {
  return event.usage === undefined ? {} : { usage: toUsage(event.usage) };
}
