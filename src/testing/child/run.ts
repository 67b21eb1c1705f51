// The fake child's run: Fen's child state machine (controls, queues, turns, finalize, exit) driven by a scenario.
import {
  actOnControl,
  advance,
  createReceiver,
  DEFAULT_FINALIZE_NOTE,
  isTerminal,
  MAX_LINE_BYTES,
  rejectionAck,
  TRANSPORT_BOUNDS,
} from '../../wire/index.js';
import type { ExitStatus, InternalEvent, JsonObject, JsonValue, Rejection, RunState, WireControl } from '../../wire/index.js';
import type { Ignorable, Misbehaviour, MisbehaviourAction, MisbehaviourPoint, TurnScript } from '../scenario.js';
import { utf8Prefix } from '../text.js';
import type { TranscriptControl, TranscriptEntry } from '../transcript.js';
import type { ChildConfig } from './config.js';
import { ControlReader } from '../../child/control-reader.js';
import type { ControlItem } from '../../child/control-reader.js';
import { FakeEventWriter } from './event-writer.js';
import { GRANDCHILD_MAX_LIFE_MS, spawnGrandchild } from '../process/grandchild.js';
import { spawnHog } from '../process/hog.js';
import type { HogSpec } from '../process/hog.js';
import { Lifeline } from '../process/lifeline.js';
import { TranscriptWriter } from '../process/transcript-writer.js';
import { flood, pointMatches, spin } from './misbehaviours.js';
import { resultPayload } from '../../child/result.js';
import { callUsage, pauseSatisfied, planTurn, steerAcknowledgement, sumUsage } from './turn-plan.js';
import type { ActiveTurn, Op } from './turn-plan.js';

const DEFAULT_MAX_LIFE_MS = 600_000;

interface Queued {
  seq: number;
  text: string;
}

type TurnOrigin = { kind: 'prompt' | 'final' } | { kind: 'steer' | 'follow-up'; ref: number };

