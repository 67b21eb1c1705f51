// The fake fa's run: one headless prompt as HEP v1 frames (or prose), rounds from the scenario, cancel on SIGINT/SIGTERM.
import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonObject } from '../../wire/index.js';
import { spawnGrandchildren } from '../process/grandchild.js';
import { startHog } from '../process/hog.js';
import { Lifeline } from '../process/lifeline.js';
import { writeAllSync } from '../process/stdout-writer.js';
import { TranscriptWriter } from '../process/transcript-writer.js';
import { expandText } from '../text.js';
import { FA_USAGE, FA_USAGE_EXIT } from './args.js';
import type { FaConfig } from './config.js';
import { hepArgsSummary, hepBound, hepFrame, HEP_TOOL_RESULT_CAP } from './frames.js';
import type { HepToolResult } from './frames.js';
import type { FaRawLine, FaRound, FaStep } from './scenario.js';
import type { FaTranscriptEntry } from './transcript.js';

const DEFAULT_MAX_LIFE_MS = 600_000;
export const FA_DEFAULT_VERSION = '0.0.0-fake';
const EXIT_OK = 0;
const EXIT_PROVIDER_ERROR = 1;
const EXIT_CANCELLED = 130;

/** One round in progress: what its `turn_done` will carry. */
interface OpenRound {
  turnId: number;
  message: string;
  toolResults: HepToolResult[];
  toolCalls: number;
}

/** Cuts text into `pieces` chunks at code point boundaries (a chunk never splits a surrogate pair). */
function chunk(text: string, pieces: number): string[] {
  const points = Array.from(text);
  const count = Math.max(1, Math.min(Math.floor(pieces), points.length));
  const size = Math.ceil(points.length / count);
  const chunks: string[] = [];
  for (let start = 0; start < points.length; start += size) chunks.push(points.slice(start, start + size).join(''));
  return chunks;
}

export class FakeFaRun {
  private readonly lifeline: Lifeline;
  private readonly transcript: TranscriptWriter<FaTranscriptEntry>;
  /** HEP frames on stdout (else prose). */
  private readonly events: boolean;
  private round: OpenRound | undefined;
  private toolCount = 0;
  private exiting = false;

  constructor(private readonly config: FaConfig) {
    this.lifeline = new Lifeline(config.scenario.maxLifeMs ?? DEFAULT_MAX_LIFE_MS, config.ownerPid);
    this.events = config.args.output !== 'prose' && config.scenario.prose !== true;
    this.transcript = new TranscriptWriter(config.transcriptDir, config.scenarioName, this.lifeline.started, {
      argv: config.argv,
      mode: this.events ? config.args.output : 'prose',
      task: config.args.task,
    });
  }

  async start(): Promise<void> {
    // Stubborn fakes ignore signals from the very start, so no test signal can race the handler.
    if (this.config.scenario.ignoreSignals === true) this.handleSignals();
    this.lifeline.watch((reason) => {
      this.note('lifeline', { reason });
      this.quit(EXIT_PROVIDER_ERROR);
    });
    const { scenario, args } = this.config;
    if (scenario.usageError !== undefined) {
      this.stderr(`fa: ${scenario.usageError}\n${FA_USAGE}\n`);
      return this.quit(FA_USAGE_EXIT);
    }
    // Handlers before the first frame: a parent that cancels as soon as it sees agent_start must find one.
    // (A handler runs only after this synchronous block, so the header is always out before any cancelled frame.)
    if (scenario.ignoreSignals !== true) this.handleSignals();
    if (this.events) {
      const session = scenario.session ?? args.session ?? `fake-${process.pid}-${this.lifeline.started}`;
      this.frame(hepFrame.header(scenario.hep ?? 'v1', scenario.fah ?? FA_DEFAULT_VERSION, session));
      this.frame(hepFrame.agentStart(1));
    }
    const rounds = scenario.rounds ?? [{ steps: [{ text: { echo: true } }] }];
    for (const [index, round] of rounds.entries()) {
      await this.runRound(index + 1, round);
      if (this.exiting) return;
    }
    this.quit(EXIT_OK);
  }

  // ---- rounds --------------------------------------------------------------------------------

