// HEP v1's protocol logic, pure: stdout lines to run facts and events, and the exit code to how the run ended. No I/O.
import type { DriverSink, ProcessExitInfo } from '../../protocol/driver.js';
import type { ExitRunEvent, RejectedCode, RunEventDraft, RunEventDraftOf } from '../../protocol/index.js';
import { addUsage } from '../../wire/index.js';
import type { JsonValue, Usage } from '../../wire/index.js';
import { EventStamper } from '../shared/envelope.js';
import { fieldRejection } from '../shared/field-rules.js';
import { decodeTypedFrame } from '../shared/json-line.js';
import type { FrameRejection } from '../shared/json-line.js';
import { rejectedEvent } from '../shared/rejected.js';
import { readUsage } from '../shared/usage-reader.js';
import { addExtras, frameErrors, headerProblem, isBounded, isKnownFrame } from './frames.js';
import type { HepFrame } from './frames.js';

/** Exit codes of `fa` (seed 001 and its code): 0 ok, 1 provider error, 64 usage error, 130 cancelled. */
const EXIT_OK = 0;
const EXIT_PROVIDER_ERROR = 1;
const EXIT_USAGE = 64;
const EXIT_CANCELLED = 130;

/** The frame fields each mapping reads itself (the rest are the event's extras). */
const NONE: readonly string[] = [];
const TURN_ID: readonly string[] = ['turn_id'];
const DELTA_FIELDS: readonly string[] = ['turn_id', 'delta'];
const TOOL_START_FIELDS: readonly string[] = ['turn_id', 'id', 'name', 'args_summary', 'args'];
const TURN_ERROR_FIELDS: readonly string[] = ['turn_id', 'error'];

/** How the last round of the run ended (its terminal frame). */
type Terminal = 'done' | 'error' | 'cancelled';

/**
 * One HEP run's frames. stdout carries only HEP frames, one JSON object per line (its `seq` is the line's
 * number); the first must be `hep_header` v1. A HEP turn is one LLM round: the answer is the `message`
 * of the last `turn_done`, usage is summed over the rounds, and the exit code says how the run ended.
 * The driver hands it lines and the process's end; it reports to the core's sink.
 */
export class HepSession {
  readonly #sink: DriverSink;
  readonly #runId: string;
  readonly #stamper: EventStamper;
  /** The task prompt's ref, acked (made up) when the first round starts. */
  #taskRef: number | undefined;
  #seq = 0;
  /** After a fatal header problem nothing more is interpreted. */
  #stopped = false;
  #headerSeen = false;
  /** The highest round announced with turn-started. */
  #openedTurn = 0;
  /** The highest round ended by its terminal frame (turn_done, turn_error, cancelled). */
  #closedTurn = 0;
  #lastTurnDone: { seq: number; message: string; stopReason: string } | undefined;
  #terminal: Terminal | undefined;
  #turnError: string | undefined;
  /** The rounds' usage summed (HEP's result has none of its own); undefined until a round reports some. */
  #usage: Usage | undefined;
  #skippedFrames = 0;

  constructor(sink: DriverSink, runId: string, taskRef: number) {
    this.#sink = sink;
    this.#runId = runId;
    this.#stamper = new EventStamper(runId);
    this.#taskRef = taskRef;
  }

  /** The process is gone: what stdout held after its last newline, and how the process ended. */
  end(unterminated: string | undefined, exit: ProcessExitInfo): void {
    if (unterminated !== undefined && !this.#stopped) {
      this.#reject(++this.#seq, 'malformed', `stdout ended inside a frame (${Buffer.byteLength(unterminated)} bytes without a newline)`);
    }
    this.#reportEnd(exit);
  }

  /** The answer to a control (HEP has none: made up), with its control-ack event, after the latest line. */
  answer(ref: number, status: 'accepted' | 'rejected', reason: string | undefined): void {
    this.#sink.ack(ref, status, reason);
    this.#publish({ type: 'control-ack', status, ref, ...(reason === undefined ? {} : { reason }) }, this.#seq);
  }

