// Fa's HEP v1 driver: `command args -p <task>`, stdout lines (the shared stdio channel) to the pure session, cancel as SIGINT, the exit code at the end.
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
import { StdioChannel } from '../shared/stdio/channel.js';
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
  readonly #context: DriverContext;
  readonly #session: HepSession;
  readonly #channel: StdioChannel;
  /** The task is ref 1; the controls sent later count on from 2. */
  #nextRef = 2;

  constructor(context: DriverContext) {
    this.#context = context;
    this.#session = new HepSession(context.sink, context.runId, 1);
    this.#channel = new StdioChannel({
      maxLineBytes: context.options.maxFrameBytes,
      shouldPause: () => context.shouldPause(),
      lines: { line: (text) => this.#session.line(text), overlong: (rejection) => this.#session.overlong(rejection) },
    });
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
    this.#channel.attach(io);
  }

  send(control: Control): SendOutcome {
    const ref = this.#nextRef++;
    let answer: [status: 'accepted' | 'rejected', reason: string | undefined];
    if (control.type === 'cancel') {
      // HEP's cancel is SIGINT: fa writes `cancelled` and exits 130.
      const delivered = this.#channel.signal('SIGINT');
      answer = delivered ? ['accepted', undefined] : ['rejected', 'the child has already exited'];
    } else {
      answer = ['rejected', UNSUPPORTED[control.type]];
    }
    // Never before `send` returned the ref the answer names.
    queueMicrotask(() => this.#session.answer(ref, ...answer));
    return { kind: 'sent', ref };
  }

  resume(): void {
    this.#channel.resume();
  }

  async finish(exit: ProcessExitInfo | undefined): Promise<void> {
    if (exit === undefined || exit.spawnFailed) return;
    // The pipe may still hold the last frames: read them (bounded), then how the process ended.
    this.#session.end(await this.#channel.finish(), exit);
  }

  dispose(): void {
    this.#channel.dispose();
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