  private async runRound(turnId: number, script: FaRound): Promise<void> {
    const round: OpenRound = { turnId, message: '', toolResults: [], toolCalls: 0 };
    this.round = round;
    if (this.events) this.frame(hepFrame.messageStart(turnId));
    for (const step of script.steps ?? []) {
      await this.runStep(round, step);
      if (this.exiting) return;
    }
    if (!this.events && round.message !== '') this.prose('\n');
    if (script.error !== undefined) {
      if (this.events) this.frame(hepFrame.turnError(turnId, script.error));
      this.stderr(`error: ${script.error}\n`);
      return this.quit(EXIT_PROVIDER_ERROR);
    }
    if (!this.events) return;
    const stopReason = script.stopReason ?? (round.toolCalls > 0 ? 'toolUse' : 'stop');
    this.frame(hepFrame.turnDone(turnId, round.message, round.toolResults, script.usage ?? this.usageOf(round), stopReason));
  }

  /** A plausible usage: the context grows by 1000 tokens a round; output ~ chars / 4; cost in dollars. */
  private usageOf(round: OpenRound): { input: number; output: number; cost: number } {
    const input = 1000 * round.turnId;
    const output = Math.ceil(round.message.length / 4) + 20 * round.toolCalls;
    return { input, output, cost: Math.round(input * 3 + output * 15) / 1e6 };
  }

  private async runStep(round: OpenRound, step: FaStep): Promise<void> {
    if ('text' in step) {
      const pieces = chunk(expandText(step.text, this.config.args.task), step.chunks ?? 1);
      for (const [index, piece] of pieces.entries()) {
        if (index > 0 && step.ms !== undefined) await sleep(step.ms / pieces.length);
        if (this.exiting) return;
        round.message += piece;
        if (this.events) this.frame(hepFrame.messageDelta(round.turnId, piece));
        else this.prose(piece);
      }
    } else if ('tool' in step) {
      await this.runTool(round, step);
    } else if ('compaction' in step) {
      if (this.events) this.frame(hepFrame.compactionStart(round.turnId));
      if (this.events) this.frame(hepFrame.compactionEnd(round.turnId, step.compaction.tokensFreed ?? 12_000));
    } else if ('pause' in step) {
      await sleep(step.pause);
    } else if ('raw' in step) {
      for (const raw of step.raw) this.writeRaw(round, raw);
    } else if ('grandchildren' in step) {
      await this.spawnGrandchildren(step.grandchildren);
    } else if ('hog' in step) {
      const report = await startHog(step.hog);
      this.note('hog', report.pid === undefined ? { error: report.error ?? 'no pid' } : { pid: report.pid, 'ready?': report.ready });
    } else if ('dieMidFrame' in step) {
      const whole = JSON.stringify(hepFrame.turnDone(round.turnId, round.message, round.toolResults, this.usageOf(round), 'stop'));
      this.write(step.dieMidFrame.partial ?? whole.slice(0, Math.floor(whole.length / 2)), undefined, true);
      this.note('killing itself mid-frame');
      process.kill(process.pid, 'SIGKILL');
      await sleep(60_000);
    } else if ('crash' in step) {
      this.quit(step.crash.code ?? 1);
    }
  }

  private async runTool(round: OpenRound, step: Extract<FaStep, { tool: string }>): Promise<void> {
    this.toolCount += 1;
    round.toolCalls += 1;
    const id = `call_${this.toolCount}`;
    const args = step.args ?? {};
    const summary = hepArgsSummary(args, this.config.args.output === 'events=full');
    this.stderr(`→ ${step.tool} ${hepArgsSummary(args, false)}\n`);
    if (this.events) this.frame(hepFrame.toolStart(round.turnId, id, step.tool, summary));
    for (const update of step.updates ?? []) {
      if (update !== '' && this.events) this.frame(hepFrame.toolDelta(round.turnId, id, update));
    }
    const duration = step.durationMs ?? 0;
    if (step.heartbeat === true) {
      await sleep(duration / 2);
      if (this.exiting) return;
      if (this.events) this.frame(hepFrame.toolLiveness(round.turnId, id, step.tool, Math.round(duration / 2)));
      await sleep(duration / 2);
    } else if (duration > 0) {
      await sleep(duration);
    }
    if (this.exiting) return;
    const text = step.result === undefined ? '' : expandText(step.result, this.config.args.task);
    round.toolResults.push({ id, name: step.tool, ok: step.ok ?? true, text: hepBound(text, HEP_TOOL_RESULT_CAP) });
  }