export class FakeChildRun {
  private state: RunState = 'starting';
  private readonly lifeline: Lifeline;
  private readonly transcript: TranscriptWriter<TranscriptEntry>;
  private readonly events: FakeEventWriter;
  private readonly controls: ControlReader;
  private readonly receiver = createReceiver('control');
  private readonly steers: Queued[] = [];
  private readonly followUps: Queued[] = [];
  private turn: ActiveTurn | undefined;
  private turnCount = 0;
  private toolCount = 0;
  private readonly usage: JsonObject = {};
  private lastAnswer: string | undefined;
  private lastStopReason = 'stop';
  private readonly pending: Misbehaviour[];
  private readonly ignored: Set<Ignorable>;
  private firstControlSeen = false;
  /** A version mismatch stops the channel: nothing more is read. */
  private channelStopped = false;
  private hung = false;
  /** Grandchildren spawned but not yet ready: the turn waits for them. */
  private awaitingGrandchildren = 0;
  private acking: 'yes' | 'ignore' | 'apply' = 'yes';
  private skipResult = false;
  private lingerMs: number | undefined;
  private finalizeNote = DEFAULT_FINALIZE_NOTE;
  private finalizeIgnored = false;
  private exited = false;
  private exitError: string | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly config: ChildConfig) {
    this.lifeline = new Lifeline(config.scenario.maxLifeMs ?? DEFAULT_MAX_LIFE_MS, config.ownerPid, config.scenario.outlivesParent === true);
    this.transcript = new TranscriptWriter(config.transcriptDir, config.scenarioName, this.lifeline.started);
    this.events = new FakeEventWriter(config.eventPath, config.runId, {
      written: (line, raw) => this.recordEvent(line, raw),
      dropped: (type, reason) => this.note('event dropped', { type, reason }),
      sleep: (ms) => this.sleep(ms),
    });
    this.controls = new ControlReader(config.controlPath);
    this.pending = [...(config.scenario.misbehaviours ?? [])];
    this.ignored = new Set(config.scenario.ignore ?? []);
    if (this.ignored.has('sigterm')) this.ignoreSigterm();
  }

  start(): void {
    this.fire('before-ready');
    if (this.hung) return this.scheduleTick();
    this.sleep(this.config.scenario.readyDelayMs ?? 0);
    const agent = this.config.scenario.agent ?? {};
    this.events.emit('agent-started', { provider: agent.provider ?? 'fake', model: agent.model ?? 'fake-1' });
    this.events.emit('ready', {});
    this.setState(advance(this.state, 'started'), 'ready');
    this.fire('after-ready');
    this.tick();
  }

  // ---- the loop ------------------------------------------------------------------------------

  private scheduleTick(): void {
    const busy = this.turn !== undefined && !this.hung;
    this.timer = setTimeout(() => this.tick(), busy ? this.config.turnTickMs : this.config.idleTickMs);
  }

  /** One loop, guarded: an unexpected error ends the run `failed` with the error, never a bare crash. */
  private tick(): void {
    try {
      this.loop();
    } catch (error) {
      if (this.exited) throw error;
      this.fatalOrQuit(`fake child internal error: ${(error as Error).message}`);
    }
  }

  /** Lifelines, the deadline, one control read, then whatever the run can do now. */
  private loop(): void {
    this.timer = undefined;
    if (this.exited) return;
    if (this.lifeline.parentGone()) return this.fatalOrQuit('parent process died');
    if (this.lifeline.expired()) return this.fatalOrQuit('fake child safety cap (maxLifeMs) reached');
    if (this.hung) return this.scheduleTick();
    const deadline = this.config.deadlineMs;
    if (deadline !== undefined && !this.ignored.has('deadline') && Date.now() >= deadline) {
      this.setState(advance(this.state, 'deadline'), 'deadline');
    }
    if (!isTerminal(this.state)) this.readControls();
    this.settle();
  }

  /** Unwinds, finishes, runs due turn steps, starts the final or a queued turn, then waits for the next tick. */
  private settle(): void {
    for (;;) {
      if (this.exited || this.hung) break;
      if (isTerminal(this.state)) return this.finish();
      const turn = this.turn;
      if (turn !== undefined && turn.interrupted) {
        this.endTurn(true);
      } else if (turn !== undefined) {
        if (!this.runOps(turn)) break;
        this.endTurn(false);
      } else if (this.state === 'finalizing' && !this.finalizeIgnored) {
        this.startTurn(this.finalizeNote, { kind: 'final' });
      } else if (this.state === 'ready' && this.followUps.length > 0) {
        // An idle follow-up turn started by the runtime: turn-started from ready.
        const next = this.followUps.shift() as Queued;
        this.setState('running', 'idle follow-up');
        this.startTurn(next.text, { kind: 'follow-up', ref: next.seq });
      } else {
        break;
      }
    }
    if (!this.exited) this.scheduleTick();
  }

  private fatalOrQuit(reason: string): void {
    this.note('lifeline', { reason });
    if (this.exited || this.hung) return this.quit(1);
    this.exitError = reason;
    this.setState(advance(this.state, 'fatal'), reason);
    this.finish();
  }

  /** A blocking sleep; a parent dying meanwhile ends the child at once. */
  private sleep(ms: number): void {
    if (this.lifeline.sleep(ms)) return;
    this.note('lifeline', { reason: 'parent process died' });
    this.quit(1);
  }

  // ---- controls ------------------------------------------------------------------------------

  private readControls(): void {
    const outcome = this.controls.read((item) => {
      this.handleControl(item);
      // A terminal state still answers the rest of the batch ("run is <state>").
      return !this.channelStopped && !this.hung && !this.exited;
    });
    if (!outcome.ok) {
      this.exitError = outcome.reason;
      this.setState(advance(this.state, 'fatal'), 'control file shrank');
    }
  }

  private handleControl(item: ControlItem): void {
    if (this.turn !== undefined) this.turn.controlsRead += 1;
    if ('tooLong' in item) {
      const rejection: Rejection = { code: 'too-large', reason: `line is ${MAX_LINE_BYTES} bytes or more`, fatal: false };
      return this.answer({ raw: item.tooLong, rejection }, rejectionAck(rejection));
    }
    const { line } = item;
    if (!this.firstControlSeen) {
      this.firstControlSeen = true;
      this.fire('on-control');
      if (this.hung || this.exited) return;
    }
    if (this.acking === 'ignore') return this.answer({ raw: line, action: 'ignored (stopped acking)' }, undefined);
    const received = this.receiver.receive(line);
    if (!received.ok) {
      const { rejection } = received;
      if (!rejection.fatal) return this.answer({ raw: line, rejection }, rejectionAck(rejection));
      // A version mismatch gets no ack: the channel stops and the run fails.
      this.answer({ raw: line, rejection, action: 'fatal: no ack' }, undefined, 'failed');
      this.exitError = rejection.reason;
      this.channelStopped = true;
      return;
    }
    const message = received.message;
    if (message.run !== this.config.runId) {
      const reason = `run ${message.run} is not ${this.config.runId}`;
      return this.answer({ raw: line, message, rejection: { code: 'foreign-run', reason } }, { status: 'rejected', ref: message.seq, reason });
    }
    this.turn?.controlTypesRead.add(message.type);
    this.fire({ control: message.type });
    if (this.hung || this.exited) return;
    this.applyControl(line, message);
  }

  private applyControl(raw: string, message: WireControl): void {
    const ref = message.seq;
    const ack = { status: 'accepted' as const, ref };
    const text = 'text' in message && typeof message.text === 'string' ? message.text : '';
    const interrupt = () => {
      if (message.type === 'finalize' && message.note !== undefined) this.finalizeNote = message.note;
      this.dropQueued();
      if (this.ignored.has('finalize')) {
        this.finalizeIgnored = true;
        this.note('ignored finalize');
      } else if (this.turn !== undefined) {
        this.turn.interrupted = true;
      }
    };
    const none = () => undefined;
    // A vetoed control was answered by the veto itself (`true`).
    actOnControl<true | void>(this.state, message.type, {
      refused: ({ status, reason }) => {
        const refusedAck = { status, ref, ...(reason === undefined ? {} : { reason }) };
        const rejection = status === 'rejected' ? { rejection: { code: 'state' as const, reason: reason ?? '' } } : {};
        this.answer({ raw, message, ...rejection, action: status }, refusedAck);
      },
      // An ignored cancel or close is acked accepted, and the run goes on as if it never came.
      veto: () => {
        if ((message.type !== 'cancel' && message.type !== 'close') || !this.ignored.has(message.type)) return undefined;
        this.answer({ raw, message, action: `ignored ${message.type}` }, ack);
        return true;
      },
      moveTo: (next, action) => this.answer({ raw, message, action }, ack, next),
      actions: {
        'start-turn': () => {
          if (message.type === 'steer' || message.type === 'follow-up') this.startTurn(text, { kind: message.type, ref });
          else this.startTurn(text, { kind: 'prompt' });
        },
        'queue-steer': () => void this.steers.push({ seq: ref, text }),
        'queue-follow-up': () => void this.followUps.push({ seq: ref, text }),
        'start-final-turn': interrupt,
        'interrupt-turn': interrupt,
        'close-after-turn': none,
        finish: none,
        cancel: none,
      },
    });
  }

  /** Records the control line with the state it leaves, moves there, then writes its ack (unless acking stopped). */
  private answer(
    entry: Omit<TranscriptControl, 'kind' | 'at' | 'stateBefore' | 'state' | 'ack'>,
    ack: NonNullable<TranscriptControl['ack']> | undefined,
    stateAfter: RunState = this.state,
  ): void {
    const sendAck = ack !== undefined && this.acking === 'yes';
    this.transcript.write({
      kind: 'control',
      at: this.lifeline.now(),
      ...entry,
      ...(sendAck ? { ack } : {}),
      stateBefore: this.state,
      state: stateAfter,
    });
    this.setState(stateAfter, entry.message?.type ?? entry.action ?? 'control');
    if (sendAck) this.events.emit('control-ack', ack);
  }

  // ---- turns ---------------------------------------------------------------------------------

  private scriptFor(final: boolean): TurnScript {
    const scenario = this.config.scenario;
    if (final) return scenario.finalTurn ?? { answer: { echo: true, prefix: 'Final answer: ' } };
    const turns = scenario.turns ?? [];
    return turns[Math.min(this.turnCount, turns.length) - 1] ?? { answer: { echo: true } };
  }

  private startTurn(input: string, origin: TurnOrigin): void {
    this.turnCount += 1;
    const final = origin.kind === 'final';
    const script = this.scriptFor(final);
    const nextToolId = () => `call-${(this.toolCount += 1)}`;
    this.turn = {
      number: this.turnCount,
      final,
      input,
      script,
      ops: planTurn(script, input, final, nextToolId),
      next: 0,
      dueAt: Date.now(),
      controlsRead: 0,
      controlTypesRead: new Set(),
      outputBytes: 0,
      callsUsage: {},
      reportedOutputBytes: 0,
      steered: [],
      interrupted: false,
    };
    this.events.emit('turn-started', { turn: this.turnCount });
    if (origin.kind === 'steer') this.events.emit('steering-injected', { text: input, ref: origin.ref });
    else if (origin.kind === 'follow-up') this.events.emit('follow-up-injected', { text: input, ref: origin.ref });
    else this.events.emit('user', { text: utf8Prefix(input, TRANSPORT_BOUNDS.stringBytes) });
    this.startModelCall();
    if (this.turnCount === 1) this.fire('turn-start');
    this.fire({ turn: this.turnCount });
  }

  private startModelCall(): void {
    const agent = this.config.scenario.agent ?? {};
    this.events.emit('llm-start', { provider: agent.provider ?? 'fake', model: agent.model ?? 'fake-1' });
  }

  /** Runs the turn's due steps; true when all its steps are done. */
  private runOps(turn: ActiveTurn): boolean {
    const blocked = () => this.exited || this.hung || isTerminal(this.state) || turn.interrupted;
    while (turn.next < turn.ops.length) {
      if (this.waiting(turn) || this.awaitingGrandchildren > 0 || blocked()) return false;
      const op = turn.ops[turn.next] as Op;
      turn.next += 1;
      this.runOp(turn, op);
    }
    return !blocked();
  }

  /** True while the turn's wait holds: until its time is up, or until the controls it waits for were read. */
  private waiting(turn: ActiveTurn): boolean {
    const now = Date.now();
    if (now >= turn.dueAt) return false;
    if (turn.waitUntil === undefined || !pauseSatisfied(turn, turn.waitUntil)) return true;
    this.note('pause ended by controls', { 'controls-read': turn.controlsRead });
    turn.waitUntil = undefined;
    turn.dueAt = now;
    return false;
  }

  private runOp(turn: ActiveTurn, op: Op): void {
    switch (op.kind) {
      case 'emit':
        turn.outputBytes += op.output ?? 0;
        this.events.emit(op.type, op.payload);
        break;
      case 'wait':
        turn.dueAt = Date.now() + op.ms;
        turn.waitUntil = op.until;
        break;
      case 'tool-call':
        // The model call that chose this tool ends here (with estimated usage, so the parent sees tokens grow).
        if (turn.script.usage === undefined) this.events.emit('llm-end', { 'stop-reason': 'tool-use', usage: callUsage(turn) });
        turn.openTool = { name: op.name, id: op.id };
        this.events.emit('tool-call', { name: op.name, id: op.id, ...(op.arguments === undefined ? {} : { arguments: op.arguments }) });
        break;
      case 'tool-result':
        turn.openTool = undefined;
        this.events.emit('tool-result', {
          name: op.name,
          'is-error?': op.error,
          id: op.id,
          'tool-call-id': op.id,
          'duration-seconds': op.durationMs / 1000,
          ...(op.result === undefined ? {} : { result: op.result }),
        });
        if (turn.script.usage === undefined) this.startModelCall();
        break;
      case 'boundary':
        this.injectSteers(turn);
        break;
      case 'answer': {
        let text = op.text;
        if (turn.script.acknowledgeSteers === true && turn.steered.length > 0 && turn.answer === undefined) {
          const acknowledgement = steerAcknowledgement(turn.steered);
          // A streamed answer streams its acknowledgement too: the deltas always add up to the final text.
          if ((turn.script.answerChunks ?? 0) > 0) this.events.emit('assistant-text-delta', { 'content-index': 0, delta: acknowledgement });
          text += acknowledgement;
        }
        turn.answer = text;
        turn.outputBytes += Buffer.byteLength(text);
        if (turn.script.answerWhole !== false || (turn.script.answerChunks ?? 0) === 0) {
          this.events.emit('assistant-text', { 'final?': true, 'content-index': 0, text });
        }
        this.events.emit('assistant-stream-end', { 'final?': true });
        break;
      }
      case 'misbehave':
        this.act(op.actions);
        break;
    }
  }

  /** Injects every queued steer at a boundary; steers after the answer get a short extra answer. */
  private injectSteers(turn: ActiveTurn): void {
    if (this.steers.length === 0) return;
    const injected = this.steers.splice(0);
    for (const steer of injected) this.events.emit('steering-injected', { text: steer.text, ref: steer.seq });
    if (turn.answer === undefined) turn.steered.push(...injected.map((steer) => steer.text));
    else {
      const extra = `Noted: ${injected.map((steer) => steer.text).join(' / ')}`;
      turn.ops.splice(turn.next, 0, { kind: 'answer', text: `${turn.answer}\n\n${extra}` }, { kind: 'boundary' });
    }
  }

  private endTurn(aborted: boolean): void {
    const turn = this.turn as ActiveTurn;
    this.turn = undefined;
    if (turn.openTool !== undefined) {
      // An interrupted tool call is paired with a cancelled result.
      const { name, id } = turn.openTool;
      this.events.emit('tool-result', { name, 'is-error?': true, id, 'tool-call-id': id, result: 'cancelled' });
    }
    const stopReason = aborted ? 'aborted' : (turn.script.stopReason ?? 'stop');
    let usage: JsonObject;
    if (turn.script.usage !== undefined) {
      usage = turn.script.usage;
      this.events.emit('llm-end', { 'stop-reason': stopReason, usage });
    } else {
      this.events.emit('llm-end', { 'stop-reason': stopReason, usage: callUsage(turn) });
      usage = turn.callsUsage;
    }
    this.events.emit('turn-complete', { turn: turn.number, 'stop-reason': stopReason, usage });
    sumUsage(this.usage, usage);
    this.lastStopReason = stopReason;
    if (!aborted && turn.answer !== undefined) this.lastAnswer = turn.answer;
    const event: InternalEvent = turn.final && !aborted ? 'final-turn-done' : 'turn-done';
    this.setState(advance(this.state, event), aborted ? 'turn aborted' : 'turn done');
  }

  // ---- the end -------------------------------------------------------------------------------

  /** Drops queued steers and follow-ups: one info with their seqs, steers first. */
  private dropQueued(): void {
    const refs = [...this.steers.splice(0), ...this.followUps.splice(0)].map((queued) => queued.seq);
    if (refs.length > 0) this.events.emit('info', { refs, summary: `dropped ${refs.length} queued control(s)` });
  }

  /** The run is terminal: unwind the turn, drop queues, write the result (when done), exit. */
  private finish(): void {
    if (this.exited) return;
    if (this.turn !== undefined) this.endTurn(true);
    this.dropQueued();
    const status = this.state as ExitStatus;
    if (status === 'done') {
      this.fire('before-result');
      if (this.exited || this.hung) return;
      if (!this.skipResult) this.writeResult();
    }
    this.writeExit(status);
  }

  private writeResult(): void {
    const base = { 'stop-reason': this.lastStopReason, usage: this.usage };
    const payload = resultPayload(
      base,
      this.lastAnswer,
      (candidate) => this.events.fits('result', candidate),
      (message) => this.note('final-text-path failed', { error: message }),
    );
    if (payload === undefined) this.note('result dropped: it cannot fit one line');
    else this.events.emit('result', payload);
  }

  private writeExit(status: ExitStatus): void {
    this.events.emit('exit', this.exitError === undefined ? { status } : { status, error: this.exitError });
    this.exited = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const code = status === 'done' ? 0 : 1;
    this.fire('after-exit');
    if (this.lingerMs === undefined) return this.quit(code);
    this.note('lingering', { ms: Number.isFinite(this.lingerMs) ? this.lingerMs : -1 });
    const until = Date.now() + this.lingerMs;
    const linger = () => {
      if (this.lifeline.parentGone() || this.lifeline.expired() || Date.now() >= until) return this.quit(code);
      this.timer = setTimeout(linger, this.config.idleTickMs);
    };
    linger();
  }

  private quit(code: number): never {
    this.transcript.write({ kind: 'exit', at: this.lifeline.now(), state: this.state, code });
    process.exit(code);
  }

  // ---- misbehaviours -------------------------------------------------------------------------

  private fire(point: MisbehaviourPoint): void {
    for (let index = 0; index < this.pending.length; ) {
      const misbehaviour = this.pending[index] as Misbehaviour;
      if (!pointMatches(misbehaviour.at, point)) {
        index += 1;
        continue;
      }
      this.pending.splice(index, 1);
      this.act(Array.isArray(misbehaviour.do) ? misbehaviour.do : [misbehaviour.do]);
    }
  }

  private act(actions: MisbehaviourAction[]): void {
    for (const action of actions) {
      if (this.hung) return;
      this.note('misbehave', { action: action as unknown as JsonValue });
      if (action === 'hang') this.hung = true;
      else if (action === 'ignore-sigterm') this.ignoreSigterm();
      else if (action === 'skip-result') this.skipResult = true;
      else if ('crash' in action) {
        const { code = 1, exitEvent = false, status = 'failed' } = action.crash;
        if (exitEvent) this.events.emit('exit', { status, error: 'fake crash' });
        this.quit(code);
      } else if ('grandchildren' in action) this.spawnGrandchildren(action.grandchildren);
      else if ('raw' in action) {
        for (let pass = 0; pass < Math.max(1, action.repeat ?? 1); pass += 1) {
          for (const raw of action.raw) this.events.writeRaw(raw);
        }
      } else if ('stopAcking' in action) this.acking = action.stopAcking;
      else if ('linger' in action) this.lingerMs = action.linger.ms ?? Number.POSITIVE_INFINITY;
      else if ('truncateEvents' in action) this.events.truncate(action.truncateEvents.toBytes ?? 0);
      else if ('splitWrites' in action) this.events.splitWrites(action.splitWrites.pieces ?? 3, action.splitWrites.gapMs ?? 5);
      else if ('flood' in action) {
        this.transcript.paused = true;
        const summary = flood(this.events, this.lifeline, this.config.runId, action.flood);
        this.transcript.paused = false;
        this.note('flood', summary);
      } else if ('delay' in action) this.sleep(action.delay);
      else if ('hog' in action) this.spawnHog(action.hog);
      else if ('spin' in action) this.note('spin', spin(action.spin, this.lifeline));
      else if ('ignore' in action) {
        for (const thing of action.ignore) {
          this.ignored.add(thing);
          if (thing === 'sigterm') this.ignoreSigterm();
        }
      }
    }
  }

  private ignoreSigterm(): void {
    if (process.listenerCount('SIGTERM') === 0) process.on('SIGTERM', () => this.note('ignored SIGTERM'));
  }

  /** A hog grandchild: the turn waits until it allocated and started its processes, then says so in an `info` event. */
  private spawnHog(spec: HogSpec): void {
    this.awaitingGrandchildren += 1;
    spawnHog(spec, (report) => {
      this.awaitingGrandchildren -= 1;
      const detail: JsonObject = { 'ready?': report.ready };
      if (report.pid !== undefined) detail['pid'] = report.pid;
      if (report.error !== undefined) detail['error'] = report.error;
      this.note('hog', detail);
      if (!this.exited) this.events.emit('info', { summary: `hog ${report.pid ?? 'failed'}`, 'hog-pid': report.pid ?? null, 'ready?': report.ready });
    });
  }

  private spawnGrandchildren(options: { count?: number; session?: boolean; lifeMs?: number }): void {
    for (let index = 0; index < Math.max(1, options.count ?? 1); index += 1) {
      this.awaitingGrandchildren += 1;
      const spec = { session: options.session ?? false, lifeMs: options.lifeMs ?? GRANDCHILD_MAX_LIFE_MS };
      spawnGrandchild(spec, (report) => {
        this.awaitingGrandchildren -= 1;
        if (report.pid === undefined) return this.note('grandchild failed', { error: report.error ?? 'no pid' });
        // Reported even when its handler was not confirmed: a grandchild a test cannot see, it cannot check.
        const detail: JsonObject = { pid: report.pid, 'own-session?': report.ownSession, 'ready?': report.ready };
        if (report.error !== undefined) detail['error'] = report.error;
        this.note('grandchild', detail);
        if (!this.exited) {
          this.events.emit('info', {
            summary: `spawned grandchild ${report.pid}`,
            'grandchild-pid': report.pid,
            'own-session?': report.ownSession,
            'ready?': report.ready,
          });
        }
      });
    }
  }

  // ---- transcript ----------------------------------------------------------------------------

  private setState(next: RunState, cause: string): void {
    if (next === this.state) return;
    const from = this.state;
    this.state = next;
    this.transcript.write({ kind: 'state', at: this.lifeline.now(), from, state: next, cause });
  }

  private note(what: string, detail?: JsonObject): void {
    this.transcript.write({ kind: 'note', at: this.lifeline.now(), what, ...(detail === undefined ? {} : { detail }), state: this.state });
  }

  private recordEvent(line: string, raw: boolean): void {
    if (!this.transcript.enabled) return;
    let type: string | undefined;
    let seq: number | undefined;
    try {
      const parsed = JSON.parse(line) as { type?: unknown; seq?: unknown };
      if (typeof parsed.type === 'string') type = parsed.type;
      if (typeof parsed.seq === 'number') seq = parsed.seq;
    } catch {
      // garbage lines have no type
    }
    this.transcript.write({
      kind: 'event',
      at: this.lifeline.now(),
      line,
      ...(type === undefined ? {} : { type }),
      ...(seq === undefined ? {} : { seq }),
      ...(raw ? { raw: true } : {}),
      state: this.state,
    });
  }
}
