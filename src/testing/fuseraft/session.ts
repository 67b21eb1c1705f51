// What both fuseraft modes share: JSONL out, stdin lines in, approvals and questions answered by the next
// matching line, the steps any session can run, signals, lifelines and the transcript.
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonObject } from '../../wire/index.js';
import { spawnGrandchildren } from '../process/grandchild.js';
import { startHog } from '../process/hog.js';
import { Lifeline } from '../process/lifeline.js';
import { writeAllSync } from '../process/stdout-writer.js';
import { TranscriptWriter } from '../process/transcript-writer.js';
import type { FuseraftCommonStep, FuseraftMode, FuseraftRawLine, FuseraftScenario } from './scenario.js';
import type { FuseraftApprovalEntry, FuseraftInputRole, FuseraftQuestionEntry, FuseraftTranscriptEntry } from './transcript.js';

const DEFAULT_MAX_LIFE_MS = 600_000;
export const FUSERAFT_PROTOCOL_VERSION = 1;

export interface SessionConfig {
  scenario: FuseraftScenario;
  scenarioName: string;
  mode: FuseraftMode;
  argv: string[];
  transcriptDir?: string;
  ownerPid?: number;
}

/** A stdin line, parsed when it is a JSON object. */
export interface InputLine {
  line: string;
  type?: string;
  object?: Record<string, unknown>;
}

type Pending =
  | { kind: 'approval'; index: number; request: JsonObject; settle: (answer: { line: string | null; approved: boolean; how: FuseraftApprovalEntry['how'] }) => void }
  | { kind: 'question'; index: number; request: JsonObject; settle: (answer: { line: string | null; answer: string | null; how: FuseraftQuestionEntry['how'] }) => void };

function parseInput(line: string): InputLine {
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      const object = parsed as Record<string, unknown>;
      return typeof object['type'] === 'string' ? { line, type: object['type'], object } : { line, object };
    }
  } catch {
    // not JSON: the raw line
  }
  return { line };
}

/** The base of both modes. Subclasses decide what a line means in their state and what an interrupt does. */
export abstract class FuseraftSession {
  protected readonly lifeline: Lifeline;
  protected readonly transcript: TranscriptWriter<FuseraftTranscriptEntry>;
  protected readonly scenario: FuseraftScenario;
  protected stdinClosed = false;
  protected exiting = false;
  private pending: Pending | undefined;
  /** Responses that came with no request pending: each answers the next request of its kind. */
  private readonly early = { approval: [] as string[], question: [] as string[] };
  private approvals = 0;
  private questions = 0;

  constructor(protected readonly config: SessionConfig) {
    this.scenario = config.scenario;
    this.lifeline = new Lifeline(config.scenario.maxLifeMs ?? DEFAULT_MAX_LIFE_MS, config.ownerPid);
    this.transcript = new TranscriptWriter(config.transcriptDir, config.scenarioName, this.lifeline.started, {
      argv: config.argv,
      mode: config.mode,
    });
  }

