// Sends the controls read from --controls to the run and reports each one's ack and delivery (stderr and events).
import type { Ack, Run } from '../api/types.js';

/** What controls are sent to: a local run, or a queued one (subvisor/queue's RemoteRun) through Redis. */
export type ControlTarget = Pick<Run, 'prompt' | 'steer' | 'followUp' | 'finalize' | 'cancel' | 'close'>;
import { describeControl, parseControlLine, type ControlRequest } from './control-line.js';
import type { EventMarks } from './event-marks.js';
import type { SplitLine } from '../text/line-splitter.js';
import type { LocalEvent, OutputWriter } from './output.js';

/** Where control reports go. */
export interface ControlReporting {
  say(text: string): void;
  /** How reports name the controls source, as `<source>:<line>`: the path given to --controls, or `stdin`. */
  source: string;
  writer: OutputWriter;
  /** Reports wait until the event loop passed the child's ack or delivery notice they are about. */
  marks: EventMarks;
}

function send(run: ControlTarget, control: ControlRequest): Promise<Ack> {
  switch (control.type) {
    case 'prompt':
      return run.prompt(control.text);
    case 'steer':
      return run.steer(control.text);
    case 'follow-up':
      return run.followUp(control.text);
    case 'finalize':
      return run.finalize(control.note);
    case 'cancel':
      return run.cancel();
    case 'close':
      return run.close();
  }
}

export class ControlDispatcher {
  private readonly reports: Promise<void>[] = [];

  constructor(
    private readonly run: ControlTarget,
    private readonly reporting: ControlReporting,
  ) {}

  /** Handles one line of the controls source; never throws. */
  line(line: SplitLine): void {
    if (line.kind === 'too-long') {
      this.invalid(line.lineNumber, `longer than ${line.limit} bytes`);
      return;
    }
    const parsed = parseControlLine(line.text);
    if (parsed.kind === 'skip') return;
    if (parsed.kind === 'invalid') {
      this.invalid(line.lineNumber, parsed.reason);
      return;
    }
    this.reports.push(this.dispatch(line.lineNumber, parsed.control));
  }

  /** Resolves when every control sent so far has been reported (acks and deliveries settle by the run's end). */
  async settled(): Promise<void> {
    await Promise.allSettled(this.reports);
  }

  /** `file:line`, as compilers write it: the user can open the file at that line (comments and blanks count). */
  private where(line: number): string {
    return `${this.reporting.source}:${line}`;
  }

  private invalid(line: number, reason: string): void {
    this.reporting.say(`${this.where(line)}: skipped: ${reason}`);
    this.report({ type: 'supervise-invalid-control', line, reason });
  }

  private report(event: LocalEvent): void {
    this.reports.push(this.reporting.writer.local(event));
  }

  private async dispatch(line: number, control: ControlRequest): Promise<void> {
    const what = describeControl(control);
    let ack: Ack;
    try {
      ack = await send(this.run, control);
    } catch (error) {
      // The Run API refuses locally (ControlRefusedError: empty text, too large, run ended) without writing a line.
      const reason = error instanceof Error ? error.message : String(error);
      this.reporting.say(`${this.where(line)}: ${what} refused: ${reason}`);
      await this.reporting.writer.local({ type: 'supervise-control', line, control: control.type, status: 'refused', reason });
      return;
    }
    // An ending control on a run that had already ended wrote no line: there is no ack event to wait for.
    if (ack.runEnded !== true) await this.reporting.marks.ack(ack.seq);
    const reason = ack.reason === undefined ? '' : `: ${ack.reason}`;
    this.reporting.say(`${this.where(line)}: ${what} ${ack.status} (seq ${ack.seq})${reason}`);
    await this.reporting.writer.local({
      type: 'supervise-control',
      line,
      control: control.type,
      status: ack.status,
      seq: ack.seq,
      ...(ack.reason === undefined ? {} : { reason: ack.reason }),
    });
    if (ack.delivery === undefined) return;
    const delivery = await ack.delivery;
    await this.reporting.marks.delivery(ack.seq);
    this.reporting.say(`${this.where(line)}: ${control.type} (seq ${ack.seq}) ${delivery}`);
    await this.reporting.writer.local({ type: 'supervise-delivery', line, control: control.type, seq: ack.seq, delivery });
  }
}