  private writeRaw(round: OpenRound, raw: FaRawLine): void {
    switch (raw.kind) {
      case 'garbage':
        return this.write(`${raw.text ?? 'this is not json {'}\n`, undefined, true);
      case 'unknown-frame':
        return this.write(`${JSON.stringify({ type: raw.type ?? 'mystery_frame', turn_id: round.turnId, detail: 'a frame type HEP v1 does not define' })}\n`, undefined, true);
      case 'unknown-fields': {
        const delta = raw.delta ?? '';
        round.message += delta;
        const frame = { ...hepFrame.messageDelta(round.turnId, delta), ...(raw.fields ?? { x_future_field: { nested: true }, x_score: 0.5 }) };
        return this.write(`${JSON.stringify(frame)}\n`, 'message_delta', true);
      }
      case 'not-object':
        return this.write(`${raw.json ?? '[1,2,3]'}\n`, undefined, true);
      case 'literal':
        return this.write(raw.newline === false ? raw.line : `${raw.line}\n`, undefined, true);
    }
  }

  private async spawnGrandchildren(options: { count?: number; session?: boolean; lifeMs?: number }): Promise<void> {
    for (const report of await spawnGrandchildren({ ...options, ignoreSigint: true })) {
      if (report.pid === undefined) {
        this.note('grandchild failed', { error: report.error ?? 'no pid' });
        continue;
      }
      const detail: JsonObject = { pid: report.pid, 'own-session?': report.ownSession, 'ready?': report.ready };
      if (report.error !== undefined) detail['error'] = report.error;
      this.note('grandchild', detail);
      this.stderr(`spawned grandchild ${report.pid}${report.ownSession ? ' (own session)' : ''}\n`);
    }
  }

  // ---- signals and the end -------------------------------------------------------------------

  private handleSignals(): void {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.on(signal, () => {
        if (this.exiting) return;
        if (this.config.scenario.ignoreSignals === true) {
          this.transcript.write({ kind: 'signal', at: this.lifeline.now(), signal, action: 'ignored' });
          return;
        }
        this.transcript.write({ kind: 'signal', at: this.lifeline.now(), signal, action: 'cancel' });
        // The round in progress ends with its one terminal frame: `cancelled`.
        if (this.events) this.frame(hepFrame.cancelled(this.round?.turnId ?? 1), false);
        else this.stderr('cancelled\n');
        this.quit(EXIT_CANCELLED);
      });
    }
  }

  private quit(code: number): void {
    if (this.exiting) return;
    this.exiting = true;
    this.transcript.write({ kind: 'exit', at: this.lifeline.now(), code });
    process.exit(code);
  }

  // ---- output --------------------------------------------------------------------------------

  private frame(frame: { type: string }, quitOnBrokenPipe = true): void {
    this.write(`${JSON.stringify(frame)}\n`, frame.type, false, quitOnBrokenPipe);
  }

  private prose(text: string): void {
    this.write(text, undefined, false);
  }

  /** Writes to stdout now and records it; a reader that went away ends the run (exit 1), as a broken pipe would. */
  private write(text: string, type: string | undefined, raw: boolean, quitOnBrokenPipe = true): void {
    const ok = writeAllSync(1, text);
    this.transcript.write({ kind: 'stdout', at: this.lifeline.now(), text, ...(type === undefined ? {} : { type }), ...(raw ? { raw } : {}) });
    if (!ok && quitOnBrokenPipe) {
      this.note('stdout closed by the reader');
      this.quit(EXIT_PROVIDER_ERROR);
    }
  }

  private stderr(text: string): void {
    writeAllSync(2, text);
    this.transcript.write({ kind: 'stderr', at: this.lifeline.now(), text });
  }

  private note(what: string, detail?: JsonObject): void {
    this.transcript.write({ kind: 'note', at: this.lifeline.now(), what, ...(detail === undefined ? {} : { detail }) });
  }
}
