// The replay child's run: plays a replay script as a Fen child, its acks answering the live controls, and ends as the recorded child did.
import { createReceiver, rejectionAck } from '../../wire/index.js';
import type { WireEventType } from '../../wire/index.js';
import { ControlReader } from '../../child/control-reader.js';
import type { ControlItem } from '../../child/control-reader.js';
import { resultPayload } from '../../child/result.js';
import type { ChildConfig } from '../child/config.js';
import { FakeEventWriter } from '../child/event-writer.js';
import { Lifeline } from '../process/lifeline.js';
import { fenLineOf } from './fen-lines.js';
import { delayOf } from './replay-script.js';
import type { ReplayScript, ReplayStep } from './replay-script.js';

const DEFAULT_MAX_LIFE_MS = 600_000;
/** How often the child looks for a control it waits for (Fen's busy cadence). */
const CONTROL_POLL_MS = 10;

/**
 * Plays `script`: each step in order, after the control it answers has arrived and after its delay
 * (see {@link ReplayTiming}). The k-th control line read is taken for the recording's k-th control
 * when its type matches; any other control (an unexpected type, one more than the recording saw, an
 * invalid line) is rejected with the reason, and the replay goes on waiting for the one it expects.
 */
export class ReplayChildRun {
  readonly #script: ReplayScript;
  readonly #timing: NonNullable<ChildConfig['scenario']['replayTiming']>;
  readonly #lifeline: Lifeline;
  readonly #events: FakeEventWriter;
  readonly #controls: ControlReader;
  readonly #receiver = createReceiver('control');
  /** The live seq of each recorded control, once it arrived. */
  readonly #liveSeqs: number[] = [];
  #next = 0;
  #previousAt = 0;

  constructor(config: ChildConfig, script: ReplayScript) {
    this.#script = script;
    this.#timing = config.scenario.replayTiming ?? 'compressed';
    this.#lifeline = new Lifeline(config.scenario.maxLifeMs ?? DEFAULT_MAX_LIFE_MS, config.ownerPid, config.scenario.outlivesParent === true);
    this.#events = new FakeEventWriter(config.eventPath, config.runId, { written: () => undefined, dropped: (type, reason) => this.#warn(`a ${type} event could not be written: ${reason}`), sleep: (ms) => this.#lifeline.sleep(ms) });
    this.#controls = new ControlReader(config.controlPath);
    // A recorded child that needed SIGKILL ignored SIGTERM: so does its replay.
    if (script.end.escalated) process.on('SIGTERM', () => undefined);
  }

  start(): void {
    this.#tick();
  }

  #tick(): void {
    if (this.#lifeline.parentGone() || this.#lifeline.expired()) return process.exit(1);
    this.#readControls();
    for (;;) {
      const step = this.#script.steps[this.#next];
      if (step === undefined) return this.#end();
      if (step.after !== undefined && this.#liveSeqs.length <= step.after) break;
      const delay = delayOf(this.#timing, step, this.#previousAt, this.#script.controls);
      if (delay > 0 && !this.#lifeline.sleep(delay)) return process.exit(1);
      this.#play(step);
      this.#previousAt = step.at;
      this.#next++;
    }
    setTimeout(() => this.#tick(), CONTROL_POLL_MS);
  }

  /** Ends as the recorded child did: its own exit line is already written; a killed child waits to be killed again. */
  #end(): void {
    const { end } = this.#script;
    if (end.killed && !end.exitLine) {
      // Lingers, answering nothing, until the parent's ladder (or the lifelines) ends it.
      setInterval(() => {
        if (this.#lifeline.parentGone() || this.#lifeline.expired()) process.exit(1);
      }, 100);
      return;
    }
    process.exit(end.exitCode ?? (end.exitLine ? 0 : 1));
  }

  #play(step: ReplayStep): void {
    // A driver's reading of a native frame, not a line of its own: Fen's `error` it came from replays, and the
    // parent reads it again (another protocol's frame has no Fen line: its news is not replayed).
    if (step.event.type === 'rate-limit') return;
    const event = { ...step.event };
    if (typeof event['ref'] === 'number') event['ref'] = this.#liveSeqs[event['ref']];
    if (Array.isArray(event['refs'])) event['refs'] = (event['refs'] as number[]).map((index) => this.#liveSeqs[index]);
    const line = fenLineOf(event);
    if ('raw' in line) return this.#events.writeRaw(line.raw);
    let payload: Record<string, unknown> | undefined = line.payload;
    if (line.type === 'result') {
      const { 'final-text': inline, 'truncated?': _cut, ...base } = line.payload;
      const text = this.#script.finalText ?? (typeof inline === 'string' ? inline : undefined);
      payload = resultPayload(base, text, (candidate) => this.#events.fits('result', candidate), (message) => this.#warn(message));
      if (payload === undefined) return this.#warn('the result does not fit a line');
    }
    this.#events.emitAsIs(line.type as WireEventType, payload);
  }

  #readControls(): void {
    const outcome = this.#controls.read((item) => {
      this.#control(item);
      return true;
    });
    if (!outcome.ok) {
      this.#warn(outcome.reason);
      process.exit(1);
    }
  }

  /** Takes a control line for the recorded control it stands for, or rejects it saying why. */
  #control(item: ControlItem): void {
    if ('tooLong' in item) return void this.#events.emitAsIs('control-ack', rejectionAck({ code: 'too-large', reason: 'line too long', fatal: false }));
    const decoded = this.#receiver.receive(item.line);
    if (!decoded.ok) return void this.#events.emitAsIs('control-ack', rejectionAck(decoded.rejection));
    const { seq, type } = decoded.message;
    const index = this.#liveSeqs.length;
    const expected = this.#script.controls[index];
    if (expected === undefined) {
      this.#events.emitAsIs('control-ack', { status: 'rejected', ref: seq, reason: `replay: the recording saw ${index} controls, not more` });
    } else if (expected.type !== type) {
      this.#events.emitAsIs('control-ack', { status: 'rejected', ref: seq, reason: `replay: the recording's control ${index + 1} was ${expected.type}, not ${type}` });
    } else {
      this.#liveSeqs.push(seq);
    }
  }

  #warn(message: string): void {
    process.stderr.write(`subvisor replay child: ${message}\n`);
  }
}
