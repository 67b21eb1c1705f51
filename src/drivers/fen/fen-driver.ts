// Fen's driver: the private channel directory and FEN_WIRE_* env, control lines, and event lines read into run facts.
import { channelEnv, ControlWriter, createDurableDirectory, createRunDirectory, isDurableRunId, openDurableDirectory, removeRunDirectory, writtenControls } from '../../channel/index.js';
import type { ControlPayload, ReaderRejection, RunDirectory } from '../../channel/index.js';
import type { Control, Driver, DriverContext, FinishReport, Launch, Protocol, SendOutcome } from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import type { OutcomeErrorCode, RejectedEvent } from '../../protocol/index.js';
import { createSender, toUsage } from '../../wire/index.js';
import type { JsonObject, Usage, WireControlType, WireEvent } from '../../wire/index.js';
import { readAnswer } from './answer.js';
import { rateLimitOfError } from './rate-limit.js';
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
  /**
   * With an outputSchema: the open turn's answer, its last whole final `assistant-text` (undefined when the
   * child streamed it only, or cut it to its transport bounds: then it is known whole only from the result).
   */
  #turnAnswer: string | undefined;
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
    const attach = options.attach;
    let directory: RunDirectory | undefined;
    let created = false;
    try {
      if (attach !== undefined) {
        directory = openDurableDirectory(attach.dir);
      } else {
        directory = options.durable !== undefined ? createDurableDirectory(options.stateDir, runId) : createRunDirectory(options.stateDir, { keep: options.keepFiles });
        created = true;
      }
      this.#directory = directory;
      // A re-attached run: the earlier parent's controls stay as written; ours are stamped after them.
      const prior = attach === undefined ? [] : writtenControls(directory.controlPath);
      this.#writer = new ControlWriter(directory.controlPath, runId, prior.reduce((last, control) => Math.max(last, control.seq), 0));
      let taskRef: number | undefined;
      if (options.task !== undefined && attach === undefined) {
        const sent = this.#writer.send('prompt', { text: options.task });
        if (!sent.ok) throw new Error('rejection' in sent ? sent.rejection.reason : sent.reason);
        taskRef = sent.seq;
      }
      this.#reader = this.#openReader(directory);
      // A re-attached run's reader starts once the core knows the earlier parent's controls (attach()):
      // their acks are in the file from its first lines.
      if (attach === undefined) this.#reader.start();
      const launch: Launch = {};
      if (attach === undefined) {
        launch.process = {
          command: options.command,
          args: options.args,
          env: channelEnv(directory, runId, options.deadlineMs),
          stdin: 'ignore',
          stdout: 'tail',
        };
      } else {
        launch.priorControls = prior.map(({ seq, type }) => ({ ref: seq, type }));
      }
      if (taskRef !== undefined) launch.taskRef = taskRef;
      if (attach !== undefined || options.durable !== undefined) launch.durableDir = directory.dir;
      if (!options.keepFiles) launch.ownFiles = { dir: directory.dir, files: [directory.controlPath, directory.eventPath] };
      return launch;
    } catch (error) {
      this.#writer?.close();
      this.#reader?.close();
      // Only what this launch made is removed: a re-attached run's directory stays the run's.
      if (directory !== undefined && created) removeRunDirectory(directory.dir);
      this.#directory = undefined;
      const where = attach === undefined ? `set up the run directory under ${options.stateDir}` : `open the run directory ${attach.dir}`;
      throw new Error(`could not ${where}: ${(error as Error).message}`);
    }
  }

  /** The reader of the event file, from its start (a re-attached run reads what the child wrote before too). */
  #openReader(directory: RunDirectory): TwoPassReader {
    const sink = this.#context.sink;
    const reader = new TwoPassReader(
      directory.eventPath,
      this.#context.runId,
      {
        facts: (event, ahead) => {
          this.#facts(event);
          if (ahead) sink.lineAhead(false);
        },
        publish: (event, bytes) => {
          sink.event(withoutTransportNote(toRunEvent(event)), bytes);
          // A provider's refusal: its rate-limit news follows the `error` it came in, with the same seq.
          const limited = event.type === 'error' ? rateLimitOfError(event.error) : undefined;
          if (limited !== undefined) sink.event({ type: 'rate-limit', v: 1, seq: event.seq, run: event.run, ...limited });
        },
        rejectedFacts: (rejection, ahead) => this.#rejectionFacts(rejection, ahead),
        publishRejected: (rejection, bytes, factsAhead) => sink.rejected(toRejectedEvent(rejection), bytes, factsAhead),
        eventsDone: () => this.#eventsDone?.(),
      },
      { backpressure: () => this.#context.backpressure(), latencyBudgetMs: this.#context.options.latencyBudgetMs },
    );
    return reader;
  }

  attach(): void {
    // Fen's channel is the run directory, already open (the pipes are only tailed). A re-attached run's
    // events are read from the start of the file, once the caller holding the handle could add listeners.
    if (this.#context.options.attach !== undefined) queueMicrotask(() => this.#reader?.start());
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
        this.#turnAnswer = undefined;
        sink.turnStarted(event.turn);
        break;
      case 'turn-complete': {
        const answer = this.#context.options.outputSchema === undefined || this.#turnAnswer === undefined ? {} : { answer: this.#turnAnswer };
        sink.turnCompleted({ turn: event.turn, stopReason: event['stop-reason'], ...usageOf(event), ...answer });
        break;
      }
      case 'assistant-text':
        if (event['final?'] === true) this.#turnAnswer = event['transport-truncated?'] === true ? undefined : event.text;
        break;
      case 'tool-call':
        sink.toolCalled();
        break;
      case 'error': {
        const limited = rateLimitOfError(event.error);
        if (limited !== undefined) sink.rateLimit(limited);
        break;
      }
      case 'agent-started':
      case 'llm-start':
        if (event.model !== undefined) sink.modelCall({ model: event.model });
        break;
      case 'llm-end':
        if (event.usage !== undefined) sink.modelCall(usageOf(event));
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
  durable: true,
  reports: { turns: true, toolCalls: true, tokens: true, costUsd: true },
  capabilities: { finalize: true, continueConversation: true },
  validate(options: ResolvedRunOptions): void {
    if (options.durable !== undefined && !isDurableRunId(options.runId)) {
      throw new TypeError("a durable run's runId must be 1-128 characters of A-Z a-z 0-9 . _ - (it names its directory)");
    }
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
