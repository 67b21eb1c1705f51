// `fuseraft repl --vscode`: a chat over stdin/stdout JSONL, turns from the scenario, interjections, interrupts.
import type { JsonObject } from '../../wire/index.js';
import { expandText } from '../text.js';
import { FUSERAFT_QUESTIONS_ENV, FUSERAFT_TOOL_OUTPUT_CAP } from './scenario.js';
import type { FuseraftApprovalRequest, FuseraftReplStep, FuseraftTurn } from './scenario.js';
import { argsSummary, FuseraftSession, FUSERAFT_PROTOCOL_VERSION } from './session.js';
import type { InputLine } from './session.js';
import type { FuseraftInputRole } from './transcript.js';


interface ActiveTurn {
  index: number;
  script: FuseraftTurn;
  /** The message that started it, then joined interjections and answers: what `{ echo: true }` repeats. */
  inputs: string[];
  tokens: string;
  toolCalls: string[];
  /** Mid-turn messages not yet joined. */
  queued: string[];
  abort: AbortController;
  /** Ends an `untilInput` pause early. */
  wake?: () => void;
}

/** Cuts text into `pieces` chunks at code point boundaries. */
function chunk(text: string, pieces: number): string[] {
  const points = Array.from(text);
  if (points.length === 0) return [''];
  const size = Math.ceil(points.length / Math.max(1, Math.min(Math.floor(pieces), points.length)));
  const chunks: string[] = [];
  for (let start = 0; start < points.length; start += size) chunks.push(points.slice(start, start + size).join(''));
  return chunks;
}

/** The tool an approved (or denied) request stands for, with its summary. */
function toolOf(request: FuseraftApprovalRequest): { name: string; summary: string } {
  const field = (key: string) => String((request as Record<string, unknown>)[key] ?? '');
  switch (request.kind) {
    case 'shell_command':
      return { name: 'shell_run', summary: field('command') };
    case 'tool_action':
      return { name: field('action'), summary: field('detail') };
    case 'file_write':
      return { name: 'write_file', summary: field('path') };
    default:
      return { name: request.kind, summary: request.kind };
  }
}

export class FuseraftRepl extends FuseraftSession {
  private turn: ActiveTurn | undefined;
  private turnCount = 0;
  private toolCount = 0;
  /** Lines read while a turn ran that fuseraft will take as messages once it is idle again. */
  private readonly later: string[] = [];

  protected async begin(): Promise<void> {
    const scenario = this.scenario;
    this.emit({
      type: 'ready',
      protocolVersion: scenario.protocolVersion ?? FUSERAFT_PROTOCOL_VERSION,
      sessionId: scenario.sessionId ?? `fake-${process.pid}-${this.lifeline.started}`,
      model: scenario.model ?? 'fake-model-1',
      title: null,
      autoTitle: null,
      midTurnCommands: scenario.midTurnCommands ?? ['/compact', '/status'],
    });
  }

  protected onLine(input: InputLine): FuseraftInputRole {
    const text = input.type === 'user_input' && typeof input.object?.['text'] === 'string' ? input.object['text'] : undefined;
    if (this.turn !== undefined) {
      if (text === undefined) {
        this.later.push(input.line);
        return 'message-from-other-line';
      }
      this.turn.queued.push(text);
      this.turn.wake?.();
      return 'interjection';
    }
    // fuseraft takes a line's `text` as the message, or the raw line when it has none.
    const message = typeof input.object?.['text'] === 'string' ? input.object['text'] : input.line;
    void this.runTurn(message, false);
    return text === undefined ? 'message-from-other-line' : 'user_input';
  }

  protected onInterrupt(fromSignal: boolean): FuseraftInputRole {
    if (this.turn !== undefined) {
      this.turn.abort.abort();
      this.interruptPending();
      return 'interrupt';
    }
    // Idle: fuseraft acknowledges SIGINT with `cancelled` (so a client re-enables its input), and drops a stale interrupt line.
    if (fromSignal) this.emit({ type: 'cancelled' });
    return 'interrupt-idle';
  }

  protected onStdinEnd(): void {
    if (this.turn === undefined) this.endSession();
  }

  private endSession(): void {
    // A repl whose shutdown hangs: it never says session_end and stays until a signal (or SIGKILL) ends it.
    if (this.scenario.ignoreStdinEnd === true) return this.note('end of stdin ignored');
    this.emit({ type: 'session_end' });
    this.quit(0);
  }

  // ---- turns ---------------------------------------------------------------------------------

  private scriptFor(index: number): FuseraftTurn {
    const turns = this.scenario.turns ?? [];
    return turns[Math.min(index, turns.length - 1)] ?? { steps: [{ token: { echo: true } }] };
  }

