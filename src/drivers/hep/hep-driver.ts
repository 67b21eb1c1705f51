// Fa's HEP v1 driver: `command args -p <task>`, stdout lines to the pure session, cancel as SIGINT, the exit code at the end.
import type { Readable } from 'node:stream';
import type {
  Control,
  Driver,
  DriverContext,
  Launch,
  ProcessExitInfo,
  ProcessIO,
  Protocol,
  SendOutcome,
} from '../../protocol/driver.js';
import type { ResolvedRunOptions } from '../../protocol/resolved-options.js';
import { LineSplitter } from '../../text/line-splitter.js';
import type { LineReceiver } from '../../text/line-splitter.js';
import { HepSession } from './hep-session.js';

/** Why each control HEP cannot carry is refused (its Ack is `rejected` with this reason). */
const UNSUPPORTED: Record<Exclude<Control['type'], 'cancel'>, string> = {
  prompt: 'HEP runs one prompt per process: start a new run for another prompt',
  steer: 'HEP runs one prompt per process and reads no input: a HEP child cannot be steered',
  'follow-up': 'HEP runs one prompt per process: start a new run for a follow-up',
  finalize: 'HEP has no finalize: the child ends by itself after its prompt; cancel() stops it',
  close: 'HEP has no close: the child ends by itself after its prompt; cancel() stops it',
};

/**
 * A `fa --output events` child: its stdout lines go to the pure {@link HepSession}, stderr is the output
 * tail. `cancel` is SIGINT; the other controls are answered `rejected` (one process per prompt).
 */
export class HepDriver implements Driver {
  readonly closeWhenIdle = false;
  readonly readsAhead = false;
  readonly channelDir = '';
  readonly #context: DriverContext;
  readonly #splitter: LineSplitter;
  readonly #session: HepSession;
  /** Where the splitter hands each stdout line (one object for the run, not one per line). */
  readonly #lines: LineReceiver;
  #io: ProcessIO | undefined;
  #stdoutClosed: Promise<void> = Promise.resolve();
  /** The task is ref 1; the controls sent later count on from 2. */
  #nextRef = 2;

  constructor(context: DriverContext) {
    this.#context = context;
    this.#splitter = new LineSplitter(context.options.maxFrameBytes);
    this.#session = new HepSession(context.sink, context.runId, 1);
    this.#lines = {
      line: (text) => this.#session.line(text),
      tooLong: (_lineNumber, limit) => this.#session.tooLong(limit),
    };
  }

  launch(): Launch {
    const { options } = this.#context;
    return {
      process: {
        command: options.command,
        args: [...options.args, '-p', options.task!],
        env: {},
        stdin: 'ignore',
        stdout: 'driver',
      },
      taskRef: 1,
    };
  }

  attach(io: ProcessIO): void {
    this.#io = io;
    const stdout = io.stdout;
    if (stdout === undefined) return;
    this.#stdoutClosed = new Promise((resolve) => stdout.once('close', resolve));
    stdout.on('data', (chunk: Buffer) => {
      this.#splitter.write(chunk, this.#lines);
      if (this.#context.shouldPause()) stdout.pause();
    });
    // A read error ends the stream like EOF; what was read stands.
    stdout.on('error', () => undefined);
  }

  send(control: Control): SendOutcome {
    const ref = this.#nextRef++;
    let answer: [status: 'accepted' | 'rejected', reason: string | undefined];
    if (control.type === 'cancel') {
      // HEP's cancel is SIGINT: fa writes `cancelled` and exits 130.
      const delivered = this.#io?.signal('SIGINT') ?? false;
      answer = delivered ? ['accepted', undefined] : ['rejected', 'the child has already exited'];
    } else {
      answer = ['rejected', UNSUPPORTED[control.type]];
    }
    // Never before `send` returned the ref the answer names.
    queueMicrotask(() => this.#session.answer(ref, ...answer));
    return { kind: 'sent', ref };
  }

  resume(): void {
    const stdout: Readable | undefined = this.#io?.stdout;
    if (stdout?.isPaused() === true) stdout.resume();
  }

  async finish(exit: ProcessExitInfo | undefined): Promise<void> {
    if (exit === undefined || exit.spawnFailed) return;
    // The pipe may still hold the last frames: read until every writer closed it (the core's reap closes it at the latest).
    this.#io?.stdout?.resume();
    await this.#stdoutClosed;
    this.#session.end(this.#splitter.finish(), exit);
  }

  disconnect(): void {
    // Never called: a HEP run always has a process.
  }

  dispose(): void {
    this.#io?.stdout?.destroy();
  }
}

/** Fa's Harness Event Protocol v1 (`fa --output events`). */
export const hepProtocol: Protocol = {
  // A turn is one model round, whose usage (cost included) comes with its turn_done; a HEP child reads no input.
  reports: { turns: true, toolCalls: true, tokens: true, costUsd: true },
  capabilities: { finalize: false, continueConversation: false },
  validate(options: ResolvedRunOptions): void {
    if (typeof options.task !== 'string' || options.task === '') {
      throw new TypeError("a HEP run needs options.task (a non-empty string): fa takes its prompt as '-p <task>'");
    }
  },
  create: (context) => new HepDriver(context),
};