  /** Starts the session: lifelines, signals, stdin, then the mode's own start. */
  start(): void {
    this.lifeline.watch((reason) => {
      this.note('lifeline', { reason });
      this.quit(1);
    });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      if (this.scenario.ignoreSignals === true) {
        process.on(signal, () => this.transcript.write({ kind: 'signal', at: this.lifeline.now(), signal, action: 'ignored' }));
      } else if (signal === 'SIGINT') {
        process.on(signal, () => this.onSigint());
      }
      // SIGTERM keeps Node's default: the process dies of it, as a .NET program does.
    }
    const reader = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
    reader.on('line', (line) => this.receive(line));
    reader.on('close', () => {
      this.stdinClosed = true;
      this.note('stdin closed');
      this.settlePending(null, 'end-of-stdin');
      this.onStdinEnd();
    });
    for (const raw of this.scenario.beforeReady ?? []) this.writeRaw(raw);
    void this.begin().catch((error: unknown) => {
      this.stderr(`subvisor-fake-fuseraft: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
      this.quit(2);
    });
  }

  /** The mode's run: write `ready` and go on. */
  protected abstract begin(): Promise<void>;
  /** A line that is not an interrupt and not a response, for the mode to interpret in its state. */
  protected abstract onLine(input: InputLine): FuseraftInputRole;
  /** An interrupt (line); `fromSignal` for SIGINT. Returns what it was taken as. */
  protected abstract onInterrupt(fromSignal: boolean): FuseraftInputRole;
  protected abstract onStdinEnd(): void;

  private receive(line: string): void {
    if (this.exiting) return;
    const input = parseInput(line);
    let role: FuseraftInputRole;
    if (input.type === 'interrupt') {
      role = this.scenario.ignoreSignals === true ? 'ignored' : this.onInterrupt(false);
    } else if (this.pending?.kind === 'approval' && input.type !== 'user_input' && input.type !== 'approval_response') {
      // Anything else read while an approval waits is no approval: it counts as a denial.
      role = 'denial';
      this.settlePending(line, 'other-line');
    } else if (input.type === 'approval_response' || input.type === 'question_response') {
      role = this.answer(input);
    } else {
      role = this.onLine(input);
    }
    this.transcript.write({ kind: 'stdin', at: this.lifeline.now(), line, as: role });
  }

  private answer(input: InputLine): FuseraftInputRole {
    const kind = input.type === 'approval_response' ? 'approval' : 'question';
    if (this.pending?.kind !== kind) {
      this.early[kind].push(input.line);
      return 'early-response';
    }
    this.settlePending(input.line, 'response');
    return kind === 'approval' ? 'approval_response' : 'question_response';
  }

  private settlePending(line: string | null, how: 'response' | 'early-response' | 'other-line' | 'end-of-stdin' | 'interrupted'): void {
    const pending = this.pending;
    if (pending === undefined) return;
    this.pending = undefined;
    const object = line === null ? undefined : parseInput(line).object;
    if (pending.kind === 'approval') {
      const approved = object?.['approved'];
      const wellFormed = object?.['type'] === 'approval_response' && typeof approved === 'boolean';
      const verdict = how === 'response' || how === 'early-response' ? (wellFormed ? how : 'malformed') : how;
      pending.settle({ line, approved: wellFormed && approved === true, how: verdict });
    } else {
      const answer = object?.['answer'];
      const wellFormed = object?.['type'] === 'question_response' && (typeof answer === 'string' || answer === null);
      const verdict = how === 'response' || how === 'early-response' ? (wellFormed ? how : 'malformed') : how === 'other-line' ? 'malformed' : how;
      pending.settle({ line, answer: wellFormed ? (answer as string | null) : null, how: verdict });
    }
  }

  /** Writes `approval_request` and resolves with the answer (see {@link FuseraftCommonStep}). */
  protected async askApproval(request: JsonObject): Promise<boolean> {
    const index = this.approvals++;
    this.emit({ type: 'approval_request', ...request });
    const answer = await new Promise<{ line: string | null; approved: boolean; how: FuseraftApprovalEntry['how'] }>((settle) => {
      this.pending = { kind: 'approval', index, request, settle };
      const early = this.early.approval.shift();
      if (early !== undefined) this.settlePending(early, 'early-response');
      else if (this.stdinClosed) this.settlePending(null, 'end-of-stdin');
    });
    this.transcript.write({ kind: 'approval', at: this.lifeline.now(), index, request, ...answer });
    return answer.approved;
  }

  /** Writes `question` and resolves with the answer (null: skipped, malformed, stdin ended or interrupted). */
  protected async askQuestion(request: JsonObject): Promise<string | null> {
    const index = this.questions++;
    this.emit({ type: 'question', ...request });
    const answer = await new Promise<{ line: string | null; answer: string | null; how: FuseraftQuestionEntry['how'] }>((settle) => {
      this.pending = { kind: 'question', index, request, settle };
      const early = this.early.question.shift();
      if (early !== undefined) this.settlePending(early, 'early-response');
      else if (this.stdinClosed) this.settlePending(null, 'end-of-stdin');
    });
    this.transcript.write({ kind: 'question', at: this.lifeline.now(), index, request, ...answer });
    return answer.answer;
  }

  /** An interrupt cancels whatever request is pending: it is recorded with no answering line. */
  protected interruptPending(): void {
    this.settlePending(null, 'interrupted');
  }

  private onSigint(): void {
    const role = this.onInterrupt(true);
    this.transcript.write({ kind: 'signal', at: this.lifeline.now(), signal: 'SIGINT', action: role === 'interrupt' ? 'interrupt' : 'interrupt-idle' });
  }

  // ---- steps both modes run ----------------------------------------------------------------

  /** Runs a common step; false when it was not one. `aborted` ends waits early. */
  protected async commonStep(step: FuseraftCommonStep | object, aborted: AbortSignal): Promise<boolean> {
    if ('pause' in step) {
      await this.pause(step.pause, aborted);
    } else if ('raw' in step) {
      for (const raw of step.raw) this.writeRaw(raw);
    } else if ('grandchildren' in step) {
      for (const report of await spawnGrandchildren({ ...step.grandchildren, ignoreSigint: true })) {
        if (report.pid === undefined) this.note('grandchild failed', { error: report.error ?? 'no pid' });
        else this.note('grandchild', { pid: report.pid, 'own-session?': report.ownSession, 'ready?': report.ready });
      }
    } else if ('hog' in step) {
      const report = await startHog(step.hog);
      this.note('hog', report.pid === undefined ? { error: report.error ?? 'no pid' } : { pid: report.pid, 'ready?': report.ready });
    } else if ('crash' in step) {
      this.quit(step.crash.code ?? 1);
    } else {
      return false;
    }
    return true;
  }

  /** Sleeps `ms`, or less when `signal` aborts. */
  protected async pause(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted || ms <= 0) return;
    try {
      await sleep(ms, undefined, { signal });
    } catch {
      // aborted: the caller looks at the signal
    }
  }

  // ---- output --------------------------------------------------------------------------------

  /** One event: a JSON object on its own line, written whole now. */
  protected emit(event: { type: string } & Record<string, unknown>): void {
    this.write(`${JSON.stringify(event)}\n`, event.type, false);
  }

  protected writeRaw(raw: FuseraftRawLine): void {
    switch (raw.kind) {
      case 'noise':
        return this.write(`${raw.text ?? 'Slash command output leaked to stdout'}\n`, undefined, true);
      case 'unknown-event':
        return this.write(`${JSON.stringify({ type: raw.type ?? 'mystery_event', detail: 'an event type the seed does not list' })}\n`, raw.type ?? 'mystery_event', true);
      case 'unknown-fields':
        return this.write(`${JSON.stringify({ type: 'token', text: raw.text ?? '', ...(raw.fields ?? { xFutureField: { nested: true } }) })}\n`, 'token', true);
      case 'literal':
        return this.write(raw.newline === false ? raw.line : `${raw.line}\n`, undefined, true);
    }
  }

  private write(text: string, type: string | undefined, raw: boolean): void {
    const ok = writeAllSync(1, text);
    this.transcript.write({ kind: 'stdout', at: this.lifeline.now(), text, ...(type === undefined ? {} : { type }), ...(raw ? { raw } : {}) });
    if (!ok) {
      this.note('stdout closed by the reader');
      this.quit(1);
    }
  }

  protected stderr(text: string): void {
    writeAllSync(2, text);
  }

  protected note(what: string, detail?: JsonObject): void {
    this.transcript.write({ kind: 'note', at: this.lifeline.now(), what, ...(detail === undefined ? {} : { detail }) });
  }

  protected quit(code: number): void {
    if (this.exiting) return;
    this.exiting = true;
    this.transcript.write({ kind: 'exit', at: this.lifeline.now(), code });
    process.exit(code);
  }
}

/** fuseraft-like one-line argument summary: `key=value` pairs (strings bare), for `summary` and `argsSummary`. */
export function argsSummary(args: JsonObject): string {
  return Object.entries(args)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ');
}