  /** A stdout line longer than `maxFrameBytes` was skipped (`rejection` from the channel). */
  overlong(rejection: FrameRejection): void {
    if (this.#stopped) return;
    this.#skippedFrames++;
    this.#sink.rejected(rejectedEvent(rejection, false, ++this.#seq));
  }

  /** One whole stdout line. */
  line(text: string): void {
    if (this.#stopped) return;
    const seq = ++this.#seq;
    if (!this.#headerSeen) {
      this.#header(text, seq);
      return;
    }
    const decoded = decodeTypedFrame(text, `stdout line ${seq}`);
    if (decoded.rejection !== undefined) {
      this.#sink.rejected(rejectedEvent(decoded.rejection, false, seq));
      return;
    }
    const frame = decoded.value;
    if (frame.type === 'hep_header') {
      this.#reject(seq, 'out-of-order', 'a second hep_header; ignored', frame.type);
      return;
    }
    if (!isKnownFrame(frame.type)) {
      // HEP v1 only grows: a frame type this driver does not know is delivered raw, never dropped.
      this.#publish({ type: 'passthrough', protocol: 'hep', frame }, seq);
      return;
    }
    const errors = frameErrors(frame);
    if (errors.length > 0) {
      this.#sink.rejected(rejectedEvent(fieldRejection(`stdout line ${seq}`, frame.type, [...errors]), false, seq));
      return;
    }
    this.#frame(frame, seq);
  }

  #header(text: string, seq: number): void {
    const problem = headerProblem(text);
    if (problem !== undefined) {
      this.#stopped = true;
      const code = problem.code === 'version-mismatch' ? 'version-mismatch' : 'protocol-error';
      this.#sink.fatal(code, `protocol failure (${code}): ${problem.reason}`);
      this.#reject(seq, problem.code === 'version-mismatch' ? 'version-mismatch' : 'invalid', problem.reason, undefined, true);
      return;
    }
    this.#headerSeen = true;
    const frame = decodeTypedFrame(text, 'stdout line 1').value!;
    if (typeof frame['session'] === 'string') this.#sink.session(frame['session']);
    this.#sink.ready();
    this.#publish(addExtras({ type: 'ready', protocol: 'hep' }, frame, NONE), seq);
  }

  #frame(frame: HepFrame, seq: number): void {
    const sink = this.#sink;
    const turn = frame['turn_id'] as number;
    switch (frame.type) {
      case 'agent_start':
        if (this.#taskRef !== undefined) {
          // The run began with the task: that is the task prompt's (made-up) acceptance.
          sink.ack(this.#taskRef, 'accepted');
          this.#publish({ type: 'control-ack', status: 'accepted', ref: this.#taskRef }, seq);
          this.#taskRef = undefined;
        }
        this.#openRound(turn, seq, frame, TURN_ID);
        return;
      case 'message_start':
        this.#openRound(turn, seq);
        this.#publish(addExtras({ type: 'llm-start' }, frame, TURN_ID), seq);
        return;
      case 'message_delta':
        this.#openRound(turn, seq);
        this.#publish(addExtras({ type: 'assistant-text-delta', delta: frame['delta'] as string }, frame, DELTA_FIELDS), seq);
        return;
      case 'tool_start': {
        this.#openRound(turn, seq);
        const args = frame['args_summary'] ?? frame['args'];
        const call: RunEventDraftOf<'tool-call'> = { type: 'tool-call', name: frame['name'] as string, id: frame['id'] as string };
        if (args !== undefined) call.arguments = args;
        if (isBounded(args)) call.transportTruncated = true;
        sink.toolCalled();
        this.#publish(addExtras(call, frame, TOOL_START_FIELDS), seq);
        return;
      }
      case 'turn_done':
        this.#turnDone(frame, turn, seq);
        return;
      case 'turn_error':
        this.#terminal = 'error';
        this.#turnError = frame['error'] as string;
        this.#publish(addExtras({ type: 'error', error: this.#turnError, source: 'provider' }, frame, TURN_ERROR_FIELDS), seq);
        this.#closeRound(turn, 'error', undefined, seq);
        return;
      case 'cancelled':
        this.#terminal = 'cancelled';
        this.#closeRound(turn, 'aborted', undefined, seq);
        return;
      default:
        // tool_delta, tool_liveness, compaction_start/end: progress notices.
        this.#publish(addExtras({ type: 'info', summary: summaryOf(frame), hepType: frame.type }, frame, NONE), seq);
    }
  }

  #turnDone(frame: HepFrame, turn: number, seq: number): void {
    this.#openRound(turn, seq);
    for (const item of frame['tool_results'] as JsonValue[]) {
      if (typeof item !== 'object' || item === null || Array.isArray(item) || typeof item['name'] !== 'string') {
        this.#reject(seq, 'invalid-payload', 'a turn_done tool result that is not an object with a string name; skipped', frame.type);
        continue;
      }
      const text = item['text'];
      this.#publish(
        {
          type: 'tool-result',
          name: item['name'],
          isError: item['ok'] !== true,
          ...(typeof item['id'] === 'string' ? { id: item['id'], toolCallId: item['id'] } : {}),
          ...(text === undefined ? {} : { result: text }),
          ...(isBounded(text) ? { transportTruncated: true } : {}),
        },
        seq,
      );
    }
    const usage = readUsage(frame, { object: 'usage' });
    if (usage !== undefined) this.#usage = addUsage(this.#usage ?? {}, usage);
    this.#terminal = 'done';
    this.#lastTurnDone = { seq, message: frame['message'] as string, stopReason: frame['stop_reason'] as string };
    this.#closeRound(turn, frame['stop_reason'] as string, usage, seq);
  }

  /** The first frame of a round announces it (agent_start for the first, the first frame of each later one). */
  #openRound(turn: number, seq: number, frame?: HepFrame, known: readonly string[] = NONE): void {
    if (turn <= this.#openedTurn) return;
    this.#openedTurn = turn;
    this.#sink.turnStarted(turn);
    const started: RunEventDraftOf<'turn-started'> = { type: 'turn-started', turn };
    this.#publish(frame === undefined ? started : addExtras(started, frame, known), seq);
  }

  #closeRound(turn: number, stopReason: string, usage: Usage | undefined, seq: number): void {
    // A round ends; the child goes on by itself (the next round, or its exit): the state stays running.
    this.#closedTurn = Math.max(this.#closedTurn, turn);
    this.#sink.turnCompleted({ turn, stopReason, ...(usage === undefined ? {} : { usage }), idle: false });
    this.#publish({ type: 'turn-complete', turn, stopReason, ...(usage === undefined ? {} : { usage }) }, seq);
  }

  #reportEnd(exit: ProcessExitInfo): void {
    const sink = this.#sink;
    // After a fatal header problem the stream was not HEP: its exit code says nothing the verdict can use.
    if (this.#stopped) return;
    if (!this.#headerSeen) {
      if (exit.exitCode === EXIT_USAGE) {
        this.#exit(exit.exitCode, { status: 'failed', code: 'usage-error', error: 'the child rejected its command line (exit 64, usage error)' });
        return;
      }
      // Not a HEP stream at all: say so (a crash before the header is reported as that crash).
      if (exit.exitCode !== null) {
        sink.fatal('protocol-error', `protocol failure (protocol-error): the child exited with code ${exit.exitCode} without writing a HEP header on stdout`);
      }
      return;
    }
    const code = exit.exitCode;
    if (code === EXIT_OK && this.#terminal !== 'error') {
      this.#result();
      this.#exit(exit.exitCode, { status: 'done' });
    } else if (code === EXIT_CANCELLED || (code === null && this.#terminal === 'cancelled')) {
      this.#exit(exit.exitCode, { status: 'cancelled', error: 'the child was cancelled (exit 130)' });
    } else if (code === EXIT_USAGE) {
      this.#exit(exit.exitCode, { status: 'failed', code: 'usage-error', error: 'the child rejected its command line (exit 64, usage error)' });
    } else if (this.#terminal === 'error') {
      this.#exit(exit.exitCode, { status: 'failed', error: this.#turnError ?? `the child exited with code ${code} (provider error)` });
    } else if (code !== null && (code === EXIT_PROVIDER_ERROR || this.#openedTurn > this.#closedTurn)) {
      // Exit 1 means a provider error only after its turn_error frame (seed 001): without it, and for any
      // exit in the middle of a round, the child died without saying how it ended, as a Fen child with no exit event.
      const how = this.#openedTurn > this.#closedTurn ? 'in the middle of a round (no terminal frame)' : 'without the turn_error frame of a provider error';
      this.#exit(exit.exitCode, { status: 'failed', code: 'no-exit-event', error: `the child exited with code ${code} ${how}` });
    } else if (code !== null) {
      this.#exit(exit.exitCode, { status: 'failed', error: `the child exited with code ${code}` });
    }
    // Killed by a signal with no cancelled frame: not the child's statement; the core reports the crash or its own reason.
  }

  #result(): void {
    const last = this.#lastTurnDone;
    if (last === undefined) return; // done without any round: the core notes the missing answer
    const answer = {
      finalText: last.message,
      truncated: this.#skippedFrames > 0,
      ...(this.#skippedFrames > 0
        ? { truncationNote: `${this.#skippedFrames} stdout line(s) longer than maxFrameBytes were skipped; the answer may be from an earlier round` }
        : {}),
    };
    const usage = this.#usage === undefined ? undefined : addUsage({}, this.#usage);
    this.#sink.result({ stopReason: last.stopReason, answer: Promise.resolve(answer) });
    this.#publish(
      { type: 'result', stopReason: last.stopReason, finalText: last.message, ...(usage === undefined ? {} : { usage }) },
      last.seq,
    );
  }

  #exit(exitCode: number | null, exit: { status: 'done' | 'cancelled' | 'failed'; error?: string; code?: 'usage-error' | 'no-exit-event' }): void {
    this.#sink.exit(exit);
    const event: ExitRunEvent = { type: 'exit', status: exit.status, run: this.#runId, exitCode };
    if (exit.error !== undefined) event.error = exit.error;
    // HEP has no exit frame: the event is made from the exit code, so it has no v/seq (see docs/protocols.md).
    this.#sink.event(event);
  }

  #publish(event: RunEventDraft, seq: number): void {
    this.#sink.event(this.#stamper.at(event, seq));
  }

  #reject(seq: number, code: RejectedCode, reason: string, lineType?: string, fatal = false): void {
    this.#sink.rejected(rejectedEvent({ code, reason, ...(lineType === undefined ? {} : { lineType }) }, fatal, seq));
  }
}

/** A one-line summary of a progress frame for `info.summary`. */
function summaryOf(frame: HepFrame): string {
  switch (frame.type) {
    case 'tool_delta':
      return `tool ${String(frame['id'])} output`;
    case 'tool_liveness':
      return `tool ${String(frame['name'] ?? frame['id'])}: ${String(frame['action'])}`;
    case 'compaction_start':
      return 'context compaction started';
    case 'compaction_end':
      return 'context compaction ended';
    default:
      return frame.type;
  }
}