  private async runTurn(message: string, carried: boolean): Promise<void> {
    const index = this.turnCount++;
    const turn: ActiveTurn = {
      index,
      script: this.scriptFor(index),
      inputs: [message],
      tokens: '',
      toolCalls: [],
      queued: [],
      abort: new AbortController(),
    };
    this.turn = turn;
    this.emit({ type: 'turn_start', text: carried ? message : null });
    for (const step of turn.script.steps ?? []) {
      if (turn.abort.signal.aborted || this.exiting) break;
      await this.runStep(turn, step);
    }
    if (this.exiting) return;
    if (turn.abort.signal.aborted) {
      this.settleQueued(turn, 'dropped');
      this.emit({ type: 'cancelled' });
    } else if (turn.script.error !== undefined) {
      this.settleQueued(turn, 'dropped');
      this.emit({ type: 'error', text: turn.script.error });
    } else {
      const carriedOver = turn.script.interjections === 'dropped' ? [] : [...turn.queued];
      this.settleQueued(turn, turn.script.interjections === 'dropped' ? 'dropped' : 'carried');
      const usage = turn.script.usage ?? { inputTokens: 1200 * (index + 1), outputTokens: Math.ceil(turn.tokens.length / 4) };
      this.emit({ type: 'message_end', turnIndex: index, toolCalls: turn.toolCalls, ...usage });
      if (carriedOver.length > 0) {
        this.turn = undefined;
        return this.runTurn(carriedOver.join('\n'), true);
      }
    }
    this.turn = undefined;
    const next = this.later.shift();
    if (next !== undefined) return this.runTurn(next, false);
    if (this.stdinClosed) this.endSession();
  }

  /** Emits `interjection` for the queued mid-turn messages (joined, carried or dropped) and clears them. */
  private settleQueued(turn: ActiveTurn, status: 'joined' | 'carried' | 'dropped'): void {
    if (turn.queued.length === 0) return;
    const count = turn.queued.length;
    if (status === 'joined') turn.inputs.push(...turn.queued);
    turn.queued = [];
    this.emit({ type: 'interjection', status, count });
  }

  /** A point where queued messages join the turn (after a tool result, a pause, an answered prompt). */
  private boundary(turn: ActiveTurn): void {
    if (turn.abort.signal.aborted) return;
    this.settleQueued(turn, turn.script.interjections === 'dropped' ? 'dropped' : 'joined');
  }

  private async runStep(turn: ActiveTurn, step: FuseraftReplStep): Promise<void> {
    const signal = turn.abort.signal;
    if ('token' in step || 'thinking' in step) {
      const isToken = 'token' in step;
      const text = expandText(isToken ? step.token : step.thinking, turn.inputs.join(' / '));
      const pieces = chunk(text, step.chunks ?? 1);
      for (const [position, piece] of pieces.entries()) {
        if (position > 0 && step.ms !== undefined) await this.pause(step.ms / pieces.length, signal);
        if (signal.aborted || this.exiting) return;
        if (isToken) turn.tokens += piece;
        this.emit({ type: isToken ? 'token' : 'thinking', text: piece });
      }
    } else if ('tool' in step) {
      await this.runTool(turn, step.tool, step.args, step.summary, step.durationMs ?? 0, () =>
        ({ ok: step.ok ?? true, output: step.output === undefined ? '' : expandText(step.output, turn.inputs[0]) }));
    } else if ('retrying' in step) {
      this.emit({ type: 'retrying', attempt: step.retrying.attempt ?? 1, max: step.retrying.max ?? 2 });
    } else if ('question' in step) {
      if (process.env[FUSERAFT_QUESTIONS_ENV] !== '1') return this.note('question skipped: the client did not set FUSERAFT_VSCODE_QUESTIONS=1');
      const { question, options = [], allowOther = true } = step.question;
      const answer = await this.askQuestion({ question, options, allowOther });
      turn.inputs.push(`answer: ${answer ?? '(skipped)'}`);
      this.boundary(turn);
    } else if ('approval' in step) {
      // The model calls the tool; the gate inside the tool asks; the result says what happened.
      const tool = toolOf(step.approval);
      let approved = false;
      await this.runTool(turn, tool.name, undefined, tool.summary, 0, async () => {
        approved = await this.askApproval(step.approval as JsonObject);
        return approved ? { ok: true, output: `ran: ${tool.summary}` } : { ok: false, output: 'Denied by user.' };
      });
      turn.inputs.push(`${tool.name} ${approved ? 'approved' : 'denied'}`);
    } else if ('pause' in step && step.untilInput === true) {
      // The pause ends at its time, at the turn's abort, or when a mid-turn message arrives.
      const ends = new AbortController();
      const end = () => ends.abort();
      signal.addEventListener('abort', end, { once: true });
      turn.wake = end;
      if (turn.queued.length === 0) await this.pause(step.pause, ends.signal);
      signal.removeEventListener('abort', end);
      turn.wake = undefined;
      if (step.join !== false) this.boundary(turn);
    } else {
      await this.commonStep(step, signal);
      if ('pause' in step && step.join !== false) this.boundary(turn);
    }
  }

  private async runTool(
    turn: ActiveTurn,
    name: string,
    args: JsonObject | undefined,
    summary: string | undefined,
    durationMs: number,
    result: () => { ok: boolean; output: string } | Promise<{ ok: boolean; output: string }>,
  ): Promise<void> {
    const id = `call_${(this.toolCount += 1)}`;
    turn.toolCalls.push(name);
    this.emit({ type: 'tool_call', id, name, summary: summary ?? argsSummary(args ?? {}), ...(args === undefined ? {} : { args }) });
    await this.pause(durationMs, turn.abort.signal);
    if (turn.abort.signal.aborted) return;
    const { ok, output } = await result();
    if (turn.abort.signal.aborted || this.exiting) return;
    this.emit({ type: 'tool_result', id, name, ok, output: output.slice(0, FUSERAFT_TOOL_OUTPUT_CAP) });
    this.boundary(turn);
  }
}
